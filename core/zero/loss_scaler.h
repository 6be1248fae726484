// Copyright 2026 The zero3 Authors.
//
// loss_scaler.h: fp16 loss scaling, static or dynamic, as DeepSpeed's
// DynamicLossScaler.
//
// The loss is multiplied by scale() before backward; an overflow (a
// non-finite gradient) skips the step and, once `hysteresis` overflows have
// been absorbed, halves the scale (not below min_scale); after
// `window` clean steps since the last overflow the scale doubles.
// Not thread-safe.

#ifndef ZERO3_CORE_ZERO_LOSS_SCALER_H_
#define ZERO3_CORE_ZERO_LOSS_SCALER_H_

#include <cstdint>

#include "core/zero/options.h"

namespace zero3 {
namespace zero {

class LossScaler {
 public:
  // What changes as steps go by (the rest comes from the options): saved in
  // checkpoints and restored on resume.
  struct State {
    double scale = 1;
    int cur_hysteresis = 2;
    int64_t iteration = 0;
    int64_t last_overflow = -1;
  };

  // A static scaler: scale never changes (1 for bf16 and fp32).
  static LossScaler Static(double scale);
  static LossScaler Dynamic(int initial_power, int64_t window, int hysteresis,
                            bool consecutive_hysteresis, double min_scale);
  // The scaler `options` ask for: fp16's static or dynamic one, scale 1 for
  // bf16 and fp32.
  static LossScaler ForOptions(const ZeroOptions& options);

  double scale() const { return scale_; }
  bool dynamic() const { return dynamic_; }
  // Records the outcome of one step's overflow check.
  void Update(bool overflow);

  State state() const;
  // Continues from `state`, taken from a scaler made from the same options.
  void Restore(const State& state);

 private:
  double scale_ = 1;
  bool dynamic_ = false;
  int64_t window_ = 1000;
  int hysteresis_ = 2;
  int cur_hysteresis_ = 2;
  bool consecutive_hysteresis_ = false;
  double min_scale_ = 1;
  int64_t iteration_ = 0;
  int64_t last_overflow_ = -1;
};

}  // namespace zero
}  // namespace zero3

#endif  // ZERO3_CORE_ZERO_LOSS_SCALER_H_
