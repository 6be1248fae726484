// Copyright 2026 The zero3 Authors.
//
// token_stream.h: token ids stored in a file, read in place.
//
// A TokenStream is a run of little-endian integer token ids inside a mapped
// file (a flat .bin file, or a Megatron .bin's documents): Read converts a
// range to int32 and checks each id against the model's vocabulary as it
// goes, so ids are checked exactly when a sample is taken and the file is
// never read more than once per sample. Immutable; Read is thread-safe.

#ifndef ZERO3_CORE_MODEL_TOKEN_STREAM_H_
#define ZERO3_CORE_MODEL_TOKEN_STREAM_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/util/mapped_file.h"

namespace zero3 {
namespace model {

// The integer types token ids are stored as (Megatron's integer codes plus
// uint32).
enum class TokenDType {
  kUint8,
  kInt8,
  kInt16,
  kUint16,
  kInt32,
  kUint32,
  kInt64
};

int TokenDTypeBytes(TokenDType dtype);
absl::string_view TokenDTypeName(TokenDType dtype);

// --data-dtype's values: uint16 or uint32; anything else is an error that
// names the value.
absl::StatusOr<TokenDType> ParseTokenDType(absl::string_view name);

// uint16 when every id of a `vocab`-token vocabulary fits in 16 bits, else
// uint32.
TokenDType DefaultTokenDType(int64_t vocab);

class TokenStream {
 public:
  // `tokens` ids of `dtype` starting at byte `first_byte` of `file`, which
  // must hold them (ZR_CHECK).
  TokenStream(std::shared_ptr<const MappedFile> file, int64_t first_byte,
              int64_t tokens, TokenDType dtype);

  const std::string& path() const { return file_->path(); }
  int64_t tokens() const { return tokens_; }
  TokenDType dtype() const { return dtype_; }

  // Writes ids [first, first + count) as int32 into `out`. An id outside
  // [0, vocab) is an error naming the file, the id and its byte offset.
  absl::Status Read(int64_t first, int64_t count, int64_t vocab,
                    int32_t* out) const;

 private:
  std::shared_ptr<const MappedFile> file_;
  int64_t first_byte_;
  int64_t tokens_;
  TokenDType dtype_;
};

// A flat file of `dtype` ids (nanoGPT's .bin). Errors naming the file: it
// cannot be opened, is empty, or its size is not a multiple of the id size.
absl::StatusOr<TokenStream> OpenFlatTokens(const std::string& path,
                                           TokenDType dtype);

}  // namespace model
}  // namespace zero3

#endif  // ZERO3_CORE_MODEL_TOKEN_STREAM_H_
