// Copyright 2026 The zero3 Authors.

#include "core/model/token_file_writer.h"

#include <fstream>
#include <sstream>

#include "core/model/megatron_index.h"
#include "core/util/check.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace model {
namespace {

template <typename T>
void Append(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(T));
}

}  // namespace

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/" + name;
}

std::string ReadFileBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string TokenBytes(const std::vector<int64_t>& ids, TokenDType dtype) {
  std::string out;
  for (int64_t id : ids) {
    switch (TokenDTypeBytes(dtype)) {
      case 1:
        Append(&out, static_cast<uint8_t>(id));
        break;
      case 2:
        Append(&out, static_cast<uint16_t>(id));
        break;
      case 4:
        Append(&out, static_cast<uint32_t>(id));
        break;
      default:
        Append(&out, static_cast<uint64_t>(id));
    }
  }
  return out;
}

void WriteFileBytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  ZR_CHECK(f.good()) << "cannot write " << path;
}

void WriteMegatronDataset(const std::string& prefix,
                          const std::vector<std::vector<int64_t>>& documents,
                          TokenDType dtype) {
  std::string bin, idx("MMIDIDX\0\0", 9);
  Append<uint64_t>(&idx, 1);
  const int code = MegatronCode(dtype);
  ZR_CHECK_NE(code, 0) << "Megatron has no code for " << TokenDTypeName(dtype);
  Append<uint8_t>(&idx, static_cast<uint8_t>(code));
  Append<uint64_t>(&idx, documents.size());
  Append<uint64_t>(&idx, documents.size() + 1);
  for (const auto& doc : documents) {
    Append<int32_t>(&idx, static_cast<int32_t>(doc.size()));
  }
  for (const auto& doc : documents) {
    Append<int64_t>(&idx, static_cast<int64_t>(bin.size()));
    bin += TokenBytes(doc, dtype);
  }
  for (size_t d = 0; d <= documents.size(); ++d) {
    Append<int64_t>(&idx, static_cast<int64_t>(d));
  }
  WriteFileBytes(prefix + ".bin", bin);
  WriteFileBytes(prefix + ".idx", idx);
}

}  // namespace model
}  // namespace zero3
