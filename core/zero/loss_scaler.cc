// Copyright 2026 The zero3 Authors.

#include "core/zero/loss_scaler.h"

#include <algorithm>
#include <cmath>

namespace zero3 {
namespace zero {

LossScaler LossScaler::Static(double scale) {
  LossScaler s;
  s.scale_ = scale;
  return s;
}

LossScaler LossScaler::Dynamic(int initial_power, int64_t window,
                               int hysteresis, bool consecutive_hysteresis,
                               double min_scale) {
  LossScaler s;
  s.dynamic_ = true;
  s.scale_ = std::ldexp(1.0, initial_power);
  s.window_ = std::max<int64_t>(1, window);
  s.hysteresis_ = std::max(1, hysteresis);
  s.cur_hysteresis_ = s.hysteresis_;
  s.consecutive_hysteresis_ = consecutive_hysteresis;
  s.min_scale_ = min_scale;
  return s;
}

void LossScaler::Update(bool overflow) {
  if (!dynamic_) return;
  if (overflow) {
    if (hysteresis_ == 1 || cur_hysteresis_ == 1) {
      scale_ = std::max(scale_ / 2, min_scale_);
    } else {
      --cur_hysteresis_;
    }
    last_overflow_ = iteration_;
  } else {
    if (consecutive_hysteresis_) cur_hysteresis_ = hysteresis_;
    if ((iteration_ - last_overflow_) % window_ == 0) {
      if (!consecutive_hysteresis_) cur_hysteresis_ = hysteresis_;
      scale_ *= 2;
    }
  }
  ++iteration_;
}

LossScaler::State LossScaler::state() const {
  State s;
  s.scale = scale_;
  s.cur_hysteresis = cur_hysteresis_;
  s.iteration = iteration_;
  s.last_overflow = last_overflow_;
  return s;
}

void LossScaler::Restore(const State& state) {
  scale_ = state.scale;
  cur_hysteresis_ = state.cur_hysteresis;
  iteration_ = state.iteration;
  last_overflow_ = state.last_overflow;
}

LossScaler LossScaler::ForOptions(const ZeroOptions& o) {
  if (o.dtype != kernels::DType::kF16) return Static(1);
  if (o.static_loss_scale > 0) return Static(o.static_loss_scale);
  return Dynamic(o.initial_scale_power, o.loss_scale_window, o.hysteresis,
                 o.consecutive_hysteresis, o.min_loss_scale);
}

}  // namespace zero
}  // namespace zero3
