// Copyright 2026 The zero3 Authors.

#include "core/model/sample_order.h"

#include "core/util/check.h"
#include "core/util/random.h"

namespace zero3 {
namespace model {
namespace {

constexpr uint64_t kOrderStream = 0x6f72646572;  // "order"
constexpr int kRounds = 6;

}  // namespace

SampleOrder::SampleOrder(int64_t samples, uint64_t seed, bool shuffle)
    : samples_(samples), seed_(seed), shuffle_(shuffle) {
  ZR_CHECK_GE(samples, 1);
  // The smallest 4^h >= samples: the walk below then needs fewer than four
  // passes on average.
  while ((uint64_t{1} << (2 * half_bits_)) < static_cast<uint64_t>(samples)) {
    ++half_bits_;
  }
}

uint64_t SampleOrder::Permute(uint64_t epoch_key, uint64_t x) const {
  const uint64_t mask = (uint64_t{1} << half_bits_) - 1;
  uint64_t left = x >> half_bits_;
  uint64_t right = x & mask;
  for (int r = 0; r < kRounds; ++r) {
    const uint64_t f = HashOf(epoch_key, kOrderStream,
                              (right << 8) | static_cast<uint64_t>(r));
    const uint64_t next = left ^ (f & mask);
    left = right;
    right = next;
  }
  return (left << half_bits_) | right;
}

int64_t SampleOrder::At(int64_t epoch, int64_t index) const {
  ZR_CHECK_GE(epoch, 0);
  ZR_CHECK(index >= 0 && index < samples_);
  if (!shuffle_) return index;
  const uint64_t epoch_key = HashOf(seed_, kOrderStream, epoch);
  // A bijection of [0, 4^h) restricted to [0, samples) by walking the
  // cycle until it lands inside: still a bijection of [0, samples).
  uint64_t x = static_cast<uint64_t>(index);
  do {
    x = Permute(epoch_key, x);
  } while (x >= static_cast<uint64_t>(samples_));
  return static_cast<int64_t>(x);
}

}  // namespace model
}  // namespace zero3
