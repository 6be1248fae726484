// Copyright 2026 The zero3 Authors.

#include "core/zero/loss_scaler.h"

#include "gtest/gtest.h"

namespace zero3 {
namespace zero {
namespace {

TEST(LossScalerTest, StaticNeverChanges) {
  LossScaler s = LossScaler::Static(128);
  s.Update(true);
  s.Update(false);
  EXPECT_EQ(s.scale(), 128);
}

TEST(LossScalerTest, HysteresisDelaysTheFirstHalving) {
  LossScaler s = LossScaler::Dynamic(16, 1000, 2, false, 1);
  EXPECT_EQ(s.scale(), 65536);
  s.Update(true);  // absorbed by hysteresis
  EXPECT_EQ(s.scale(), 65536);
  s.Update(true);
  EXPECT_EQ(s.scale(), 32768);
  s.Update(true);
  EXPECT_EQ(s.scale(), 16384);
}

TEST(LossScalerTest, DoublesAfterAWindowOfCleanSteps) {
  LossScaler s = LossScaler::Dynamic(4, 3, 1, false, 1);
  s.Update(true);  // iteration 0 overflows: 8
  EXPECT_EQ(s.scale(), 8);
  s.Update(false);
  s.Update(false);
  EXPECT_EQ(s.scale(), 8);
  s.Update(false);  // 3 clean iterations since the overflow
  EXPECT_EQ(s.scale(), 16);
}

TEST(LossScalerTest, NeverBelowMinimum) {
  LossScaler s = LossScaler::Dynamic(2, 1000, 1, false, 2);
  s.Update(true);
  s.Update(true);
  s.Update(true);
  EXPECT_EQ(s.scale(), 2);
}

}  // namespace
}  // namespace zero
}  // namespace zero3
