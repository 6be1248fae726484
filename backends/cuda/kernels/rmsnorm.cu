// Copyright 2026 The zero3 Authors.
//
// RMSNorm forward and backward.
//
// One block per row (a grid-stride loop over rows). The row statistics (the
// mean of squares, the projection sum(dy * w * x)) accumulate in double, as
// the reference does, at no cost that matters for a memory-bound kernel. The
// row is scaled by (offset + weight), the sum rounded to float as the
// reference rounds it (offset 1 for Gemma's RMSNorm; with offset 0 the weight
// is used as loaded, so the arithmetic is that of plain RMSNorm). The
// weight gradient is summed without atomics: each block accumulates its rows
// into a private fp32 row (in shared memory when it fits), the rows of all
// blocks are reduced by column in a fixed order and added to d_weight, so
// the result is deterministic.

#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "backends/cuda/kernels/device_ops.h"
#include "backends/cuda/kernels/device_util.h"

namespace zero3 {
namespace cuda {
namespace internal {
namespace {

constexpr int kVec = 8;
// Blocks of the backward pass, hence rows of weight-gradient partials. A
// constant, so the summation order does not depend on the GPU.
constexpr int64_t kBackwardBlocks = 512;
// Largest dim whose weight-gradient partial row lives in shared memory
// without raising the 48 KiB default limit, which also covers the kernel's
// static shared memory (256 bytes).
constexpr int64_t kMaxSharedDim = 47 * 1024 / sizeof(float);

int ThreadsFor(int64_t chunks) {
  int64_t threads = (chunks + 31) / 32 * 32;
  if (threads < 32) threads = 32;
  if (threads > 1024) threads = 1024;
  return static_cast<int>(threads);
}

// w[j] = offset + w[j] where offset is nonzero.
template <int N>
__device__ __forceinline__ void OffsetWeights(float (&w)[N], float offset) {
  if (offset != 0.0f) {
#pragma unroll
    for (int j = 0; j < N; ++j) w[j] = __fadd_rn(offset, w[j]);
  }
}

template <int N, typename T, typename R>
__global__ void RmsNormForwardKernel(T x, T weight, T y, R rstd, int64_t rows,
                                     int64_t dim, float eps, float offset) {
  __shared__ double shared[32];
  const int64_t chunks = dim / N;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t base = row * dim;
    double sum = 0.0;
    for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      float v[N];
      x.template Load<N>(base + c * N, v);
#pragma unroll
      for (int j = 0; j < N; ++j) {
        const double d = v[j];
        sum += d * d;
      }
    }
    sum = BlockSum(sum, shared);
    const float inv = static_cast<float>(
        1.0 / sqrt(sum / static_cast<double>(dim) + static_cast<double>(eps)));
    // Every read of this row's x happened before the barriers in BlockSum,
    // so y may alias x.
    for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      float v[N], w[N];
      x.template Load<N>(base + c * N, v);
      weight.template Load<N>(c * N, w);
      OffsetWeights(w, offset);
#pragma unroll
      for (int j = 0; j < N; ++j) v[j] = __fmul_rn(__fmul_rn(v[j], inv), w[j]);
      y.template Store<N>(base + c * N, v);
    }
    if (threadIdx.x == 0) rstd.Store(row, inv);
  }
}

// Each block handles rows blockIdx.x, blockIdx.x + gridDim.x, ... and writes
// its weight-gradient sums to partial[blockIdx.x * dim, ...).
template <int N, bool kSharedPartial, typename T, typename R>
__global__ void RmsNormBackwardKernel(T x, T weight, R rstd, T dy, T dx,
                                      int64_t rows, int64_t dim, float offset,
                                      float* partial) {
  __shared__ double shared[32];
  extern __shared__ float shared_partial[];
  float* dw = kSharedPartial ? shared_partial
                             : partial + static_cast<int64_t>(blockIdx.x) * dim;
  const int64_t chunks = dim / N;
  // Each thread owns the same columns throughout, so dw needs no barrier.
  for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
#pragma unroll
    for (int j = 0; j < N; ++j) dw[c * N + j] = 0.0f;
  }
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t base = row * dim;
    const float inv = rstd.Load(row);
    double dot = 0.0;
    for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      float xv[N], g[N], w[N];
      x.template Load<N>(base + c * N, xv);
      dy.template Load<N>(base + c * N, g);
      weight.template Load<N>(c * N, w);
      OffsetWeights(w, offset);
#pragma unroll
      for (int j = 0; j < N; ++j) {
        dot += static_cast<double>(g[j]) * static_cast<double>(w[j]) *
               static_cast<double>(xv[j]);
        dw[c * N + j] += __fmul_rn(__fmul_rn(g[j], xv[j]), inv);
      }
    }
    dot = BlockSum(dot, shared);
    const double inv_d = inv;
    const float coeff = static_cast<float>(dot * inv_d * inv_d * inv_d /
                                           static_cast<double>(dim));
    // All of this row's dy was read before the barriers: dx may alias dy.
    for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      float xv[N], g[N], w[N];
      x.template Load<N>(base + c * N, xv);
      dy.template Load<N>(base + c * N, g);
      weight.template Load<N>(c * N, w);
      OffsetWeights(w, offset);
#pragma unroll
      for (int j = 0; j < N; ++j) {
        g[j] = __fsub_rn(__fmul_rn(__fmul_rn(inv, g[j]), w[j]),
                         __fmul_rn(coeff, xv[j]));
      }
      dx.template Store<N>(base + c * N, g);
    }
  }
  if constexpr (kSharedPartial) {
    float* out = partial + static_cast<int64_t>(blockIdx.x) * dim;
    for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
#pragma unroll
      for (int j = 0; j < N; ++j) out[c * N + j] = dw[c * N + j];
    }
  }
}

int64_t BackwardBlocks(int64_t rows) {
  return rows < kBackwardBlocks ? rows : kBackwardBlocks;
}

// Calls f(accessor-type tag, N) with Typed accessors and N = 8 when x, weight,
// y/dy and dx share a dtype, are 16-byte aligned and dim is a multiple of 8;
// Typed with N = 1 when they share a dtype otherwise; Dyn when they do not.
template <typename F>
cudaError_t DispatchRow(int64_t dim, std::initializer_list<Tensor> tensors,
                        F&& f) {
  const DT dtype = tensors.begin()->dtype;
  bool same = true, aligned = dim % kVec == 0;
  for (const Tensor& t : tensors) {
    same = same && t.dtype == dtype;
    aligned = aligned && Aligned16(t.data);
  }
  if (!same) {
    f(Dyn(*tensors.begin()), std::integral_constant<int, 1>());
  } else {
    DispatchDType(dtype, [&](auto tag) {
      const Typed<decltype(tag)> proto(*tensors.begin());
      if (aligned) {
        f(proto, std::integral_constant<int, kVec>());
      } else {
        f(proto, std::integral_constant<int, 1>());
      }
      return 0;
    });
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchRmsNormForward(const Env& env, int64_t rows, int64_t dim,
                                 float eps, float weight_offset, Tensor x,
                                 Tensor weight, Tensor y, Tensor rstd) {
  if (rows <= 0 || dim <= 0) return cudaSuccess;
  int64_t blocks = rows < 65535 * 8 ? rows : 65535 * 8;
  return DispatchRow(dim, {x, weight, y}, [&](auto proto, auto n) {
    using T = decltype(proto);
    constexpr int N = decltype(n)::value;
    RmsNormForwardKernel<N>
        <<<static_cast<unsigned>(blocks), ThreadsFor(dim / N), 0, env.stream>>>(
            T(x), T(weight), T(y), Dyn(rstd), rows, dim, eps, weight_offset);
  });
}

int64_t RmsNormBackwardScratchBytes(int64_t rows, int64_t dim) {
  const int64_t blocks = BackwardBlocks(rows);
  return AlignScratch(blocks * dim * static_cast<int64_t>(sizeof(float))) +
         AlignScratch(ColumnSplits(blocks) * dim *
                      static_cast<int64_t>(sizeof(float)));
}

cudaError_t LaunchRmsNormBackward(const Env& env, int64_t rows, int64_t dim,
                                  float weight_offset, Tensor x, Tensor weight,
                                  Tensor rstd, Tensor dy, Tensor dx,
                                  Tensor d_weight) {
  if (rows <= 0 || dim <= 0) return cudaSuccess;
  const int64_t blocks = BackwardBlocks(rows);
  ScratchCarver carver(env.scratch);
  float* partial = carver.Take<float>(blocks * dim);
  const int64_t splits = ColumnSplits(blocks);
  float* partial2 = carver.Take<float>(splits * dim);
  const bool shared = dim <= kMaxSharedDim;
  const size_t shared_bytes = shared ? dim * sizeof(float) : 0;
  cudaError_t err =
      DispatchRow(dim, {x, weight, dy, dx}, [&](auto proto, auto n) {
        using T = decltype(proto);
        constexpr int N = decltype(n)::value;
        const unsigned grid = static_cast<unsigned>(blocks);
        const int threads = ThreadsFor(dim / N);
        if (shared) {
          RmsNormBackwardKernel<N, true>
              <<<grid, threads, shared_bytes, env.stream>>>(
                  T(x), T(weight), Dyn(rstd), T(dy), T(dx), rows, dim,
                  weight_offset, partial);
        } else {
          RmsNormBackwardKernel<N, false><<<grid, threads, 0, env.stream>>>(
              T(x), T(weight), Dyn(rstd), T(dy), T(dx), rows, dim,
              weight_offset, partial);
        }
      });
  if (err != cudaSuccess) return err;
  // Reduce the per-block rows by column in two ordered steps.
  const dim3 grid(static_cast<unsigned>((dim + kColumnTile - 1) / kColumnTile),
                  static_cast<unsigned>(splits));
  ColumnPartialSums<<<grid, dim3(kColumnTile, kColumnRowLanes), 0,
                      env.stream>>>(Typed<F32>(Tensor{partial, DT::kF32}),
                                    blocks, dim, partial2);
  err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  FinalizeColumns<<<GridFor(dim, 256, env.sm_count), 256, 0, env.stream>>>(
      partial2, splits, dim, Dyn(d_weight));
  return cudaGetLastError();
}

}  // namespace internal
}  // namespace cuda
}  // namespace zero3
