// Copyright 2026 The zero3 Authors.
//
// token_batches.h: training samples from a stream of token ids.
//
// As Megatron's GPT dataset takes them: sample k is the seq + 1 tokens
// starting at token k * seq (inputs its first seq, targets its last seq),
// so the inputs of consecutive samples tile the stream without overlap and
// sample k's last target is sample k + 1's first input. A stream of T
// tokens gives (T - 1) / seq samples; the rest of the stream is unused.
// Each epoch takes all samples in the order of a seeded permutation
// (sample_order.h); sample number n of the run is position n % N of epoch
// n / N, N the samples per epoch, so a global batch may span two epochs.
// Token ids are checked against the vocabulary as each sample is read.
// Immutable after construction (but for SetPosition); Fill is thread-safe.

#ifndef ZERO3_CORE_MODEL_TOKEN_BATCHES_H_
#define ZERO3_CORE_MODEL_TOKEN_BATCHES_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/model/data.h"
#include "core/model/token_stream.h"

namespace zero3 {
namespace model {

// Samples of `seq` tokens from `stream` for a model of `vocab` tokens, in
// the order `seed` gives (file order every epoch without `shuffle`). Fails
// naming the file if the stream holds fewer than seq + 1 tokens.
absl::StatusOr<std::unique_ptr<BatchSource>> TokenBatches(TokenStream stream,
                                                          int64_t vocab,
                                                          int64_t seq,
                                                          uint64_t seed,
                                                          bool shuffle = true);

}  // namespace model
}  // namespace zero3

#endif  // ZERO3_CORE_MODEL_TOKEN_BATCHES_H_
