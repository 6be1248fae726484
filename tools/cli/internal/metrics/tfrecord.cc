// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/metrics/tfrecord.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "core/util/crc32c.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace metrics {
namespace {

void PutLittleEndian(uint64_t value, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) {
    out->push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
  }
}

uint64_t GetLittleEndian(absl::string_view bytes) {
  uint64_t value = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    value |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i]))
             << (8 * i);
  }
  return value;
}

}  // namespace

std::string FrameRecord(absl::string_view data) {
  std::string out;
  out.reserve(data.size() + 16);
  PutLittleEndian(data.size(), 8, &out);
  PutLittleEndian(MaskCrc32c(Crc32c(out)), 4, &out);
  out.append(data.data(), data.size());
  PutLittleEndian(MaskCrc32c(Crc32c(data)), 4, &out);
  return out;
}

absl::StatusOr<std::vector<std::string>> ReadRecords(absl::string_view bytes,
                                                     absl::string_view name) {
  std::vector<std::string> records;
  size_t at = 0;
  while (at < bytes.size()) {
    auto error = [&](absl::string_view what) {
      return absl::DataLossError(absl::StrCat(name, ": record ", records.size(),
                                              " at byte ", at, ": ", what));
    };
    if (bytes.size() - at < 12) return error("truncated length");
    const absl::string_view length_bytes = bytes.substr(at, 8);
    if (GetLittleEndian(bytes.substr(at + 8, 4)) !=
        MaskCrc32c(Crc32c(length_bytes))) {
      return error("length CRC mismatch");
    }
    const uint64_t length = GetLittleEndian(length_bytes);
    if (length > bytes.size() - at - 12 ||
        bytes.size() - at - 12 - length < 4) {
      return error(absl::StrCat("truncated data (length ", length, ")"));
    }
    const absl::string_view data = bytes.substr(at + 12, length);
    if (GetLittleEndian(bytes.substr(at + 12 + length, 4)) !=
        MaskCrc32c(Crc32c(data))) {
      return error("data CRC mismatch");
    }
    records.emplace_back(data);
    at += 16 + length;
  }
  return records;
}

}  // namespace metrics
}  // namespace internal
}  // namespace cli
}  // namespace zero3
