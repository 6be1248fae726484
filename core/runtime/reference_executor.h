// Copyright 2026 The zero3 Authors.
//
// reference_executor.h: runs a KernelCall with the CPU reference kernels on
// tensors in host memory: the simulator's data mode, and the reference the
// CUDA kernels' tests compare against.
//
// Tensors of fp32 are used in place; bf16 and fp16 tensors are widened to
// fp32, computed, and stored back rounded to nearest even, which is what the
// CUDA kernels do with fp32 accumulation. Thread-compatible.

#ifndef ZERO3_CORE_RUNTIME_REFERENCE_EXECUTOR_H_
#define ZERO3_CORE_RUNTIME_REFERENCE_EXECUTOR_H_

#include "absl/status/status.h"
#include "core/runtime/kernel_call.h"

namespace zero3 {
namespace runtime {

// Fails if a tensor has no bytes behind it or the op's sizes disagree with
// its tensors (naming the op and the tensor).
absl::Status ExecuteReference(const KernelCall& call);

}  // namespace runtime
}  // namespace zero3

#endif  // ZERO3_CORE_RUNTIME_REFERENCE_EXECUTOR_H_
