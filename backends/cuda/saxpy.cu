// Copyright 2026 The zero3 Authors.

#include "backends/cuda/saxpy.h"

#include <cuda_runtime.h>

namespace zero3 {
namespace cuda {
namespace {

__global__ void SaxpyKernel(float a, const float* x, float* y, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

}  // namespace

int LaunchSaxpy(float a, const float* x, float* y, int64_t n) {
  constexpr int kThreads = 256;
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  SaxpyKernel<<<static_cast<unsigned>(blocks), kThreads>>>(a, x, y, n);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace cuda
}  // namespace zero3
