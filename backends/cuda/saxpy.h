// Copyright 2026 The zero3 Authors.
//
// saxpy.h: the smallest CUDA target in the tree. It proves that .cu files
// compile with nvcc through zr_cuda_library and link into C++ targets in CI,
// where no GPU is present; its test runs on a GPU node and skips elsewhere.

#ifndef ZERO3_BACKENDS_CUDA_SAXPY_H_
#define ZERO3_BACKENDS_CUDA_SAXPY_H_

#include <cstdint>

namespace zero3 {
namespace cuda {

// y[i] = a * x[i] + y[i] for i < n, on device pointers, on the legacy stream.
// Returns the cudaError_t of the launch as an int (0 is success), so this
// header needs no CUDA include.
int LaunchSaxpy(float a, const float* x, float* y, int64_t n);

}  // namespace cuda
}  // namespace zero3

#endif  // ZERO3_BACKENDS_CUDA_SAXPY_H_
