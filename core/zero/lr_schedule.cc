// Copyright 2026 The zero3 Authors.

#include "core/zero/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace zero3 {
namespace zero {
namespace {

constexpr double kPi = 3.14159265358979323846;  // Python's math.pi

// The warmup fraction in [0, 1) at `it` < warmup steps `w` (_get_gamma).
double WarmupGamma(WarmupType type, int64_t it, int64_t w) {
  if (type == WarmupType::kLog) {
    const double inverse_log_warm_up = 1.0 / std::log(static_cast<double>(w));
    return inverse_log_warm_up * std::log(static_cast<double>(it + 1));
  }
  return static_cast<double>(it) / static_cast<double>(w);
}

}  // namespace

double LrSchedule::CycleScale(int64_t iteration) const {
  const double total = static_cast<double>(first_step_size + second_step_size);
  const double step_ratio = static_cast<double>(first_step_size) / total;
  const int64_t batch_iteration = iteration + 1;
  const double cycle =
      std::floor(1 + static_cast<double>(batch_iteration) / total);
  const double x = 1.0 + static_cast<double>(batch_iteration) / total - cycle;
  double scale;
  int64_t stairs;
  if (x <= step_ratio) {
    scale = x / step_ratio;
    stairs = first_stair_count;
  } else {
    scale = (x - 1) / (step_ratio - 1);
    stairs = second_stair_count;
  }
  if (stairs > 0) {
    const double in_cycle =
        std::fmod(static_cast<double>(batch_iteration), total);
    const double position =
        in_cycle <= static_cast<double>(first_step_size)
            ? in_cycle * static_cast<double>(stairs) / first_step_size
            : (total - in_cycle) * static_cast<double>(stairs) /
                  second_step_size;
    scale = std::floor(position) / static_cast<double>(stairs);
  }
  return scale;
}

double LrSchedule::OneCycleLr(int64_t it) const {
  const int64_t total = first_step_size + second_step_size;
  if (it < total) {
    return cycle_min_lr + (cycle_max_lr - cycle_min_lr) * CycleScale(it);
  }
  if (decay_step_size == 0 || decay_lr_rate == 0) return cycle_min_lr;
  const double interval = static_cast<double>(it - total + 1) /
                          static_cast<double>(decay_step_size);
  return cycle_min_lr / (1 + decay_lr_rate * interval);
}

double LrSchedule::OneCycleMomentum(int64_t it) const {
  const int64_t total = first_step_size + second_step_size;
  if (it < total) {
    return cycle_max_mom - (cycle_max_mom - cycle_min_mom) * CycleScale(it);
  }
  if (decay_step_size == 0 || decay_mom_rate == 0) return cycle_max_mom;
  const double interval = static_cast<double>(it - total + 1) /
                          static_cast<double>(decay_step_size);
  return cycle_max_mom * (1 + decay_mom_rate * interval);
}

double LrSchedule::ValueAt(double optimizer_lr, int64_t it) const {
  const int64_t w = std::max<int64_t>(2, warmup_num_steps);
  switch (type) {
    case LrScheduleType::kConstant:
      return optimizer_lr;
    case LrScheduleType::kOneCycle:
      return it < 0 ? cycle_min_lr : OneCycleLr(it);
    case LrScheduleType::kLRRangeTest: {
      const double quotient =
          static_cast<double>(it + 1) / static_cast<double>(range_step_size);
      const double interval = range_staircase ? std::floor(quotient) : quotient;
      return range_min_lr * (1 + range_step_rate * interval);
    }
    case LrScheduleType::kWarmupLR:
    case LrScheduleType::kWarmupDecayLR: {
      if (it < 0) return warmup_min_lr;
      double gamma = 1.0;
      if (it < w) {
        gamma = WarmupGamma(warmup_type, it, w);
      } else if (type == LrScheduleType::kWarmupDecayLR) {
        gamma = std::max(0.0, static_cast<double>(total_num_steps - it) /
                                  static_cast<double>(std::max<int64_t>(
                                      1, total_num_steps - w)));
      }
      const double delta = warmup_max_lr - warmup_min_lr;
      return warmup_min_lr + delta * gamma;
    }
    case LrScheduleType::kWarmupCosineLR: {
      if (it < 0) return 0.0;
      double ratio;
      if (it < w) {
        ratio = WarmupGamma(warmup_type, it, w);
        ratio = warmup_min_ratio + ratio * (1.0 - warmup_min_ratio);
      } else {
        const int64_t real_last_step = it - w + 1;
        const int64_t real_total_steps =
            std::max<int64_t>(1, total_num_steps - w);
        const double progress =
            std::min(1.0, static_cast<double>(real_last_step) /
                              static_cast<double>(real_total_steps));
        ratio = (1 + std::cos(kPi * progress)) / 2;
        ratio = std::max(0.0, cos_min_ratio + (1.0 - cos_min_ratio) * ratio);
      }
      return optimizer_lr * ratio;
    }
  }
  return optimizer_lr;
}

double LrSchedule::LrAt(double optimizer_lr, int64_t applied) const {
  if (type == LrScheduleType::kConstant) return optimizer_lr;
  // A resumed schedule sets nothing at construction: the first step runs at
  // the optimizer's lr.
  if (applied == 0 && last_batch_iteration != -1) return optimizer_lr;
  return ValueAt(optimizer_lr, last_batch_iteration + applied);
}

double LrSchedule::Beta1At(double optimizer_beta1, int64_t applied) const {
  if (type != LrScheduleType::kOneCycle || !cycle_momentum) {
    return optimizer_beta1;
  }
  if (applied == 0) {
    return last_batch_iteration == -1 ? cycle_min_mom : optimizer_beta1;
  }
  return OneCycleMomentum(last_batch_iteration + applied);
}

double LrSchedule::Beta2At(double optimizer_beta2, int64_t applied) const {
  if (type != LrScheduleType::kOneCycle || !cycle_momentum) {
    return optimizer_beta2;
  }
  if (applied == 0 && last_batch_iteration != -1) return optimizer_beta2;
  return 0.99;
}

const char* LrScheduleName(LrScheduleType type) {
  switch (type) {
    case LrScheduleType::kConstant:
      return "constant";
    case LrScheduleType::kWarmupLR:
      return "WarmupLR";
    case LrScheduleType::kWarmupDecayLR:
      return "WarmupDecayLR";
    case LrScheduleType::kWarmupCosineLR:
      return "WarmupCosineLR";
    case LrScheduleType::kOneCycle:
      return "OneCycle";
    case LrScheduleType::kLRRangeTest:
      return "LRRangeTest";
  }
  return "?";
}

}  // namespace zero
}  // namespace zero3
