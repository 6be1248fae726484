// Copyright 2026 The zero3 Authors.
//
// host_adam.h: the optimizer step on the host, over fp32 shards.
//
// DeepSpeed cpu_adam's math (core/kernels/reference.h, AdamWStep) applied to
// g · grad_scale, where grad_scale folds loss unscaling and gradient
// clipping into one multiply. The gradients may arrive in the model's dtype
// (bf16/fp16 widen to float exactly), and the step can write the updated
// parameters' working copy (bf16/fp16, rounded as core/kernels/dtype.h
// does) in the same pass: one read of every array instead of three, which
// is what makes the offloaded step memory-bound rather than cast-bound.
//
// The work is split into contiguous chunks over `threads` threads; every
// element sees exactly the arithmetic of the scalar reference, so results
// do not depend on the thread count.
//
// Blocks the calling thread until done. Thread-safe for disjoint arrays.

#ifndef ZERO3_CORE_ZERO_HOST_ADAM_H_
#define ZERO3_CORE_ZERO_HOST_ADAM_H_

#include <cstdint>

#include "core/kernels/dtype.h"
#include "core/kernels/op_args.h"

namespace zero3 {
namespace zero {

struct HostAdamWArrays {
  float* params = nullptr;  // fp32 master, updated in place
  const void* grads = nullptr;
  kernels::DType grad_dtype = kernels::DType::kF32;
  float* exp_avg = nullptr;
  float* exp_avg_sq = nullptr;
  // Optional, all three or none: the updated master and moments go here
  // instead, and params, exp_avg, exp_avg_sq are only read (out of place,
  // the same bits as in place), written with streaming stores so that the
  // outputs are not read first: the same bytes of memory traffic as in
  // place. Must not overlap the inputs.
  float* params_out = nullptr;
  float* exp_avg_out = nullptr;
  float* exp_avg_sq_out = nullptr;
  // Optional: receives the updated parameters in `working_dtype`.
  void* working = nullptr;
  kernels::DType working_dtype = kernels::DType::kF32;
};

// args.n elements of every array; gradients scaled by args.grad_scale.
void HostAdamWStep(const kernels::AdamWArgs& args,
                   const HostAdamWArrays& arrays, int threads);

// fp32 gradients, no working copy.
void HostAdamWStep(const kernels::AdamWArgs& args, float* params,
                   const float* grads, float* exp_avg, float* exp_avg_sq,
                   int threads);

// dst[i] = src[i] rounded to `dst_dtype`, as kernels::Cast does, threaded.
void HostCastFromFloat(const float* src, kernels::DType dst_dtype, void* dst,
                       int64_t n, int threads);

// Threads to use when asked for `requested`: 0 means every CPU this process
// may run on (its affinity mask, which `zero3 launch` narrows to the rank's
// share of the node), not every CPU of the machine.
int OptimizerThreads(int requested);

}  // namespace zero
}  // namespace zero3

#endif  // ZERO3_CORE_ZERO_HOST_ADAM_H_
