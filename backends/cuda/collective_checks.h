// Copyright 2026 The zero3 Authors.
//
// collective_checks.h: a rank function that exercises every collective of
// a Runtime's communicator and checks the results exactly.
//
// Data goes to the device and back by copies only (no kernels), and is
// integer-valued, so every result is exact in f32, bf16 and f16 whatever
// order the backend sums in. Used by the CUDA backend's tests in one
// process (several GPUs on threads) and across processes (RunCudaRank).
// Thread-compatible: each rank calls it with its own Runtime.

#ifndef ZERO3_BACKENDS_CUDA_COLLECTIVE_CHECKS_H_
#define ZERO3_BACKENDS_CUDA_COLLECTIVE_CHECKS_H_

#include "absl/status/status.h"
#include "core/kernels/dtype.h"
#include "core/runtime/runtime.h"

namespace zero3 {
namespace cuda {

// All-gather, reduce-scatter (sum), all-reduce (sum and max, in place) and
// broadcast from the last rank, on tensors of `dtype`; then checks that
// wrong shapes and host buffers are refused. Every rank of the job must
// call it. Returns an error describing the first wrong element.
absl::Status CheckCollectivesExactly(runtime::Runtime& rt,
                                     kernels::DType dtype);

}  // namespace cuda
}  // namespace zero3

#endif  // ZERO3_BACKENDS_CUDA_COLLECTIVE_CHECKS_H_
