// Copyright 2026 The zero3 Authors.
//
// host_adam.h: the optimizer step on the host, over fp32 shards.
//
// DeepSpeed cpu_adam's math (core/kernels/reference.h, AdamWStep) applied to
// g · grad_scale, where grad_scale folds loss unscaling and gradient
// clipping into one multiply. The work is split into contiguous chunks over
// `threads` threads; every element sees exactly the arithmetic of the scalar
// reference, so the result does not depend on the thread count.
//
// Blocks the calling thread until done. Thread-safe for disjoint arrays.

#ifndef ZERO3_CORE_ZERO_HOST_ADAM_H_
#define ZERO3_CORE_ZERO_HOST_ADAM_H_

#include "core/kernels/op_args.h"

namespace zero3 {
namespace zero {

void HostAdamWStep(const kernels::AdamWArgs& args, float grad_scale,
                   float* params, const float* grads, float* exp_avg,
                   float* exp_avg_sq, int threads);

// Threads to use when asked for `requested` (0 = all hardware threads).
int OptimizerThreads(int requested);

}  // namespace zero
}  // namespace zero3

#endif  // ZERO3_CORE_ZERO_HOST_ADAM_H_
