// Copyright 2026 The zero3 Authors.
//
// host_adam.h: the optimizer step on the host, over fp32 shards, or a bf16
// master (and moments) whose values the same fp32 arithmetic updates.
//
// DeepSpeed cpu_adam's math (core/kernels/reference.h, AdamWStep) applied to
// g · grad_scale, where grad_scale folds loss unscaling and gradient
// clipping into one multiply. The gradients may arrive in the model's dtype
// (bf16/fp16 widen to float exactly), and the step can write the updated
// parameters' working copy (bf16/fp16, rounded as core/kernels/dtype.h
// does) in the same pass: one read of every array instead of three, which
// is what makes the offloaded step memory-bound rather than cast-bound.
// A bf16 master and moments (DeepSpeed's bf16_master_weights_and_grads and
// bf16_optimizer_states) are widened as they are loaded and each result
// rounded to nearest even as it is stored: the reference AdamWStep on the
// widened values, rounded.
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
  // The master, updated in place: fp32, or bf16 where master_dtype says.
  void* params = nullptr;
  kernels::DType master_dtype = kernels::DType::kF32;
  const void* grads = nullptr;
  kernels::DType grad_dtype = kernels::DType::kF32;
  // The moments: fp32, or bf16 where moments_dtype says (only with a bf16
  // master: DeepSpeed's bf16_optimizer_states needs its master weights).
  void* exp_avg = nullptr;
  void* exp_avg_sq = nullptr;
  kernels::DType moments_dtype = kernels::DType::kF32;
  // Optional, all three or none: the updated master and moments go here
  // (in their dtypes) instead, and params, exp_avg, exp_avg_sq are only
  // read (out of place, the same bits as in place), written with streaming
  // stores so that the outputs are not read first: the same bytes of memory
  // traffic as in place. Must not overlap the inputs.
  void* params_out = nullptr;
  void* exp_avg_out = nullptr;
  void* exp_avg_sq_out = nullptr;
  // Optional: receives the updated parameters in `working_dtype` (bf16 with
  // a bf16 master, whose bits it then is).
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
// dst[i] = src[i] of `src_dtype` widened to float (exact), threaded.
void HostWidenToFloat(const void* src, kernels::DType src_dtype, float* dst,
                      int64_t n, int threads);

// Threads to use when asked for `requested`: 0 means every CPU this process
// may run on (its affinity mask, which `zero3 launch` narrows to the rank's
// share of the node), not every CPU of the machine.
int OptimizerThreads(int requested);

}  // namespace zero
}  // namespace zero3

#endif  // ZERO3_CORE_ZERO_HOST_ADAM_H_
