// Copyright 2026 The zero3 Authors.
//
// data.h: training batches.
//
// Every micro-batch is a pure function of (step, micro-step, rank): the
// sequences a rank trains on do not depend on how many ranks there are
// before it, so the reference trainer can reproduce the global batch of a
// ZeRO-3 run exactly. Sample number n = start + ((step * accumulation +
// micro) * world + rank) * batch + b picks the sequence: global batch `step`
// is samples [start + step * G, start + (step + 1) * G) with G = batch *
// world * accumulation, the same set however it is split across ranks and
// micro-batches. `start` is 0 unless SetPosition moved it (to resume).
//
// A target of -1 is not predicted (masked or padding; masks_targets()).
//
// Sources: seeded synthetic tokens, or a text file read as bytes (token =
// byte value, vocabulary 256), from which each sample is a window at a
// seeded random position; token files are in token_batches.h. Targets are
// the inputs shifted by one. Immutable after construction except for
// SetPosition, which must come before training; Fill is thread-safe.

#ifndef ZERO3_CORE_MODEL_DATA_H_
#define ZERO3_CORE_MODEL_DATA_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace zero3 {
namespace model {

// Where a run stands in its data: the next sample is the one at position
// `index` of epoch `epoch`'s sample order. Sources without epochs (synthetic
// tokens, text) stay in epoch 0 with index = the sample number. Part of the
// training state: a checkpoint saves it and a resumed run sets it back.
struct DataPosition {
  int64_t epoch = 0;
  int64_t index = 0;
  bool operator==(const DataPosition& o) const {
    return epoch == o.epoch && index == o.index;
  }
  bool operator!=(const DataPosition& o) const { return !(*this == o); }
};

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
  // Smallest vocabulary the tokens fit in (a token file: the vocabulary its
  // ids are checked against as they are read).
  virtual int64_t min_vocab() const = 0;
  // Samples in one epoch; 0 for a source without epochs.
  virtual int64_t samples_per_epoch() const { return 0; }
  // True where some targets are not predicted (a loss mask, padding): the
  // loss is then the mean over the global batch's predicted targets, which
  // PredictedTargets counts. False: every target is predicted.
  virtual bool masks_targets() const { return false; }
  // True where a sample packs several documents: each token then has a
  // place in its document (Fill's `positions`), which attention and the
  // rotary embedding use. False: a token's position is its index.
  virtual bool packs() const { return false; }

  // tokens and targets get batch * seq int32 values each. Fails where the
  // data does (a token file's id outside the vocabulary, naming the file
  // and byte offset), or for a step before the one SetPosition placed.
  // With `positions`, also batch * seq positions (SamplePositions).
  absl::Status Fill(const BatchShape& shape, int64_t step, int micro, int rank,
                    std::vector<int32_t>* tokens, std::vector<int32_t>* targets,
                    std::vector<int32_t>* positions = nullptr) const;

  // The predicted targets (those not -1) of global batch `step`: all its
  // micro-batches on all ranks. Fails where Fill would.
  absl::StatusOr<int64_t> PredictedTargets(const BatchShape& shape,
                                           int64_t step) const;

  // The position of global batch `step`'s first sample.
  DataPosition PositionAt(const BatchShape& shape, int64_t step) const;
  // Makes global batch `step` start at `position`, the later ones following
  // it (to resume: the saved position and the step training goes on from;
  // the shape may differ from the saved run's). Fails naming the values if
  // the position is outside the data. Not thread-safe: call before Fill.
  absl::Status SetPosition(const BatchShape& shape, int64_t step,
                           const DataPosition& position);

 protected:
  // Writes seq + 1 consecutive tokens of sample `n` into `out`.
  virtual absl::Status Sample(int64_t n, int64_t seq, int32_t* out) const = 0;
  // Writes sample `n`'s seq inputs and seq targets, a target of -1 not
  // predicted. By default Sample's tokens, the targets shifted by one.
  virtual absl::Status SampleTargets(int64_t n, int64_t seq, int32_t* tokens,
                                     int32_t* targets) const;
  // Writes sample `n`'s seq positions: each token's place in its document.
  // By default 0 .. seq - 1 (one document).
  virtual absl::Status SamplePositions(int64_t n, int64_t seq,
                                       int32_t* positions) const;

 private:
  // Sample number of global batch 0's first sample.
  int64_t start_ = 0;
};

// Transformer::Forward's loss_divisor for every micro-batch of a global
// batch of `shape` with `predicted` predicted targets: 0 (each micro-batch's
// own mean) where `data` predicts every target; else predicted / (world *
// accumulation), so that averaging over ranks and micro-batches gives the
// mean over the global batch's predicted targets, as transformers computes
// it with num_items_in_batch.
double MicroBatchLossDivisor(const BatchSource& data, const BatchShape& shape,
                             int64_t predicted);

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
