// Copyright 2026 The zero3 Authors.
//
// Reductions: the sum of squares behind gradient norms (double precision,
// two fp32 words out) and the bias gradient (column sums).
//
// Both are deterministic: a fixed number of blocks for a given size, each
// writing a partial in scratch, then one ordered pass over the partials. No
// atomics, so a rerun on the same inputs gives the same bits.

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/kernels/device_ops.h"
#include "backends/cuda/kernels/device_util.h"

namespace zero3 {
namespace cuda {
namespace internal {
namespace {

constexpr int kThreads = 256;
constexpr int kVec = 8;
constexpr int64_t kMaxSumSquaresBlocks = 1024;

// Depends only on n: the partials, and so the rounding of the result, are
// the same on every GPU.
int64_t SumSquaresBlocks(int64_t n) {
  int64_t blocks = (n + kThreads * kVec - 1) / (kThreads * kVec);
  if (blocks > kMaxSumSquaresBlocks) blocks = kMaxSumSquaresBlocks;
  return blocks;
}

template <int N, typename X>
__global__ void __launch_bounds__(kThreads)
    SumSquaresPartial(X x, int64_t n, double* partial) {
  __shared__ double shared[32];
  double sum = 0.0;
  const int64_t chunks = n / N;
  for (int64_t c = GlobalThread(); c < chunks; c += GridStride()) {
    float v[N];
    x.template Load<N>(c * N, v);
#pragma unroll
    for (int j = 0; j < N; ++j) {
      const double d = v[j];
      sum += d * d;
    }
  }
  for (int64_t i = chunks * N + GlobalThread(); i < n; i += GridStride()) {
    const double d = x.Load(i);
    sum += d * d;
  }
  sum = BlockSum(sum, shared);
  if (threadIdx.x == 0) partial[blockIdx.x] = sum;
}

// One block: out = [hi, lo] of base + sum of the partials.
__global__ void __launch_bounds__(kThreads)
    SumSquaresFinal(const double* partial, int64_t count, float* out,
                    bool accumulate) {
  __shared__ double shared[32];
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) sum += partial[i];
  sum = BlockSum(sum, shared);
  if (threadIdx.x == 0) {
    const double base =
        accumulate ? static_cast<double>(out[0]) + static_cast<double>(out[1])
                   : 0.0;
    const double total = base + sum;
    const float hi = static_cast<float>(total);
    out[0] = hi;
    out[1] = static_cast<float>(total - static_cast<double>(hi));
  }
}

}  // namespace

int64_t SumSquaresScratchBytes(int64_t n) {
  return AlignScratch(SumSquaresBlocks(n) *
                      static_cast<int64_t>(sizeof(double)));
}

cudaError_t LaunchSumSquares(const Env& env, int64_t n, Tensor x, float* out,
                             bool accumulate) {
  double* partial = static_cast<double*>(env.scratch);
  const int64_t blocks = SumSquaresBlocks(n);
  if (blocks > 0) {
    DispatchDType(x.dtype, [&](auto tag) {
      using X = Typed<decltype(tag)>;
      const X acc(x);
      if (Aligned16(acc.p)) {
        SumSquaresPartial<kVec>
            <<<static_cast<unsigned>(blocks), kThreads, 0, env.stream>>>(
                acc, n, partial);
      } else {
        SumSquaresPartial<1>
            <<<static_cast<unsigned>(blocks), kThreads, 0, env.stream>>>(
                acc, n, partial);
      }
      return 0;
    });
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
  }
  SumSquaresFinal<<<1, kThreads, 0, env.stream>>>(partial, blocks, out,
                                                  accumulate);
  return cudaGetLastError();
}

int64_t BiasBackwardScratchBytes(int64_t rows, int64_t cols) {
  return AlignScratch(ColumnSplits(rows) * cols *
                      static_cast<int64_t>(sizeof(float)));
}

cudaError_t LaunchBiasBackward(const Env& env, int64_t rows, int64_t cols,
                               Tensor dy, Tensor d_bias) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  float* partial = static_cast<float*>(env.scratch);
  const int64_t splits = ColumnSplits(rows);
  const dim3 grid(static_cast<unsigned>((cols + kColumnTile - 1) / kColumnTile),
                  static_cast<unsigned>(splits));
  const dim3 block(kColumnTile, kColumnRowLanes);
  DispatchDType(dy.dtype, [&](auto tag) {
    ColumnPartialSums<<<grid, block, 0, env.stream>>>(Typed<decltype(tag)>(dy),
                                                      rows, cols, partial);
    return 0;
  });
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  FinalizeColumns<<<GridFor(cols, kThreads, env.sm_count), kThreads, 0,
                    env.stream>>>(partial, splits, cols, Dyn(d_bias));
  return cudaGetLastError();
}

}  // namespace internal
}  // namespace cuda
}  // namespace zero3
