// Copyright 2026 The zero3 Authors.
//
// data_file.h: which kind of data a --data FILE is, and its samples.
//
// The rule (docs/data.md):
//   - PREFIX.idx, a .bin with a .idx beside it, or a PREFIX whose .bin and
//     .idx exist: a Megatron indexed dataset (megatron_index.h); its dtype is
//     the index's, and a --data-dtype that differs is an error. With
//     PREFIX.loss_mask.bin beside it, its examples one per sample, trained
//     on their predicted tokens only (document_batches.h); without, one
//     stream of tokens.
//   - any other .bin, or any file given a dtype: flat token ids of the given
//     dtype, or by default uint16 when the vocabulary fits in 16 bits, else
//     uint32 (token_stream.h). A file not named .bin that is given a dtype
//     but looks like text (printable bytes only) is an error.
//   - anything else: a text file read as bytes (TextBatches), as before.

#ifndef ZERO3_CORE_MODEL_DATA_FILE_H_
#define ZERO3_CORE_MODEL_DATA_FILE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/model/data.h"

namespace zero3 {
namespace model {

// How a Megatron dataset's documents become samples.
enum class DataPacking {
  kDefault,  // one example per sample where a loss mask exists, else a stream
  kPad,      // one example per sample, padded (needs the loss mask)
  kPack,     // several examples per sample, each attending only to itself
  kStream,   // the documents as one stream, every token predicted
};

// The packing `name` names ("pad", "pack", "stream"); an error naming the
// value and the choices for another.
absl::StatusOr<DataPacking> ParseDataPacking(const std::string& name);

struct DataFileOptions {
  std::string dtype;    // --data-dtype: "", uint16 or uint32
  int64_t vocab = 0;    // the model's vocabulary
  int64_t seq = 1;      // tokens per sequence
  uint64_t seed = 0;    // the sample order (token files) or windows (text)
  bool shuffle = true;  // token files: false takes samples in file order
  DataPacking packing = DataPacking::kDefault;
  bool truncate = true;  // examples longer than seq + 1: false is an error
};

// The samples of `path` by the rule above. Errors name the file and the fix.
absl::StatusOr<std::unique_ptr<BatchSource>> OpenDataFile(
    const std::string& path, const DataFileOptions& options);

}  // namespace model
}  // namespace zero3

#endif  // ZERO3_CORE_MODEL_DATA_FILE_H_
