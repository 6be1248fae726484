// Copyright 2026 The zero3 Authors.
//
// lr_schedule.h: DeepSpeed's learning-rate schedules (WarmupLR,
// WarmupDecayLR, WarmupCosineLR) as a pure function of the number of
// optimizer steps applied so far.
//
// DeepSpeed sets the learning rate once when it builds the scheduler (the
// value at iteration -1: warmup_min_lr, or 0 for WarmupCosineLR) and
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
};

// "WarmupLR", ..., "constant".
const char* LrScheduleName(LrScheduleType type);

}  // namespace zero
}  // namespace zero3

#endif  // ZERO3_CORE_ZERO_LR_SCHEDULE_H_
