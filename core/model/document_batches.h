// Copyright 2026 The zero3 Authors.
//
// document_batches.h: fine-tuning samples, one document each, from a
// Megatron dataset whose sequences are examples and a loss mask that says
// which of their tokens are predicted.
//
// tools/data/prepare writes PREFIX.bin + PREFIX.idx (one sequence per
// example) and PREFIX.loss_mask.bin: one byte per token of the .bin, in the
// same order, 1 where the token is predicted (an assistant's answer, a
// completion) and 0 where it is not (system, user, prompt). Sample k of an
// epoch is example order(k) padded to the sequence length (or, packed,
// several examples; DocumentOptions::pack): input i is token
// i, its target token i + 1 where that token is predicted, else -1; the
// positions after the example hold token 0 with target -1 (causal
// attention keeps them from the example's own positions). An example longer
// than seq + 1 tokens keeps its first seq + 1, or is an error when
// truncation is refused. Immutable after construction (but for
// SetPosition); Fill is thread-safe.

#ifndef ZERO3_CORE_MODEL_DOCUMENT_BATCHES_H_
#define ZERO3_CORE_MODEL_DOCUMENT_BATCHES_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/model/data.h"

namespace zero3 {
namespace model {

// The loss mask that goes with Megatron prefix `prefix`.
std::string LossMaskPath(const std::string& prefix);

struct DocumentOptions {
  int64_t vocab = 0;
  int64_t seq = 1;
  uint64_t seed = 0;
  bool shuffle = true;
  bool truncate = true;  // false: an example longer than seq + 1 is an error
  // Several examples per sample, in file order while they fit, each
  // attending only to itself with positions from 0 (BatchSource::packs);
  // the samples' order is then shuffled.
  bool pack = false;
};

// The examples of `prefix` (its .bin, .idx and loss mask). Errors name the
// file and the fix: a mask whose size is not the .bin's token count, a mask
// that predicts nothing, no examples, or (without truncation) an example
// longer than seq + 1 tokens, truncation to seq + 1 tokens that leaves no
// predicted token, or a mask byte other than 0 and 1 (naming its offset).
// The whole mask is read once here.
absl::StatusOr<std::unique_ptr<BatchSource>> DocumentBatches(
    const std::string& prefix, const DocumentOptions& options);

}  // namespace model
}  // namespace zero3

#endif  // ZERO3_CORE_MODEL_DOCUMENT_BATCHES_H_
