// Copyright 2026 The zero3 Authors.

#include "core/model/sample_order.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "gtest/gtest.h"

namespace zero3 {
namespace model {
namespace {

std::vector<int64_t> Epoch(const SampleOrder& order, int64_t epoch) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < order.samples(); ++i) v.push_back(order.At(epoch, i));
  return v;
}

TEST(SampleOrderTest, EachEpochIsAPermutation) {
  for (int64_t n : {1, 2, 3, 4, 5, 16, 17, 255, 1000}) {
    SampleOrder order(n, 42);
    for (int64_t epoch : {0, 1, 7}) {
      std::vector<int64_t> v = Epoch(order, epoch);
      std::sort(v.begin(), v.end());
      std::vector<int64_t> all(n);
      std::iota(all.begin(), all.end(), 0);
      EXPECT_EQ(v, all) << "n " << n << " epoch " << epoch;
    }
  }
}

TEST(SampleOrderTest, OrderIsAFunctionOfSeedAndEpoch) {
  const SampleOrder a(1000, 5), b(1000, 5), c(1000, 6);
  EXPECT_EQ(Epoch(a, 0), Epoch(b, 0));
  EXPECT_EQ(Epoch(a, 3), Epoch(b, 3));
  EXPECT_NE(Epoch(a, 0), Epoch(c, 0));
  EXPECT_NE(Epoch(a, 0), Epoch(a, 1));
  // Shuffled: far from the identity (a random permutation of 1000 leaves
  // about one element in place).
  std::vector<int64_t> v = Epoch(a, 0);
  int fixed = 0;
  for (int64_t i = 0; i < 1000; ++i) fixed += v[i] == i;
  EXPECT_LT(fixed, 20);
}

TEST(SampleOrderTest, UnshuffledIsFileOrderEveryEpoch) {
  const SampleOrder order(17, 5, /*shuffle=*/false);
  std::vector<int64_t> all(17);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(Epoch(order, 0), all);
  EXPECT_EQ(Epoch(order, 4), all);
  EXPECT_FALSE(order.shuffled());
}

}  // namespace
}  // namespace model
}  // namespace zero3
