// Copyright 2026 The zero3 Authors.
//
// lr_schedule.h: DeepSpeed's learning-rate schedules (WarmupLR,
// WarmupDecayLR, WarmupCosineLR, OneCycle with its momentum, LRRangeTest)
// as a pure function of the number of optimizer steps applied so far.
//
// DeepSpeed sets the learning rate once when it builds the scheduler (the
// value at iteration -1: warmup_min_lr, 0 for WarmupCosineLR, cycle_min_lr
// for OneCycle, lr_range_test_min_lr for LRRangeTest) and
// advances the scheduler after every applied optimizer step; a step skipped
// for fp16 overflow does not advance it. So the step that follows `applied`
// applied steps uses the schedule's value at iteration
// last_batch_iteration + applied, and the first step the value at -1 (or,
// when resuming with last_batch_iteration >= 0, the optimizer's own lr):
//
//   LrSchedule s;  s.type = LrScheduleType::kWarmupLR;  ...
//   double lr = s.LrAt(optimizer_lr, applied_steps);
//
// The arithmetic follows deepspeed/runtime/lr_schedules.py in double
// precision, operation for operation. Plain data; thread-safe.

#ifndef ZERO3_CORE_ZERO_LR_SCHEDULE_H_
#define ZERO3_CORE_ZERO_LR_SCHEDULE_H_

#include <cstdint>

namespace zero3 {
namespace zero {

enum class LrScheduleType {
  kConstant,  // no scheduler: the optimizer's lr every step
  kWarmupLR,
  kWarmupDecayLR,
  kWarmupCosineLR,
  kOneCycle,
  kLRRangeTest,
};

enum class WarmupType { kLog, kLinear };

struct LrSchedule {
  LrScheduleType type = LrScheduleType::kConstant;
  WarmupType warmup_type = WarmupType::kLog;
  // WarmupLR, WarmupDecayLR: the lr ramps from min to max.
  double warmup_min_lr = 0;
  double warmup_max_lr = 1e-3;
  // At least 0; values below 2 act as 2, as in DeepSpeed.
  int64_t warmup_num_steps = 1000;
  // WarmupDecayLR, WarmupCosineLR: the step where the decay ends.
  int64_t total_num_steps = 1;
  // WarmupCosineLR: fractions of the optimizer's lr at the start of warmup
  // and at the end of the cosine.
  double warmup_min_ratio = 0;
  double cos_min_ratio = 1e-4;
  // LRRangeTest: min_lr * (1 + step_rate * (iteration + 1) / step_size),
  // the quotient floored with staircase.
  double range_min_lr = 1e-3;
  int64_t range_step_size = 2000;  // at least 1
  double range_step_rate = 1.0;
  bool range_staircase = false;
  // OneCycle (lr_schedules.py's names without "cycle_").
  double cycle_min_lr = 0, cycle_max_lr = 0;
  double decay_lr_rate = 0;
  int64_t first_step_size = 2000;  // at least 1
  int64_t second_step_size = 2000;
  int64_t first_stair_count = 0, second_stair_count = 0;
  int64_t decay_step_size = 0;
  bool cycle_momentum = true;  // beta1 cycles, beta2 is 0.99
  double cycle_min_mom = 0.8, cycle_max_mom = 0.9;
  double decay_mom_rate = 0;
  // The iteration the schedule has reached before the first step (-1: a
  // fresh start).
  int64_t last_batch_iteration = -1;

  // The learning rate of the optimizer step that follows `applied` applied
  // (not skipped) steps, for an optimizer whose own lr is `optimizer_lr`.
  double LrAt(double optimizer_lr, int64_t applied) const;

  // The schedule's value at `iteration` (DeepSpeed's get_lr after
  // last_batch_iteration reached it); -1 gives the value set at
  // construction.
  double ValueAt(double optimizer_lr, int64_t iteration) const;

  // Adam's betas for the step that follows `applied` applied steps: the
  // optimizer's own, except OneCycle with cycle_momentum, which sets
  // (cycle_min_mom, 0.99) at construction and (its momentum at the
  // iteration, 0.99) after each step.
  double Beta1At(double optimizer_beta1, int64_t applied) const;
  double Beta2At(double optimizer_beta2, int64_t applied) const;

 private:
  // OneCycle's position in its cycle at `iteration`, 0 to 1
  // (_get_scale_factor).
  double CycleScale(int64_t iteration) const;
  double OneCycleLr(int64_t iteration) const;
  double OneCycleMomentum(int64_t iteration) const;
};

// "WarmupLR", ..., "constant".
const char* LrScheduleName(LrScheduleType type);

}  // namespace zero
}  // namespace zero3

#endif  // ZERO3_CORE_ZERO_LR_SCHEDULE_H_
