// Copyright 2026 The zero3 Authors.

#include "core/model/token_stream.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/util/check.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace model {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "token files are little-endian and read in place");

// One id of `dtype` at `p`, widened.
int64_t LoadId(const uint8_t* p, TokenDType dtype) {
  auto load = [p](auto v) {
    std::memcpy(&v, p, sizeof(v));
    return static_cast<int64_t>(v);
  };
  switch (dtype) {
    case TokenDType::kUint8:
      return load(uint8_t{0});
    case TokenDType::kInt8:
      return load(int8_t{0});
    case TokenDType::kInt16:
      return load(int16_t{0});
    case TokenDType::kUint16:
      return load(uint16_t{0});
    case TokenDType::kInt32:
      return load(int32_t{0});
    case TokenDType::kUint32:
      return load(uint32_t{0});
    case TokenDType::kInt64:
      return load(int64_t{0});
  }
  return -1;
}

}  // namespace

int TokenDTypeBytes(TokenDType dtype) {
  switch (dtype) {
    case TokenDType::kUint8:
    case TokenDType::kInt8:
      return 1;
    case TokenDType::kInt16:
    case TokenDType::kUint16:
      return 2;
    case TokenDType::kInt32:
    case TokenDType::kUint32:
      return 4;
    case TokenDType::kInt64:
      return 8;
  }
  return 0;
}

absl::string_view TokenDTypeName(TokenDType dtype) {
  switch (dtype) {
    case TokenDType::kUint8:
      return "uint8";
    case TokenDType::kInt8:
      return "int8";
    case TokenDType::kInt16:
      return "int16";
    case TokenDType::kUint16:
      return "uint16";
    case TokenDType::kInt32:
      return "int32";
    case TokenDType::kUint32:
      return "uint32";
    case TokenDType::kInt64:
      return "int64";
  }
  return "?";
}

absl::StatusOr<TokenDType> ParseTokenDType(absl::string_view name) {
  if (name == "uint16") return TokenDType::kUint16;
  if (name == "uint32") return TokenDType::kUint32;
  return absl::InvalidArgumentError(
      absl::StrCat("--data-dtype must be uint16 or uint32, got '", name, "'"));
}

TokenDType DefaultTokenDType(int64_t vocab) {
  return vocab <= 65536 ? TokenDType::kUint16 : TokenDType::kUint32;
}

TokenStream::TokenStream(std::shared_ptr<const MappedFile> file,
                         int64_t first_byte, int64_t tokens, TokenDType dtype)
    : file_(std::move(file)),
      first_byte_(first_byte),
      tokens_(tokens),
      dtype_(dtype) {
  ZR_CHECK(file_ != nullptr);
  ZR_CHECK(first_byte >= 0 && tokens >= 0);
  ZR_CHECK_LE(first_byte + tokens * TokenDTypeBytes(dtype), file_->size());
}

absl::Status TokenStream::Read(int64_t first, int64_t count, int64_t vocab,
                               int32_t* out) const {
  ZR_CHECK(first >= 0 && count >= 0 && first + count <= tokens_);
  const int64_t bytes = TokenDTypeBytes(dtype_);
  const int64_t offset = first_byte_ + first * bytes;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t id = LoadId(file_->data() + offset + i * bytes, dtype_);
    if (id < 0 || id >= vocab) {
      return absl::InvalidArgumentError(absl::StrCat(
          path(), ": token id ", id, " at byte offset ", offset + i * bytes,
          " is outside the model's vocabulary [0, ", vocab, ") (read as ",
          TokenDTypeName(dtype_),
          "); tokenize for this model's vocabulary, or check --data-dtype"));
    }
    out[i] = static_cast<int32_t>(id);
  }
  return absl::OkStatus();
}

absl::StatusOr<TokenStream> OpenFlatTokens(const std::string& path,
                                           TokenDType dtype) {
  ZR_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  const int64_t size = file.size();
  const int bytes = TokenDTypeBytes(dtype);
  if (size == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("token file ", path, " is empty"));
  }
  if (size % bytes != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "token file ", path, " has ", size, " bytes, not a whole number of ",
        TokenDTypeName(dtype), " ids (", bytes,
        " bytes each); is --data-dtype right for this file?"));
  }
  return TokenStream(std::make_shared<const MappedFile>(std::move(file)), 0,
                     size / bytes, dtype);
}

}  // namespace model
}  // namespace zero3
