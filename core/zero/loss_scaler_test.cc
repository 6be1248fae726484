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

// A scaler restored mid-way (as on resume) goes on exactly as the one it
// was taken from.
TEST(LossScalerTest, RestoredStateContinuesTheSameWay) {
  const bool overflows[] = {true, false, false, true, false, false, false};
  LossScaler straight = LossScaler::Dynamic(8, 2, 2, false, 1);
  LossScaler first = LossScaler::Dynamic(8, 2, 2, false, 1);
  for (int i = 0; i < 3; ++i) first.Update(overflows[i]);
  LossScaler resumed = LossScaler::Dynamic(8, 2, 2, false, 1);
  resumed.Restore(first.state());
  for (int i = 0; i < 7; ++i) {
    straight.Update(overflows[i]);
    if (i >= 3) resumed.Update(overflows[i]);
  }
  EXPECT_EQ(resumed.scale(), straight.scale());
  EXPECT_EQ(resumed.state().iteration, 7);
  EXPECT_EQ(resumed.state().last_overflow, straight.state().last_overflow);
  EXPECT_EQ(resumed.state().cur_hysteresis, straight.state().cur_hysteresis);
}

}  // namespace
}  // namespace zero
}  // namespace zero3
