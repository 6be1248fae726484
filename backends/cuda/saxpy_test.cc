// Copyright 2026 The zero3 Authors.

#include "backends/cuda/saxpy.h"

#include <cuda_runtime.h>

#include <vector>

#include "gtest/gtest.h"

namespace zero3 {
namespace cuda {
namespace {

TEST(SaxpyTest, MatchesHostComputation) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    GTEST_SKIP() << "no GPU visible";
  }
  constexpr int64_t kN = 1000;
  std::vector<float> x(kN), y(kN);
  for (int64_t i = 0; i < kN; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = 1.0f;
  }
  float* dx = nullptr;
  float* dy = nullptr;
  ASSERT_EQ(cudaMalloc(&dx, kN * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dy, kN * sizeof(float)), cudaSuccess);
  ASSERT_EQ(
      cudaMemcpy(dx, x.data(), kN * sizeof(float), cudaMemcpyHostToDevice),
      cudaSuccess);
  ASSERT_EQ(
      cudaMemcpy(dy, y.data(), kN * sizeof(float), cudaMemcpyHostToDevice),
      cudaSuccess);
  ASSERT_EQ(LaunchSaxpy(2.0f, dx, dy, kN), 0);
  ASSERT_EQ(
      cudaMemcpy(y.data(), dy, kN * sizeof(float), cudaMemcpyDeviceToHost),
      cudaSuccess);
  for (int64_t i = 0; i < kN; ++i) EXPECT_EQ(y[i], 2.0f * i + 1.0f) << i;
  cudaFree(dx);
  cudaFree(dy);
}

}  // namespace
}  // namespace cuda
}  // namespace zero3
