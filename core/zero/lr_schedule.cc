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

double LrSchedule::ValueAt(double optimizer_lr, int64_t it) const {
  const int64_t w = std::max<int64_t>(2, warmup_num_steps);
  switch (type) {
    case LrScheduleType::kConstant:
      return optimizer_lr;
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
  }
  return "?";
}

}  // namespace zero
}  // namespace zero3
