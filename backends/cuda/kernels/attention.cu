// Copyright 2026 The zero3 Authors.
//
// Causal (or full) grouped-query attention on CUDA cores, forward and
// backward, for any element type and head_dim up to 256. This is the
// general path and the check on the tensor-core kernels of
// flash_attention.cu; it computes in fp32 throughout, so fp32 inputs match the
// reference to rounding.
//
// Forward: a block of 4 warps takes 16 query rows of one (batch, head), 4 rows
// per warp, and streams the keys in tiles of 32 through shared memory
// (converted to float). For each tile, lane j scores key j against the
// warp's 4 rows; the online softmax (running max and sum, as in
// FlashAttention) rescales the output accumulators, which each lane holds for
// its head_dim / 32 columns. Writes lse = max + log(sum) per row.
//
// Scores are scale * q.k (AttentionShape's scale, 1 / sqrt(head_dim) by
// default), soft-capped to softcap * tanh(score / softcap) where softcap > 0
// before the mask and the softmax; the backward pass then multiplies each
// ds by the cap's derivative 1 - (capped / softcap)^2.
//
// Backward: D_i = dO_i . O_i per row first (into scratch); then two kernels
// that need no atomics, so the result is deterministic:
//  - dQ: blocks of 16 query rows stream key tiles, rebuild p_ij from lse and
//    accumulate dq_i += scale * ds_ij k_j;
//  - dK, dV: blocks of 16 key rows of one kv head stream query tiles of every
//    query head of the group, accumulating dv_j += p_ij dO_i and
//    dk_j += scale * ds_ij q_i in the reference's order (head, then query).

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

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kRowsPerWarp = 4;
constexpr int kRows = kWarps * kRowsPerWarp;  // rows a block owns
constexpr int kTile = 32;                     // rows streamed per step

struct Dims {
  int64_t batch, seq, heads, kv_heads, head_dim, group;
  bool causal;
  float scale;
  float softcap;             // > 0: scores are soft-capped; 0: not
  const int32_t* positions;  // packed documents, or null
  int64_t window;            // sliding window, or 0
};

Dims MakeDims(const AttentionShape& s) {
  Dims d;
  d.batch = s.batch;
  d.seq = s.seq;
  d.heads = s.num_heads;
  d.kv_heads = s.num_kv_heads;
  d.head_dim = s.head_dim;
  d.group = s.num_heads / s.num_kv_heads;
  d.causal = s.causal;
  d.scale = ScoreScale(s);
  d.softcap = s.softcap;
  d.positions = s.positions;
  d.window = s.window;
  return d;
}

// Copies rows [first, first + count) of head `head` of a [batch * seq,
// heads, D] tensor into dst (row stride `stride` floats), zero past seq.
// Called by the whole block.
template <typename T>
__device__ __forceinline__ void LoadRows(const T& src, int64_t batch_row0,
                                         int64_t first, int count, int64_t seq,
                                         int64_t heads, int64_t head,
                                         int64_t head_dim, float* dst,
                                         int stride) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (int r = warp; r < count; r += kWarps) {
    const int64_t s = first + r;
    float* out = dst + r * stride;
    if (s < seq) {
      const int64_t base = ((batch_row0 + s) * heads + head) * head_dim;
      for (int64_t d = lane; d < head_dim; d += 32) out[d] = src.Load(base + d);
    } else {
      for (int64_t d = lane; d < head_dim; d += 32) out[d] = 0.0f;
    }
  }
}

// The capped score of q.k = qk: the reference's float operations (the
// product rounded, then the cap), kept apart from the uncapped path's
// arithmetic so that the compiler shares nothing between them.
__device__ __forceinline__ float CappedScore(const Dims& dims, float qk) {
  return Softcap(__fmul_rn(dims.scale, qk), dims.softcap);
}

// The probability exp(score - lse) of an unmasked q.k = qk, and in `grad`
// the derivative of the cap at the score (1 without one).
__device__ __forceinline__ float Probability(const Dims& dims, float qk,
                                             float lse, float* grad) {
  if (dims.softcap > 0.0f) {
    const float capped = CappedScore(dims, qk);
    *grad = SoftcapGrad(capped, dims.softcap);
    return expf(capped - lse);
  }
  *grad = 1.0f;
  return expf(dims.scale * qk - lse);
}

// ---------------------------------------------------------------------------
// Forward.

template <int kDL, typename T>
__global__ void __launch_bounds__(kThreads)
    AttentionForwardKernel(T q, T k, T v, T out, Dyn lse, Dims dims) {
  extern __shared__ float smem[];
  const int D = static_cast<int>(dims.head_dim);
  float* qs = smem;                  // [kRows][D]
  float* ks = qs + kRows * D;        // [kTile][D + 1]
  float* vs = ks + kTile * (D + 1);  // [kTile][D]
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t S = dims.seq;
  // Longest blocks (last query rows, under a causal mask) start first.
  const int64_t q0 = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * kRows;
  const int64_t b = blockIdx.y / dims.heads;
  const int64_t h = blockIdx.y % dims.heads;
  const int64_t g = h / dims.group;
  const int64_t row0 = b * S;

  LoadRows(q, row0, q0, kRows, S, dims.heads, h, D, qs, D);

  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kDL];
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    m[rr] = -INFINITY;
    l[rr] = 0.0f;
#pragma unroll
    for (int c = 0; c < kDL; ++c) acc[rr][c] = 0.0f;
  }
  const int64_t key_end = dims.causal ? (q0 + kRows < S ? q0 + kRows : S) : S;
  for (int64_t k0 = 0; k0 < key_end; k0 += kTile) {
    __syncthreads();  // the previous tile is consumed
    LoadRows(k, row0, k0, kTile, S, dims.kv_heads, g, D, ks, D + 1);
    LoadRows(v, row0, k0, kTile, S, dims.kv_heads, g, D, vs, D);
    __syncthreads();
    // Scores of key k0 + lane against the warp's rows.
    float dot[kRowsPerWarp] = {};
    const float* krow = ks + lane * (D + 1);
    for (int d = 0; d < D; ++d) {
      const float kd = krow[d];
#pragma unroll
      for (int rr = 0; rr < kRowsPerWarp; ++rr) {
        dot[rr] += qs[(warp * kRowsPerWarp + rr) * D + d] * kd;
      }
    }
    const int64_t j = k0 + lane;
    float p[kRowsPerWarp];
#pragma unroll
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      const int64_t i = q0 + warp * kRowsPerWarp + rr;
      const bool masked =
          j >= S || (dims.causal && j > i) ||
          (i < S && OutsideDocument(dims.positions, dims.window, row0, i, j));
      const float s = masked                ? -INFINITY
                      : dims.softcap > 0.0f ? CappedScore(dims, dot[rr])
                                            : dims.scale * dot[rr];
      const float tile_max = WarpMax(s);
      const float m_new = fmaxf(m[rr], tile_max);
      if (m_new == -INFINITY) {  // nothing visible yet (only past seq)
        p[rr] = 0.0f;
        continue;
      }
      p[rr] = masked ? 0.0f : expf(s - m_new);
      const float correction = expf(m[rr] - m_new);  // 0 when m was -inf
      l[rr] = l[rr] * correction + WarpSum(p[rr]);
#pragma unroll
      for (int c = 0; c < kDL; ++c) acc[rr][c] *= correction;
      m[rr] = m_new;
    }
    const int count = S - k0 < kTile ? static_cast<int>(S - k0) : kTile;
    for (int jj = 0; jj < count; ++jj) {
      float pj[kRowsPerWarp];
#pragma unroll
      for (int rr = 0; rr < kRowsPerWarp; ++rr) {
        pj[rr] = __shfl_sync(0xFFFFFFFFu, p[rr], jj);
      }
      const float* vrow = vs + jj * D;
#pragma unroll
      for (int c = 0; c < kDL; ++c) {
        const int d = lane + 32 * c;
        const float vd = d < D ? vrow[d] : 0.0f;
#pragma unroll
        for (int rr = 0; rr < kRowsPerWarp; ++rr) acc[rr][c] += pj[rr] * vd;
      }
    }
  }
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    const int64_t i = q0 + warp * kRowsPerWarp + rr;
    if (i >= S) continue;
    const int64_t base = ((row0 + i) * dims.heads + h) * D;
#pragma unroll
    for (int c = 0; c < kDL; ++c) {
      const int d = lane + 32 * c;
      if (d < D) out.Store(base + d, acc[rr][c] / l[rr]);
    }
    if (lane == 0) {
      lse.Store((b * dims.heads + h) * S + i,
                static_cast<float>(static_cast<double>(m[rr]) +
                                   log(static_cast<double>(l[rr]))));
    }
  }
}

// ---------------------------------------------------------------------------
// Backward.

// delta[(b * heads + h) * seq + s] = dO . O over head_dim; one warp per
// (row, head).
template <typename T>
__global__ void AttentionDeltaKernel(T out, T d_out, float* delta, Dims dims) {
  const int64_t rows = dims.batch * dims.seq * dims.heads;
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x >> 5);
  for (int64_t w = GlobalThread() >> 5; w < rows; w += warps) {
    const int64_t base = w * dims.head_dim;
    float sum = 0.0f;
    for (int64_t d = lane; d < dims.head_dim; d += 32) {
      sum += d_out.Load(base + d) * out.Load(base + d);
    }
    sum = WarpSum(sum);
    if (lane == 0) {
      const int64_t h = w % dims.heads;
      const int64_t bs = w / dims.heads;  // b * seq + s
      const int64_t b = bs / dims.seq, s = bs % dims.seq;
      delta[(b * dims.heads + h) * dims.seq + s] = sum;
    }
  }
}

template <int kDL, typename T>
__global__ void __launch_bounds__(kThreads)
    AttentionDqKernel(T q, T k, T v, Dyn lse, const float* delta, T d_out, T dq,
                      Dims dims) {
  extern __shared__ float smem[];
  const int D = static_cast<int>(dims.head_dim);
  float* qs = smem;                  // [kRows][D]
  float* dos = qs + kRows * D;       // [kRows][D]
  float* ks = dos + kRows * D;       // [kTile][D + 1]
  float* vs = ks + kTile * (D + 1);  // [kTile][D + 1]
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t S = dims.seq;
  const int64_t q0 = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * kRows;
  const int64_t b = blockIdx.y / dims.heads;
  const int64_t h = blockIdx.y % dims.heads;
  const int64_t g = h / dims.group;
  const int64_t row0 = b * S;
  const int64_t stat0 = (b * dims.heads + h) * S;

  LoadRows(q, row0, q0, kRows, S, dims.heads, h, D, qs, D);
  LoadRows(d_out, row0, q0, kRows, S, dims.heads, h, D, dos, D);

  float row_lse[kRowsPerWarp], row_delta[kRowsPerWarp];
  float acc[kRowsPerWarp][kDL];
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    const int64_t i = q0 + warp * kRowsPerWarp + rr;
    row_lse[rr] = i < S ? lse.Load(stat0 + i) : 0.0f;
    row_delta[rr] = i < S ? delta[stat0 + i] : 0.0f;
#pragma unroll
    for (int c = 0; c < kDL; ++c) acc[rr][c] = 0.0f;
  }
  const int64_t key_end = dims.causal ? (q0 + kRows < S ? q0 + kRows : S) : S;
  for (int64_t k0 = 0; k0 < key_end; k0 += kTile) {
    __syncthreads();
    LoadRows(k, row0, k0, kTile, S, dims.kv_heads, g, D, ks, D + 1);
    LoadRows(v, row0, k0, kTile, S, dims.kv_heads, g, D, vs, D + 1);
    __syncthreads();
    float qk[kRowsPerWarp] = {}, dov[kRowsPerWarp] = {};
    const float* krow = ks + lane * (D + 1);
    const float* vrow = vs + lane * (D + 1);
    for (int d = 0; d < D; ++d) {
      const float kd = krow[d], vd = vrow[d];
#pragma unroll
      for (int rr = 0; rr < kRowsPerWarp; ++rr) {
        qk[rr] += qs[(warp * kRowsPerWarp + rr) * D + d] * kd;
        dov[rr] += dos[(warp * kRowsPerWarp + rr) * D + d] * vd;
      }
    }
    const int64_t j = k0 + lane;
    float sds[kRowsPerWarp];  // scale * ds
#pragma unroll
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      const int64_t i = q0 + warp * kRowsPerWarp + rr;
      const bool masked =
          i >= S || j >= S || (dims.causal && j > i) ||
          OutsideDocument(dims.positions, dims.window, row0, i, j);
      float grad = 1.0f;
      const float p =
          masked ? 0.0f : Probability(dims, qk[rr], row_lse[rr], &grad);
      sds[rr] = dims.scale * (p * (dov[rr] - row_delta[rr]) * grad);
    }
    const int count = S - k0 < kTile ? static_cast<int>(S - k0) : kTile;
    for (int jj = 0; jj < count; ++jj) {
      float sj[kRowsPerWarp];
#pragma unroll
      for (int rr = 0; rr < kRowsPerWarp; ++rr) {
        sj[rr] = __shfl_sync(0xFFFFFFFFu, sds[rr], jj);
      }
      const float* kr = ks + jj * (D + 1);
#pragma unroll
      for (int c = 0; c < kDL; ++c) {
        const int d = lane + 32 * c;
        const float kd = d < D ? kr[d] : 0.0f;
#pragma unroll
        for (int rr = 0; rr < kRowsPerWarp; ++rr) acc[rr][c] += sj[rr] * kd;
      }
    }
  }
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    const int64_t i = q0 + warp * kRowsPerWarp + rr;
    if (i >= S) continue;
    const int64_t base = ((row0 + i) * dims.heads + h) * D;
#pragma unroll
    for (int c = 0; c < kDL; ++c) {
      const int d = lane + 32 * c;
      if (d < D) dq.Store(base + d, acc[rr][c]);
    }
  }
}

template <int kDL, typename T>
__global__ void __launch_bounds__(kThreads)
    AttentionDkvKernel(T q, T k, T v, Dyn lse, const float* delta, T d_out,
                       T dk, T dv, Dims dims) {
  extern __shared__ float smem[];
  const int D = static_cast<int>(dims.head_dim);
  float* ks = smem;                   // [kRows][D]
  float* vs = ks + kRows * D;         // [kRows][D]
  float* qs = vs + kRows * D;         // [kTile][D + 1]
  float* dos = qs + kTile * (D + 1);  // [kTile][D + 1]
  float* lse_s = dos + kTile * (D + 1);
  float* delta_s = lse_s + kTile;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t S = dims.seq;
  const int64_t k0 = static_cast<int64_t>(blockIdx.x) * kRows;
  const int64_t b = blockIdx.y / dims.kv_heads;
  const int64_t g = blockIdx.y % dims.kv_heads;
  const int64_t row0 = b * S;

  LoadRows(k, row0, k0, kRows, S, dims.kv_heads, g, D, ks, D);
  LoadRows(v, row0, k0, kRows, S, dims.kv_heads, g, D, vs, D);

  float dk_acc[kRowsPerWarp][kDL], dv_acc[kRowsPerWarp][kDL];
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
#pragma unroll
    for (int c = 0; c < kDL; ++c) dk_acc[rr][c] = dv_acc[rr][c] = 0.0f;
  }
  // Under a causal mask only queries i >= k0 see these keys.
  const int64_t first_tile = dims.causal ? k0 / kTile * kTile : 0;
  for (int64_t hh = 0; hh < dims.group; ++hh) {
    const int64_t h = g * dims.group + hh;
    const int64_t stat0 = (b * dims.heads + h) * S;
    for (int64_t i0 = first_tile; i0 < S; i0 += kTile) {
      __syncthreads();
      LoadRows(q, row0, i0, kTile, S, dims.heads, h, D, qs, D + 1);
      LoadRows(d_out, row0, i0, kTile, S, dims.heads, h, D, dos, D + 1);
      if (threadIdx.x < kTile) {
        const int64_t i = i0 + threadIdx.x;
        lse_s[threadIdx.x] = i < S ? lse.Load(stat0 + i) : 0.0f;
        delta_s[threadIdx.x] = i < S ? delta[stat0 + i] : 0.0f;
      }
      __syncthreads();
      float qk[kRowsPerWarp] = {}, dov[kRowsPerWarp] = {};
      const float* qrow = qs + lane * (D + 1);
      const float* dorow = dos + lane * (D + 1);
      for (int d = 0; d < D; ++d) {
        const float qd = qrow[d], dod = dorow[d];
#pragma unroll
        for (int rr = 0; rr < kRowsPerWarp; ++rr) {
          qk[rr] += ks[(warp * kRowsPerWarp + rr) * D + d] * qd;
          dov[rr] += vs[(warp * kRowsPerWarp + rr) * D + d] * dod;
        }
      }
      const int64_t i = i0 + lane;
      float p[kRowsPerWarp], sds[kRowsPerWarp];
#pragma unroll
      for (int rr = 0; rr < kRowsPerWarp; ++rr) {
        const int64_t j = k0 + warp * kRowsPerWarp + rr;
        const bool masked =
            i >= S || j >= S || (dims.causal && j > i) ||
            OutsideDocument(dims.positions, dims.window, row0, i, j);
        float grad = 1.0f;
        p[rr] = masked ? 0.0f : Probability(dims, qk[rr], lse_s[lane], &grad);
        sds[rr] = dims.scale * (p[rr] * (dov[rr] - delta_s[lane]) * grad);
      }
      const int count = S - i0 < kTile ? static_cast<int>(S - i0) : kTile;
      for (int ii = 0; ii < count; ++ii) {
        float pi[kRowsPerWarp], si[kRowsPerWarp];
#pragma unroll
        for (int rr = 0; rr < kRowsPerWarp; ++rr) {
          pi[rr] = __shfl_sync(0xFFFFFFFFu, p[rr], ii);
          si[rr] = __shfl_sync(0xFFFFFFFFu, sds[rr], ii);
        }
        const float* qr = qs + ii * (D + 1);
        const float* dor = dos + ii * (D + 1);
#pragma unroll
        for (int c = 0; c < kDL; ++c) {
          const int d = lane + 32 * c;
          const float qd = d < D ? qr[d] : 0.0f;
          const float dod = d < D ? dor[d] : 0.0f;
#pragma unroll
          for (int rr = 0; rr < kRowsPerWarp; ++rr) {
            dv_acc[rr][c] += pi[rr] * dod;
            dk_acc[rr][c] += si[rr] * qd;
          }
        }
      }
    }
  }
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    const int64_t j = k0 + warp * kRowsPerWarp + rr;
    if (j >= S) continue;
    const int64_t base = ((row0 + j) * dims.kv_heads + g) * D;
#pragma unroll
    for (int c = 0; c < kDL; ++c) {
      const int d = lane + 32 * c;
      if (d < D) {
        dk.Store(base + d, dk_acc[rr][c]);
        dv.Store(base + d, dv_acc[rr][c]);
      }
    }
  }
}

// Calls f(accessor prototype, integral_constant<kDL>) with Typed accessors
// when all tensors share a dtype, Dyn otherwise.
template <typename F>
cudaError_t Dispatch(int64_t head_dim, std::initializer_list<Tensor> tensors,
                     F&& f) {
  auto with_dl = [&](auto proto) {
    if (head_dim <= 64) {
      f(proto, std::integral_constant<int, 2>());
    } else if (head_dim <= 128) {
      f(proto, std::integral_constant<int, 4>());
    } else {
      f(proto, std::integral_constant<int, 8>());
    }
  };
  const DT dtype = tensors.begin()->dtype;
  bool same = true;
  for (const Tensor& t : tensors) same = same && t.dtype == dtype;
  if (same) {
    DispatchDType(dtype, [&](auto tag) {
      with_dl(Typed<decltype(tag)>(*tensors.begin()));
      return 0;
    });
  } else {
    with_dl(Dyn(*tensors.begin()));
  }
  return cudaGetLastError();
}

// Raises the dynamic shared memory limit of `kernel` when `bytes` needs it.
template <typename K>
cudaError_t AllowSharedMemory(K kernel, size_t bytes) {
  if (bytes <= 48 * 1024) return cudaSuccess;
  return cudaFuncSetAttribute(kernel,
                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(bytes));
}

}  // namespace

cudaError_t LaunchAttentionForwardSimple(const Env& env,
                                         const AttentionShape& shape, Tensor q,
                                         Tensor k, Tensor v, Tensor out,
                                         Tensor lse) {
  if (shape.batch <= 0 || shape.seq <= 0) return cudaSuccess;
  const Dims dims = MakeDims(shape);
  const int64_t D = shape.head_dim;
  const size_t smem = sizeof(float) * (kRows * D + kTile * (D + 1) + kTile * D);
  const dim3 grid(static_cast<unsigned>((shape.seq + kRows - 1) / kRows),
                  static_cast<unsigned>(shape.batch * shape.num_heads));
  cudaError_t err = cudaSuccess;
  const cudaError_t launch =
      Dispatch(D, {q, k, v, out}, [&](auto proto, auto dl) {
        using T = decltype(proto);
        auto kernel = AttentionForwardKernel<decltype(dl)::value, T>;
        err = AllowSharedMemory(kernel, smem);
        if (err != cudaSuccess) return;
        kernel<<<grid, kThreads, smem, env.stream>>>(T(q), T(k), T(v), T(out),
                                                     Dyn(lse), dims);
      });
  return err != cudaSuccess ? err : launch;
}

cudaError_t LaunchAttentionDelta(const Env& env, const AttentionShape& shape,
                                 Tensor out, Tensor d_out, float* delta) {
  if (shape.batch <= 0 || shape.seq <= 0) return cudaSuccess;
  const Dims dims = MakeDims(shape);
  const int64_t rows = shape.batch * shape.seq * shape.num_heads;
  const unsigned grid = GridFor(rows * 32, 256, env.sm_count);
  if (out.dtype == d_out.dtype) {
    DispatchDType(out.dtype, [&](auto tag) {
      using T = Typed<decltype(tag)>;
      AttentionDeltaKernel<<<grid, 256, 0, env.stream>>>(T(out), T(d_out),
                                                         delta, dims);
      return 0;
    });
  } else {
    AttentionDeltaKernel<<<grid, 256, 0, env.stream>>>(Dyn(out), Dyn(d_out),
                                                       delta, dims);
  }
  return cudaGetLastError();
}

int64_t AttentionBackwardScratchBytes(const AttentionShape& shape) {
  return AlignScratch(shape.batch * shape.num_heads * shape.seq *
                      static_cast<int64_t>(sizeof(float)));
}

cudaError_t LaunchAttentionBackwardSimple(const Env& env,
                                          const AttentionShape& shape, Tensor q,
                                          Tensor k, Tensor v, Tensor out,
                                          Tensor lse, Tensor d_out, Tensor dq,
                                          Tensor dk, Tensor dv) {
  if (shape.batch <= 0 || shape.seq <= 0) return cudaSuccess;
  const Dims dims = MakeDims(shape);
  const int64_t D = shape.head_dim;
  float* delta = static_cast<float*>(env.scratch);
  cudaError_t err = cudaSuccess;
  const cudaError_t launch =
      Dispatch(D, {q, k, v, out, d_out, dq, dk, dv}, [&](auto proto, auto dl) {
        using T = decltype(proto);
        constexpr int kDL = decltype(dl)::value;
        err = LaunchAttentionDelta(env, shape, out, d_out, delta);
        if (err != cudaSuccess) return;

        const size_t dq_smem =
            sizeof(float) * (2 * kRows * D + 2 * kTile * (D + 1));
        auto dq_kernel = AttentionDqKernel<kDL, T>;
        err = AllowSharedMemory(dq_kernel, dq_smem);
        if (err != cudaSuccess) return;
        const dim3 dq_grid(
            static_cast<unsigned>((shape.seq + kRows - 1) / kRows),
            static_cast<unsigned>(shape.batch * shape.num_heads));
        dq_kernel<<<dq_grid, kThreads, dq_smem, env.stream>>>(
            T(q), T(k), T(v), Dyn(lse), delta, T(d_out), T(dq), dims);
        err = cudaGetLastError();
        if (err != cudaSuccess) return;

        const size_t dkv_smem =
            sizeof(float) * (2 * kRows * D + 2 * kTile * (D + 1) + 2 * kTile);
        auto dkv_kernel = AttentionDkvKernel<kDL, T>;
        err = AllowSharedMemory(dkv_kernel, dkv_smem);
        if (err != cudaSuccess) return;
        const dim3 dkv_grid(
            static_cast<unsigned>((shape.seq + kRows - 1) / kRows),
            static_cast<unsigned>(shape.batch * shape.num_kv_heads));
        dkv_kernel<<<dkv_grid, kThreads, dkv_smem, env.stream>>>(
            T(q), T(k), T(v), Dyn(lse), delta, T(d_out), T(dk), T(dv), dims);
      });
  return err != cudaSuccess ? err : launch;
}

}  // namespace internal
}  // namespace cuda
}  // namespace zero3
