// Copyright 2026 The zero3 Authors.
//
// grad_clip.h: DeepSpeed's gradient clipping factor, the one rule the
// engine's update and the speculative host step's early abort both apply.

#ifndef ZERO3_CORE_ZERO_GRAD_CLIP_H_
#define ZERO3_CORE_ZERO_GRAD_CLIP_H_

#include <cmath>

namespace zero3 {
namespace zero {

// The clip factor for a gradient whose sum of squares is `norm_squared`
// while still multiplied by `loss_scale`, with `gradient_clipping` the
// configured maximum norm (0 or less: off, factor 1). Clipping triggers when
// the factor is above 1; the update then divides the gradients by the factor
// times the loss scale (DeepSpeed's unscale_and_clip, with its 1e-6).
inline double ClipFactor(double norm_squared, double loss_scale,
                         double gradient_clipping) {
  if (gradient_clipping <= 0) return 1;
  return ((std::sqrt(norm_squared) / loss_scale) + 1e-6) / gradient_clipping;
}

}  // namespace zero
}  // namespace zero3

#endif  // ZERO3_CORE_ZERO_GRAD_CLIP_H_
