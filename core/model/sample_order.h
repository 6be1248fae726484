// Copyright 2026 The zero3 Authors.
//
// sample_order.h: a seeded permutation of a dataset's samples per epoch.
//
// At(epoch, i) is the sample taken i-th in `epoch`: a pure function of
// (seed, epoch, i) computed in O(1) time and memory (a Feistel network over
// the next power of four, cycle-walked back into [0, n)), so any rank can
// look up any position of any epoch without building or storing a shuffled
// index, however many samples there are. Each epoch's order is a different
// permutation of all n samples. Without shuffling, At(epoch, i) is i: file
// order every epoch. Thread-safe (no state).

#ifndef ZERO3_CORE_MODEL_SAMPLE_ORDER_H_
#define ZERO3_CORE_MODEL_SAMPLE_ORDER_H_

#include <cstdint>

namespace zero3 {
namespace model {

class SampleOrder {
 public:
  // A permutation of [0, samples) per epoch, or the identity without
  // `shuffle`; samples >= 1.
  SampleOrder(int64_t samples, uint64_t seed, bool shuffle = true);

  int64_t samples() const { return samples_; }
  bool shuffled() const { return shuffle_; }

  // The sample at position `index` (0 <= index < samples()) of `epoch`.
  int64_t At(int64_t epoch, int64_t index) const;

 private:
  // One pass of the Feistel network over [0, 4^half_bits_).
  uint64_t Permute(uint64_t epoch_key, uint64_t x) const;

  int64_t samples_;
  uint64_t seed_;
  bool shuffle_;
  int half_bits_ = 1;
};

}  // namespace model
}  // namespace zero3

#endif  // ZERO3_CORE_MODEL_SAMPLE_ORDER_H_
