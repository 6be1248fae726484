// Copyright 2026 The zero3 Authors.
//
// Rotary position embedding, forward and backward (the inverse rotation).
//
// One thread per (row, frequency) pair loops over the heads of the row, so
// each angle's cos and sin are computed once per row rather than once per
// head. The angle position * inv_freq(i) (theta^(-2i / rotary_dim), or the
// scaled RoPE's table entry) and its cos and sin times the attention scaling
// are computed in double, as the reference does, then rounded to float: at
// positions in the thousands a float angle would be off by ~1e-4 radians.

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/kernels/device_ops.h"
#include "backends/cuda/kernels/device_util.h"

namespace zero3 {
namespace cuda {
namespace internal {
namespace {

constexpr int kThreads = 256;

template <typename X, typename Y>
__global__ void __launch_bounds__(kThreads)
    RotaryKernel(X x, Y y, int64_t rows, int64_t seq, int64_t heads,
                 int64_t head_dim, RotaryFrequencies freq, double sign,
                 const int32_t* positions) {
  const int64_t half = freq.rotary_dim / 2;
  const int64_t pairs = rows * half;
  const double scaling = freq.attention_scaling;
  for (int64_t p = GlobalThread(); p < pairs; p += GridStride()) {
    const int64_t row = p / half;
    const int64_t i = p - row * half;
    // Packed documents: the row's place in its document.
    const int64_t position = positions != nullptr ? positions[row] : row % seq;
    const double inv_freq = freq.has_inv_freq
                                ? static_cast<double>(freq.inv_freq[i])
                                : pow(static_cast<double>(freq.theta),
                                      -2.0 * static_cast<double>(i) /
                                          static_cast<double>(freq.rotary_dim));
    const double angle = static_cast<double>(position) * inv_freq;
    double s, c;
    sincos(angle, &s, &c);
    const float cs = static_cast<float>(c * scaling);
    const float sn = static_cast<float>(sign * s * scaling);
    const int64_t base = row * heads * head_dim + i;
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t at = base + h * head_dim;
      const float x1 = x.Load(at);
      const float x2 = x.Load(at + half);
      // Both inputs are read before either output is written: y may alias x.
      y.Store(at, __fsub_rn(__fmul_rn(x1, cs), __fmul_rn(x2, sn)));
      y.Store(at + half, __fadd_rn(__fmul_rn(x2, cs), __fmul_rn(x1, sn)));
    }
  }
}

// The dimensions past rotary_dim, copied from x to y.
template <typename X, typename Y>
__global__ void __launch_bounds__(kThreads)
    PassThroughKernel(X x, Y y, int64_t rows_heads, int64_t head_dim,
                      int64_t rotary_dim) {
  const int64_t rest = head_dim - rotary_dim;
  const int64_t n = rows_heads * rest;
  for (int64_t p = GlobalThread(); p < n; p += GridStride()) {
    const int64_t at = (p / rest) * head_dim + rotary_dim + p % rest;
    y.Store(at, x.Load(at));
  }
}

}  // namespace

cudaError_t LaunchRotary(const Env& env, int64_t batch, int64_t seq,
                         int64_t heads, int64_t head_dim,
                         const RotaryFrequencies& freq, bool inverse, Tensor x,
                         Tensor y, const int32_t* positions) {
  const int64_t rows = batch * seq;
  const int64_t pairs = rows * (freq.rotary_dim / 2);
  if (pairs <= 0 || heads <= 0) return cudaSuccess;
  const unsigned grid = GridFor(pairs, kThreads, env.sm_count);
  const double sign = inverse ? -1.0 : 1.0;
  // Always launched for a partial rotation (launch_count.cc counts it);
  // in place it rewrites what is there.
  const bool copy_rest = freq.rotary_dim < head_dim;
  const unsigned rest_grid = GridFor(
      rows * heads * (head_dim - freq.rotary_dim), kThreads, env.sm_count);
  if (x.dtype == y.dtype) {
    DispatchDType(x.dtype, [&](auto tag) {
      using T = Typed<decltype(tag)>;
      RotaryKernel<<<grid, kThreads, 0, env.stream>>>(
          T(x), T(y), rows, seq, heads, head_dim, freq, sign, positions);
      if (copy_rest) {
        PassThroughKernel<<<rest_grid, kThreads, 0, env.stream>>>(
            T(x), T(y), rows * heads, head_dim, freq.rotary_dim);
      }
      return 0;
    });
  } else {
    RotaryKernel<<<grid, kThreads, 0, env.stream>>>(
        Dyn(x), Dyn(y), rows, seq, heads, head_dim, freq, sign, positions);
    if (copy_rest) {
      PassThroughKernel<<<rest_grid, kThreads, 0, env.stream>>>(
          Dyn(x), Dyn(y), rows * heads, head_dim, freq.rotary_dim);
    }
  }
  return cudaGetLastError();
}

}  // namespace internal
}  // namespace cuda
}  // namespace zero3
