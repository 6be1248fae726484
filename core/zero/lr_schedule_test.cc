// Copyright 2026 The zero3 Authors.
//
// The schedules against values from DeepSpeed's own lr_schedules.py
// (deepspeedai/DeepSpeed at edaa722, run in Python with a one-group
// optimizer): element i of each list is the group's lr after the scheduler
// was built and stepped i times, i.e. the lr of the optimizer step that
// follows i applied steps. Compared within 4 ulps (EXPECT_DOUBLE_EQ): the
// arithmetic is the same double-precision sequence.

#include "core/zero/lr_schedule.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace zero3 {
namespace zero {
namespace {

void ExpectTrace(const LrSchedule& s, double optimizer_lr,
                 const std::vector<double>& want) {
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_DOUBLE_EQ(s.LrAt(optimizer_lr, static_cast<int64_t>(i)), want[i])
        << LrScheduleName(s.type) << " after " << i << " applied steps";
  }
}

LrSchedule Make(LrScheduleType type, WarmupType warmup, int64_t warmup_steps) {
  LrSchedule s;
  s.type = type;
  s.warmup_type = warmup;
  s.warmup_num_steps = warmup_steps;
  return s;
}

TEST(LrScheduleTest, ConstantIsTheOptimizerLr) {
  const LrSchedule s;
  EXPECT_EQ(s.LrAt(3e-4, 0), 3e-4);
  EXPECT_EQ(s.LrAt(3e-4, 1000000), 3e-4);
}

TEST(LrScheduleTest, WarmupLogMatchesDeepSpeed) {
  // min 1e-5, max 1e-3, 10 steps: lr = 1e-5 + 9.9e-4 * ln(it + 1) / ln(10);
  // it = 1 (third step): 1e-5 + 9.9e-4 * 0.30103 = 3.0802e-4. The last
  // warmup step (it = 9) is 1e-3 less one ulp, then max from it = 10.
  LrSchedule s = Make(LrScheduleType::kWarmupLR, WarmupType::kLog, 10);
  s.warmup_min_lr = 1e-5;
  s.warmup_max_lr = 1e-3;
  ExpectTrace(
      s, 1e-3,
      {1e-05, 1e-05, 0.0003080196957073414, 0.00048235004217246576,
       0.0006060393914146827, 0.0007019803042926585, 0.0007803697378798071,
       0.0008466470596141142, 0.0009040590871220239, 0.0009547000843449315,
       0.0009999999999999998, 0.001, 0.001});
  EXPECT_EQ(s.LrAt(1e-3, 1000000), 1e-3);
}

TEST(LrScheduleTest, WarmupLinearMatchesDeepSpeed) {
  // 0 -> 2e-3 over 4 steps: it / 4 * 2e-3.
  LrSchedule s = Make(LrScheduleType::kWarmupLR, WarmupType::kLinear, 4);
  s.warmup_max_lr = 2e-3;
  ExpectTrace(s, 1e-3, {0.0, 0.0, 0.0005, 0.001, 0.0015, 0.002, 0.002, 0.002});
}

TEST(LrScheduleTest, WarmupOfOneStepActsAsTwo) {
  LrSchedule s = Make(LrScheduleType::kWarmupLR, WarmupType::kLinear, 1);
  ExpectTrace(s, 1e-3, {0.0, 0.0, 0.0005, 0.001, 0.001});
  // And of none (the Hugging Face Trainer's 0), as DeepSpeed before it
  // refused 0: max(2, 0).
  s = Make(LrScheduleType::kWarmupLR, WarmupType::kLinear, 0);
  ExpectTrace(s, 1e-3, {0.0, 0.0, 0.0005, 0.001, 0.001});
}

TEST(LrScheduleTest, WarmupDecayMatchesDeepSpeed) {
  // Linear warmup 1e-4 -> 1e-3 over 4 steps, then (10 - it) / 6 of the
  // range down to min at it = 10, and min after total_num_steps.
  LrSchedule s = Make(LrScheduleType::kWarmupDecayLR, WarmupType::kLinear, 4);
  s.warmup_min_lr = 1e-4;
  s.warmup_max_lr = 1e-3;
  s.total_num_steps = 10;
  ExpectTrace(s, 1e-3,
              {0.0001, 0.0001, 0.000325, 0.00055, 0.0007750000000000001, 0.001,
               0.0008500000000000001, 0.0007, 0.00055, 0.00039999999999999996,
               0.00025, 0.0001, 0.0001});
  EXPECT_EQ(s.LrAt(1e-3, 500), 1e-4);
  LrSchedule log = Make(LrScheduleType::kWarmupDecayLR, WarmupType::kLog, 3);
  log.total_num_steps = 6;
  ExpectTrace(log, 1e-3,
              {0.0, 0.0, 0.0006309297535714573, 0.001, 0.001,
               0.0006666666666666666, 0.0003333333333333333, 0.0, 0.0});
}

TEST(LrScheduleTest, WarmupCosineMatchesDeepSpeed) {
  // Ratios of the optimizer's 1e-3: 0 at construction, then from
  // warmup_min_ratio 0.1 (log warmup over 4 steps), then the cosine from
  // it = 4 (progress 1/6) down to cos_min_ratio 0.01, which holds after
  // total_num_steps.
  LrSchedule s = Make(LrScheduleType::kWarmupCosineLR, WarmupType::kLog, 4);
  s.total_num_steps = 10;
  s.warmup_min_ratio = 0.1;
  s.cos_min_ratio = 0.01;
  ExpectTrace(
      s, 1e-3,
      {0.0, 0.0001, 0.00055, 0.0008132331253245203, 0.001,
       0.0009336825748732972, 0.0007524999999999999, 0.000505,
       0.00025750000000000013, 7.631742512670284e-05, 1e-05, 1e-05, 1e-05});
  EXPECT_DOUBLE_EQ(s.LrAt(1e-3, 100000), 1e-5);
  LrSchedule lin =
      Make(LrScheduleType::kWarmupCosineLR, WarmupType::kLinear, 2);
  lin.total_num_steps = 6;
  ExpectTrace(
      lin, 2e-3,
      {0.0, 0.0, 0.001, 0.001707136070508429, 0.0010001, 0.0002930639294915712,
       2.0000000000000002e-07, 2.0000000000000002e-07, 2.0000000000000002e-07});
}

TEST(LrScheduleTest, LRRangeTestMatchesDeepSpeed) {
  // LRRangeTest(min_lr 1e-4, step_size 3, step_rate 2.0).
  LrSchedule s;
  s.type = LrScheduleType::kLRRangeTest;
  s.range_min_lr = 1e-4;
  s.range_step_size = 3;
  s.range_step_rate = 2.0;
  ExpectTrace(
      s, 1e-3,
      {0.0001, 0.00016666666666666666, 0.0002333333333333333,
       0.00030000000000000003, 0.00036666666666666667, 0.0004333333333333334,
       0.0005, 0.0005666666666666667, 0.0006333333333333333});
  s.range_staircase = true;
  ExpectTrace(
      s, 1e-3,
      {0.0001, 0.0001, 0.0001, 0.00030000000000000003, 0.00030000000000000003,
       0.00030000000000000003, 0.0005, 0.0005, 0.0005});
}

TEST(LrScheduleTest, OneCycleMatchesDeepSpeedWithItsMomentum) {
  // OneCycle(cycle_min_lr 1e-4, cycle_max_lr 1e-3, first 4, second 2,
  // decay_lr_rate 0.5, decay_step_size 2, decay_mom_rate 0.1) on AdamW
  // with betas (0.9, 0.999).
  LrSchedule s;
  s.type = LrScheduleType::kOneCycle;
  s.cycle_min_lr = 1e-4;
  s.cycle_max_lr = 1e-3;
  s.first_step_size = 4;
  s.second_step_size = 2;
  s.decay_lr_rate = 0.5;
  s.decay_step_size = 2;
  s.decay_mom_rate = 0.1;
  ExpectTrace(s, 1e-3,
              {0.0001, 0.0003250000000000001, 0.0005499999999999999,
               0.0007750000000000001, 0.0009999999999999998,
               0.0005499999999999996, 0.0001, 8e-05, 6.666666666666667e-05,
               5.714285714285715e-05, 5e-05, 4.4444444444444447e-05, 4e-05});
  const std::vector<double> beta1 = {0.8,
                                     0.875,
                                     0.8500000000000001,
                                     0.8250000000000001,
                                     0.8,
                                     0.8500000000000001,
                                     0.9,
                                     0.9450000000000001,
                                     0.9900000000000001};
  for (size_t i = 0; i < beta1.size(); ++i) {
    EXPECT_DOUBLE_EQ(s.Beta1At(0.9, static_cast<int64_t>(i)), beta1[i]) << i;
    EXPECT_EQ(s.Beta2At(0.999, static_cast<int64_t>(i)), 0.99) << i;
  }
}

TEST(LrScheduleTest, OneCycleStairsMatchDeepSpeed) {
  // OneCycle(1e-4, 1e-3, first 4, first_stair_count 2, no momentum): the
  // second half takes the first's size and stairs.
  LrSchedule s;
  s.type = LrScheduleType::kOneCycle;
  s.cycle_min_lr = 1e-4;
  s.cycle_max_lr = 1e-3;
  s.first_step_size = s.second_step_size = 4;
  s.first_stair_count = s.second_stair_count = 2;
  s.cycle_momentum = false;
  ExpectTrace(s, 1e-3,
              {0.0001, 0.0001, 0.00055, 0.00055, 0.001, 0.00055, 0.00055,
               0.0001, 0.0001, 0.0001, 0.0001});
  EXPECT_EQ(s.Beta1At(0.9, 3), 0.9);
  EXPECT_EQ(s.Beta2At(0.999, 3), 0.999);
}

TEST(LrScheduleTest, ResumedScheduleStartsAtTheOptimizerLr) {
  LrSchedule s = Make(LrScheduleType::kWarmupLR, WarmupType::kLinear, 10);
  s.warmup_max_lr = 1e-3;
  s.last_batch_iteration = 4;
  ExpectTrace(s, 5e-4, {0.0005, 0.0005, 0.0006, 0.0007});
}

}  // namespace
}  // namespace zero
}  // namespace zero3
