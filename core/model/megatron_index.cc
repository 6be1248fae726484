// Copyright 2026 The zero3 Authors.

#include "core/model/megatron_index.h"

#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/util/mapped_file.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace model {
namespace {

constexpr char kMagic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', 0, 0};
constexpr int64_t kHeaderBytes = 9 + 8 + 1 + 8 + 8;

template <typename T>
T At(const uint8_t* p, int64_t offset) {
  T v;
  std::memcpy(&v, p + offset, sizeof(T));
  return v;
}

// Megatron's integer dtype codes (6 and 7 are float64 and float32).
constexpr struct {
  int code;
  TokenDType dtype;
} kCodes[] = {{1, TokenDType::kUint8}, {2, TokenDType::kInt8},
              {3, TokenDType::kInt16}, {4, TokenDType::kInt32},
              {5, TokenDType::kInt64}, {8, TokenDType::kUint16}};

absl::Status Invalid(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, " is not a valid Megatron index: ", what));
}

// Checks the lengths, the pointers (sequences stored one after another)
// and the document indices, filling `index`.
absl::Status CheckTables(const std::string& path, const uint8_t* p,
                         MegatronIndex* index) {
  const int64_t n = index->sequences;
  const int64_t d = index->documents + 1;
  const int64_t bytes = TokenDTypeBytes(index->dtype);
  const int64_t lengths = kHeaderBytes;
  const int64_t pointers = lengths + 4 * n;
  const int64_t docs = pointers + 8 * n;
  index->first_byte = n > 0 ? At<int64_t>(p, pointers) : 0;
  if (index->first_byte < 0) {
    return Invalid(
        path, absl::StrCat("sequence 0 starts at byte ", index->first_byte));
  }
  int64_t expected = index->first_byte;
  index->sequence_starts.assign(1, 0);
  index->sequence_starts.reserve(n + 1);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t len = At<int32_t>(p, lengths + 4 * i);
    const int64_t ptr = At<int64_t>(p, pointers + 8 * i);
    if (len < 0) {
      return Invalid(path, absl::StrCat("sequence ", i, " has length ", len));
    }
    if (ptr != expected) {
      return Invalid(
          path, absl::StrCat("sequence ", i, " starts at byte ", ptr,
                             " of the .bin, not right after sequence ", i - 1,
                             " (byte ", expected,
                             "); only contiguous files are supported"));
    }
    expected += len * bytes;
    index->sequence_starts.push_back((expected - index->first_byte) / bytes);
  }
  index->tokens = (expected - index->first_byte) / bytes;
  int64_t previous = 0;
  for (int64_t j = 0; j < d; ++j) {
    const int64_t s = At<int64_t>(p, docs + 8 * j);
    const bool ok = j == 0 ? s == 0 : (s >= previous && s <= n);
    if (!ok || (j == d - 1 && s != n)) {
      return Invalid(path, absl::StrCat("document index ", j, " is ", s,
                                        "; they must rise from 0 to the "
                                        "sequence count ",
                                        n));
    }
    previous = s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TokenDType> MegatronDType(const std::string& path, int code) {
  for (const auto& c : kCodes) {
    if (c.code == code) return c.dtype;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      path, ": dtype code ", code,
      code == 6 || code == 7 ? " is a floating-point type, not token ids"
                             : " is not one of Megatron's (1-8)",
      "; token ids are uint8, int8, int16, int32, int64 or uint16"));
}

int MegatronCode(TokenDType dtype) {
  for (const auto& c : kCodes) {
    if (c.dtype == dtype) return c.code;
  }
  return 0;
}

absl::StatusOr<MegatronIndex> ReadMegatronIndex(const std::string& idx_path) {
  ZR_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(idx_path));
  const uint8_t* p = file.data();
  if (file.size() < kHeaderBytes) {
    return Invalid(
        idx_path, absl::StrCat("it has ", file.size(), " bytes, less than the ",
                               kHeaderBytes, "-byte header"));
  }
  if (std::memcmp(p, kMagic, sizeof(kMagic)) != 0) {
    return Invalid(idx_path, "its first 9 bytes are not MMIDIDX\\0\\0");
  }
  const uint64_t version = At<uint64_t>(p, 9);
  if (version != 1) {
    return Invalid(idx_path, absl::StrCat("version ", version,
                                          "; only version 1 is read"));
  }
  MegatronIndex index;
  ZR_ASSIGN_OR_RETURN(index.dtype, MegatronDType(idx_path, At<uint8_t>(p, 17)));
  const uint64_t n = At<uint64_t>(p, 18);
  const uint64_t d = At<uint64_t>(p, 26);
  // The tables need 12 n + 8 d bytes after the header; compare without
  // overflowing on absurd counts.
  const uint64_t room = static_cast<uint64_t>(file.size() - kHeaderBytes);
  if (n > room / 12 || d > room / 8 || 12 * n + 8 * d > room) {
    return Invalid(
        idx_path,
        absl::StrCat("it has ", file.size(), " bytes, too few for ", n,
                     " sequences and ", d, " document indices (truncated?)"));
  }
  if (d < 1) return Invalid(idx_path, "it has no document indices");
  index.sequences = static_cast<int64_t>(n);
  index.documents = static_cast<int64_t>(d) - 1;
  ZR_RETURN_IF_ERROR(CheckTables(idx_path, p, &index));
  return index;
}

absl::StatusOr<TokenStream> OpenMegatronTokens(const std::string& prefix,
                                               MegatronIndex* index_out) {
  const std::string idx_path = prefix + ".idx";
  const std::string bin_path = prefix + ".bin";
  ZR_ASSIGN_OR_RETURN(MegatronIndex index, ReadMegatronIndex(idx_path));
  absl::StatusOr<MappedFile> bin = MappedFile::Open(bin_path);
  if (!bin.ok()) {
    return absl::NotFoundError(absl::StrCat(
        "Megatron dataset ", prefix, ": cannot open its data file ", bin_path,
        " (", bin.status().message(), "); the .idx needs the .bin beside it"));
  }
  const int64_t end =
      index.first_byte + index.tokens * TokenDTypeBytes(index.dtype);
  if (bin->size() < end) {
    return absl::InvalidArgumentError(
        absl::StrCat(bin_path, " has ", bin->size(), " bytes; its index ",
                     idx_path, " places ", index.tokens, " tokens up to byte ",
                     end, " (truncated, or the .idx of another file?)"));
  }
  if (index.tokens == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Megatron dataset ", prefix, " holds no tokens"));
  }
  TokenStream stream(std::make_shared<const MappedFile>(std::move(*bin)),
                     index.first_byte, index.tokens, index.dtype);
  if (index_out != nullptr) *index_out = std::move(index);
  return stream;
}

}  // namespace model
}  // namespace zero3
