// Copyright 2026 The zero3 Authors.
//
// data.h: training batches.
//
// Every micro-batch is a pure function of (step, micro-step, rank): the
// sequences a rank trains on do not depend on how many ranks there are
// before it, so the reference trainer can reproduce the global batch of a
// ZeRO-3 run exactly. Sample number n = ((step * accumulation + micro) *
// world + rank) * batch + b picks the sequence.
//
// Sources: seeded synthetic tokens, or a text file read as bytes (token =
// byte value, vocabulary 256), from which each sample is a window at a
// seeded random position. Targets are the inputs shifted by one.
// Immutable after construction; thread-safe.

#ifndef ZERO3_CORE_MODEL_DATA_H_
#define ZERO3_CORE_MODEL_DATA_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace zero3 {
namespace model {

struct BatchShape {
  int64_t batch = 1;  // sequences per micro-batch
  int64_t seq = 1;    // tokens per sequence
  int accumulation = 1;
  int world = 1;
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  virtual std::string description() const = 0;
  // Smallest vocabulary the tokens fit in.
  virtual int64_t min_vocab() const = 0;
  // tokens and targets get batch * seq int32 values each.
  void Fill(const BatchShape& shape, int64_t step, int micro, int rank,
            std::vector<int32_t>* tokens, std::vector<int32_t>* targets) const;

 protected:
  // Writes seq + 1 consecutive tokens of sample `n` into `out`.
  virtual void Sample(int64_t n, int64_t seq, int32_t* out) const = 0;
};

std::unique_ptr<BatchSource> SyntheticBatches(int64_t vocab, uint64_t seed);

// Fails naming the file if it cannot be read or is shorter than seq + 1.
absl::StatusOr<std::unique_ptr<BatchSource>> TextBatches(
    const std::string& path, int64_t seq, uint64_t seed);

// The same over bytes already in memory; `name` describes them.
absl::StatusOr<std::unique_ptr<BatchSource>> TextBatchesFromBytes(
    const std::string& name, std::string bytes, int64_t seq, uint64_t seed);

}  // namespace model
}  // namespace zero3

#endif  // ZERO3_CORE_MODEL_DATA_H_
