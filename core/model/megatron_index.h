// Copyright 2026 The zero3 Authors.
//
// megatron_index.h: Megatron-LM's indexed datasets (PREFIX.bin + PREFIX.idx,
// "MMIDIDX" version 1).
//
// The .idx file holds, little-endian: the 9-byte magic "MMIDIDX\0\0", a
// uint64 version (1), a uint8 dtype code (1 uint8, 2 int8, 3 int16, 4 int32,
// 5 int64, 6 float64, 7 float32, 8 uint16), a uint64 sequence count n, a
// uint64 document-index count d, then int32 sequence lengths [n], int64
// byte pointers of the sequences into the .bin [n], and int64 document
// indices [d]: the sequence each document starts at, from 0 to n (so d - 1
// documents); multimodal files append int8 sequence modes [n]. The .bin
// holds the sequences' token ids. Megatron's builder writes the sequences
// one after another, which is what is read here: the documents in file
// order as one stream of tokens.

#ifndef ZERO3_CORE_MODEL_MEGATRON_INDEX_H_
#define ZERO3_CORE_MODEL_MEGATRON_INDEX_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/model/token_stream.h"

namespace zero3 {
namespace model {

// What an .idx file says about its .bin.
struct MegatronIndex {
  TokenDType dtype = TokenDType::kUint16;
  int64_t sequences = 0;
  int64_t documents = 0;
  int64_t first_byte = 0;  // where sequence 0 starts in the .bin
  int64_t tokens = 0;      // in all sequences together
  // Token offset of each sequence in the stream, and `tokens` last
  // (sequences + 1 entries, rising).
  std::vector<int64_t> sequence_starts;
};

// The dtype of Megatron's dtype `code`; a float or unknown code is an
// error naming `path` and the code.
absl::StatusOr<TokenDType> MegatronDType(const std::string& path, int code);
// Megatron's code for `dtype`, or 0 if it has none (uint32).
int MegatronCode(TokenDType dtype);

// Reads and checks `idx_path`. Errors name the file and what is wrong: bad
// magic or version, a float or unknown dtype code, counts past the end of
// the file, negative lengths, document indices that are not 0..n in order,
// or sequences that are not stored one after another.
absl::StatusOr<MegatronIndex> ReadMegatronIndex(const std::string& idx_path);

// PREFIX.bin's documents as one stream, as PREFIX.idx describes them. A
// missing .bin, or one shorter than the index says, is an error naming it.
// `index`, if given, receives what the .idx says.
absl::StatusOr<TokenStream> OpenMegatronTokens(const std::string& prefix,
                                               MegatronIndex* index = nullptr);

}  // namespace model
}  // namespace zero3

#endif  // ZERO3_CORE_MODEL_MEGATRON_INDEX_H_
