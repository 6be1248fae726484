// Copyright 2026 The zero3 Authors.

#include "core/model/data_file.h"

#include <sys/stat.h>

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/model/document_batches.h"
#include "core/model/megatron_index.h"
#include "core/model/token_batches.h"
#include "core/model/token_stream.h"
#include "core/util/mapped_file.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace model {
namespace {

// Bytes sniffed to tell text from token ids.
constexpr int64_t kSniffBytes = 4096;

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string StripSuffix(const std::string& s, const std::string& suffix) {
  return s.substr(0, s.size() - suffix.size());
}

// The Megatron prefix `path` names, or "" if it names none.
std::string MegatronPrefix(const std::string& path) {
  if (absl::EndsWith(path, ".idx")) return StripSuffix(path, ".idx");
  if (absl::EndsWith(path, ".bin")) {
    const std::string prefix = StripSuffix(path, ".bin");
    return Exists(prefix + ".idx") ? prefix : "";
  }
  if (!Exists(path) && Exists(path + ".idx")) return path;
  return "";
}

// True if the file's first bytes are all printable ASCII, whitespace or
// UTF-8 (token ids of any real vocabulary give control bytes at once).
absl::StatusOr<bool> LooksLikeText(const std::string& path) {
  ZR_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  const int64_t n = std::min(file.size(), kSniffBytes);
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t c = file.data()[i];
    const bool text =
        c == '\t' || c == '\n' || c == '\r' || (c >= 0x20 && c != 0x7f);
    if (!text) return false;
  }
  return n > 0;
}

// One example per sample, or a stream, as `o.packing` and the mask say.
absl::StatusOr<bool> UseDocuments(const std::string& prefix,
                                  const DataFileOptions& o) {
  const bool mask = Exists(LossMaskPath(prefix));
  switch (o.packing) {
    case DataPacking::kDefault:
      return mask;
    case DataPacking::kStream:
      return false;
    case DataPacking::kPad:
    case DataPacking::kPack:
      if (mask) return true;
      return absl::InvalidArgumentError(absl::StrCat(
          "--data-packing pad and pack train on the examples of a loss mask, "
          "and ",
          LossMaskPath(prefix),
          " does not exist: write the data with tools/data/prepare, or drop "
          "--data-packing to train on every token as one stream"));
  }
  return false;
}

// A --data-dtype must agree with the index's.
absl::Status CheckIndexDType(const std::string& prefix,
                             const DataFileOptions& o) {
  if (o.dtype.empty()) return absl::OkStatus();
  ZR_ASSIGN_OR_RETURN(MegatronIndex index, ReadMegatronIndex(prefix + ".idx"));
  ZR_ASSIGN_OR_RETURN(TokenDType dtype, ParseTokenDType(o.dtype));
  if (dtype == index.dtype) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--data-dtype ", o.dtype, " disagrees with ", prefix,
                   ".idx, which stores ", TokenDTypeName(index.dtype),
                   " ids; drop --data-dtype (the index gives the dtype)"));
}

absl::StatusOr<std::unique_ptr<BatchSource>> OpenMegatron(
    const std::string& prefix, const DataFileOptions& o) {
  ZR_RETURN_IF_ERROR(CheckIndexDType(prefix, o));
  ZR_ASSIGN_OR_RETURN(const bool documents, UseDocuments(prefix, o));
  if (documents) {
    DocumentOptions d;
    d.vocab = o.vocab;
    d.seq = o.seq;
    d.seed = o.seed;
    d.shuffle = o.shuffle;
    d.truncate = o.truncate;
    d.pack = o.packing == DataPacking::kPack;
    return DocumentBatches(prefix, d);
  }
  ZR_ASSIGN_OR_RETURN(TokenStream stream, OpenMegatronTokens(prefix));
  return TokenBatches(std::move(stream), o.vocab, o.seq, o.seed, o.shuffle);
}

absl::StatusOr<std::unique_ptr<BatchSource>> OpenFlat(
    const std::string& path, const DataFileOptions& o) {
  TokenDType dtype = DefaultTokenDType(o.vocab);
  if (!o.dtype.empty()) {
    ZR_ASSIGN_OR_RETURN(dtype, ParseTokenDType(o.dtype));
    if (!absl::EndsWith(path, ".bin")) {
      ZR_ASSIGN_OR_RETURN(const bool text, LooksLikeText(path));
      if (text) {
        return absl::InvalidArgumentError(absl::StrCat(
            path,
            " looks like text (its first bytes are all printable), "
            "not ",
            o.dtype,
            " token ids: drop --data-dtype to train "
            "on its bytes, or name a token file .bin"));
      }
    }
  }
  ZR_ASSIGN_OR_RETURN(TokenStream stream, OpenFlatTokens(path, dtype));
  return TokenBatches(std::move(stream), o.vocab, o.seq, o.seed, o.shuffle);
}

}  // namespace

absl::StatusOr<DataPacking> ParseDataPacking(const std::string& name) {
  if (name == "pad") return DataPacking::kPad;
  if (name == "pack") return DataPacking::kPack;
  if (name == "stream") return DataPacking::kStream;
  return absl::InvalidArgumentError(absl::StrCat(
      "--data-packing ", name,
      " is not one of pad (one example per sample, padded; the default "
      "where PREFIX.loss_mask.bin exists), pack (several examples per "
      "sample, each attending only to itself) or stream (the documents as "
      "one stream of tokens, every token predicted)"));
}

absl::StatusOr<std::unique_ptr<BatchSource>> OpenDataFile(
    const std::string& path, const DataFileOptions& options) {
  const std::string prefix = MegatronPrefix(path);
  if (!prefix.empty()) return OpenMegatron(prefix, options);
  if (options.packing == DataPacking::kPad ||
      options.packing == DataPacking::kPack) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--data-packing pad and pack take a Megatron prefix with a loss mask; ",
        path, " is not one (write it with tools/data/prepare)"));
  }
  if (absl::EndsWith(path, ".bin") || !options.dtype.empty()) {
    return OpenFlat(path, options);
  }
  if (!options.shuffle) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--data-in-order applies to token files; ", path,
        " is read as text (name it .bin or give --data-dtype if it holds "
        "token ids)"));
  }
  return TextBatches(path, options.seq, options.seed);
}

}  // namespace model
}  // namespace zero3
