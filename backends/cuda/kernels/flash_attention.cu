// Copyright 2026 The zero3 Authors.
//
// Fused attention on tensor cores (FlashAttention-2 style), forward and
// backward, for bf16 or fp16 tensors with head_dim 64 or 128, causal or not,
// grouped-query heads.
//
// Building blocks: mma.sync m16n8k16 (fp32 accumulators), ldmatrix for every
// operand fragment, cp.async (16-byte, zero-filling rows past the sequence)
// into padded shared-memory tiles of 64 rows, double-buffered so the next
// tile loads while the current one is used. A block is 4 warps; each warp
// owns 16 rows of the block's 64-row tile.
//
// Forward: a block takes 64 query rows of one (batch, head); per key tile it
// computes S = Q K^T, the online softmax in registers (row max and sum across
// the 4 threads of a quad), and O += P V with P taken straight from the S
// accumulators (the accumulator layout of S is the A-operand layout of P).
// Writes O and lse = max + log(sum).
//
// Backward (no atomics, deterministic), after delta = rowsum(dO * O):
//  - dK, dV: a block takes 64 keys of one kv head and streams 64-query tiles
//    of every query head of the group; per 32 queries it forms S^T = K Q^T,
//    P^T = exp(S^T - lse), dP^T = V dO^T, dS^T = P^T (dP^T - delta), then
//    dV += P^T dO and dK += dS^T Q (scale applied at the end).
//  - dQ: a block takes 64 queries and streams key tiles: S, P, dP = dO V^T,
//    dS, dQ += dS K.
// P and dS are rounded to the input type for the second product of each
// pair, as FlashAttention does; everything else accumulates in fp32.
//
// Scores are scale * q.k (AttentionShape's scale, 1 / sqrt(head_dim) by
// default). With soft-capping (softcap > 0; a template flag, so the kernels
// without it are those of plain attention) each unmasked scaled score s
// becomes softcap * tanh(s / softcap) in fp32 before the online softmax, the
// backward kernels rebuild P from the capped score and multiply dS by
// 1 - (capped / softcap)^2 before it enters dQ and dK. Which tiles are
// skipped depends on the mask alone.
//
// Shared-memory tiles have a row stride of head_dim + 8 elements (16 bytes of
// padding), so the 8 row addresses of each ldmatrix phase fall in distinct
// bank groups.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "backends/cuda/kernels/device_ops.h"
#include "backends/cuda/kernels/device_util.h"

namespace zero3 {
namespace cuda {
namespace internal {
namespace {

constexpr int kThreads = 128;  // 4 warps
constexpr int kTileRows = 64;  // rows of every shared-memory tile

struct FlashDims {
  int64_t seq, heads, kv_heads, group;
  bool causal;
  float scale;
  float softcap;             // > 0: scores are soft-capped (kSoftcap)
  const int32_t* positions;  // packed documents, or null
  int64_t window;            // sliding window, or 0
};

// ---------------------------------------------------------------------------
// PTX wrappers.

__device__ __forceinline__ uint32_t SmemAddress(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared; zero-fills when !valid (src is not read).
__device__ __forceinline__ void CpAsync16(uint32_t dst, const void* src,
                                          bool valid) {
  const int bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst),
               "l"(src), "r"(bytes));
}

__device__ __forceinline__ void CpAsyncCommit() {
  asm volatile("cp.async.commit_group;\n" ::);
}

__device__ __forceinline__ void CpAsyncWaitAll() {
  asm volatile("cp.async.wait_group 0;\n" ::);
}

__device__ __forceinline__ void Ldmatrix4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
      : "r"(addr));
}

__device__ __forceinline__ void Ldmatrix4Trans(uint32_t (&r)[4],
                                               uint32_t addr) {
  asm volatile(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, "
      "[%4];\n"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
      : "r"(addr));
}

template <typename E>
struct MmaTraits;

template <>
struct MmaTraits<__nv_bfloat16> {
  __device__ __forceinline__ static void Mma(float (&c)[4],
                                             const uint32_t (&a)[4],
                                             uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  __device__ __forceinline__ static uint32_t Pack(float lo, float hi) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
};

template <>
struct MmaTraits<__half> {
  __device__ __forceinline__ static void Mma(float (&c)[4],
                                             const uint32_t (&a)[4],
                                             uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  __device__ __forceinline__ static uint32_t Pack(float lo, float hi) {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
};

// ---------------------------------------------------------------------------
// Tiles. A tile is kTileRows rows of D elements at a row stride of D + 8.

template <int D>
struct Tile {
  static constexpr int kStride = D + 8;
  static constexpr int kBytes = kTileRows * kStride * 2;

  // Byte offset of element (row, col) from the tile's start.
  __device__ __forceinline__ static uint32_t Offset(int row, int col) {
    return static_cast<uint32_t>((row * kStride + col) * 2);
  }

  // Fragment addresses (per lane) for ldmatrix.x4:
  // A operand, rows [r0, r0 + 16) x cols [c0, c0 + 16) of a row-major M x K
  // tile: registers a0..a3.
  __device__ __forceinline__ static uint32_t AAddress(uint32_t base, int r0,
                                                      int c0, int lane) {
    return base + Offset(r0 + (lane & 15), c0 + (lane >> 4) * 8);
  }
  // B operand from a tile stored [n][k] (B transposed, row-major): n-rows
  // [n0, n0 + 16), k-cols [k0, k0 + 16). Registers: b0, b1 of n-tile n0 and
  // b0, b1 of n-tile n0 + 8. Non-transposing ldmatrix.
  __device__ __forceinline__ static uint32_t BtAddress(uint32_t base, int n0,
                                                       int k0, int lane) {
    return base + Offset(n0 + (lane & 7) + ((lane >> 4) << 3),
                         k0 + ((lane >> 3) & 1) * 8);
  }
  // B operand from a tile stored [k][n] (row-major K x N): k-rows
  // [k0, k0 + 16), n-cols [n0, n0 + 16). Same register order as BtAddress.
  // Transposing ldmatrix.
  __device__ __forceinline__ static uint32_t BAddress(uint32_t base, int k0,
                                                      int n0, int lane) {
    return base + Offset(k0 + (lane & 7) + ((lane >> 3) & 1) * 8,
                         n0 + (lane >> 4) * 8);
  }
};

// Issues the copies of rows [first, first + 64) of head `head` of a
// [batch * seq, heads, D] tensor (batch row offset row0 = b * seq) into the
// tile at `dst`. Rows at or past seq become zeros.
template <typename E, int D>
__device__ __forceinline__ void LoadTile(uint32_t dst, const E* src,
                                         int64_t row0, int64_t first,
                                         int64_t seq, int64_t heads,
                                         int64_t head) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  for (int idx = threadIdx.x; idx < kTileRows * kChunks; idx += kThreads) {
    const int r = idx / kChunks;
    const int c = idx % kChunks;
    const int64_t s = first + r;
    const bool valid = s < seq;
    const E* from = valid ? src + ((row0 + s) * heads + head) * D + c * 8 : src;
    CpAsync16(dst + Tile<D>::Offset(r, c * 8), from, valid);
  }
}

__device__ __forceinline__ float QuadMax(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, 2));
}

__device__ __forceinline__ float QuadSum(float v) {
  v += __shfl_xor_sync(0xFFFFFFFFu, v, 1);
  return v + __shfl_xor_sync(0xFFFFFFFFu, v, 2);
}

// The first key tile any query of the tile starting at row q0 (< seq) can
// see: rows after q0 start their documents and windows no earlier than
// q0's do, so tiles before q0's are masked for the whole tile.
__device__ __forceinline__ int FirstKeyTile(const FlashDims& dims, int64_t row0,
                                            int64_t q0) {
  int64_t first = 0;
  if (dims.positions != nullptr) first = q0 - dims.positions[row0 + q0];
  if (dims.window > 0 && q0 - dims.window + 1 > first) {
    first = q0 - dims.window + 1;
  }
  return static_cast<int>(first / kTileRows);
}

// One past the last query that can see a key of the tile whose last key is
// k_last (< seq): the end of k_last's document (the next row at position
// 0) and of its window. Every thread of the block calls it; `scratch` is
// one shared int.
__device__ __forceinline__ int64_t QueryEnd(const FlashDims& dims, int64_t row0,
                                            int64_t k_last, int* scratch) {
  int64_t end = dims.seq;
  if (dims.window > 0 && k_last + dims.window < end) {
    end = k_last + dims.window;
  }
  if (dims.positions == nullptr) return end;
  if (threadIdx.x == 0) *scratch = static_cast<int>(end);
  __syncthreads();
  for (int64_t r = k_last + 1 + threadIdx.x; r < end; r += blockDim.x) {
    if (dims.positions[row0 + r] == 0) {
      atomicMin(scratch, static_cast<int>(r));
      break;
    }
  }
  __syncthreads();
  end = *scratch;
  __syncthreads();  // every thread has read it before anyone reuses it
  return end;
}

// ---------------------------------------------------------------------------
// Forward.

template <typename E, int D, bool kSoftcap>
__global__ void __launch_bounds__(kThreads, 2)
    FlashForwardKernel(const E* __restrict__ q, const E* __restrict__ k,
                       const E* __restrict__ v, E* __restrict__ out, Dyn lse,
                       FlashDims dims) {
  using T = Tile<D>;
  using M = MmaTraits<E>;
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t q_tile = SmemAddress(smem);
  auto k_tile = [&](int buf) { return q_tile + (1 + buf) * T::kBytes; };
  auto v_tile = [&](int buf) { return q_tile + (3 + buf) * T::kBytes; };

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int gq = lane >> 2, tq = lane & 3;
  const int64_t S = dims.seq;
  const int64_t q0 =
      static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * kTileRows;
  const int64_t b = blockIdx.y / dims.heads;
  const int64_t h = blockIdx.y % dims.heads;
  const int64_t kvh = h / dims.group;
  const int64_t row0 = b * S;
  const int64_t key_end =
      dims.causal ? (q0 + kTileRows < S ? q0 + kTileRows : S) : S;
  const int tiles = static_cast<int>((key_end + kTileRows - 1) / kTileRows);
  const int first_tile = FirstKeyTile(dims, row0, q0);

  LoadTile<E, D>(q_tile, q, row0, q0, S, dims.heads, h);
  LoadTile<E, D>(k_tile(0), k, row0, first_tile * kTileRows, S, dims.kv_heads,
                 kvh);
  LoadTile<E, D>(v_tile(0), v, row0, first_tile * kTileRows, S, dims.kv_heads,
                 kvh);
  CpAsyncCommit();
  CpAsyncWaitAll();
  __syncthreads();

  uint32_t qf[D / 16][4];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    Ldmatrix4(qf[kk], T::AAddress(q_tile, warp * 16, kk * 16, lane));
  }
  float o[D / 8][4];
#pragma unroll
  for (int dt = 0; dt < D / 8; ++dt)
    o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY};
  float l[2] = {0.0f, 0.0f};
  const int64_t rows[2] = {q0 + warp * 16 + gq, q0 + warp * 16 + gq + 8};

  for (int n = first_tile; n < tiles; ++n) {
    const int buf = (n - first_tile) & 1;
    if (n + 1 < tiles) {
      LoadTile<E, D>(k_tile(buf ^ 1), k, row0, (n + 1) * kTileRows, S,
                     dims.kv_heads, kvh);
      LoadTile<E, D>(v_tile(buf ^ 1), v, row0, (n + 1) * kTileRows, S,
                     dims.kv_heads, kvh);
    }
    CpAsyncCommit();

    // S = Q K^T for this warp's 16 rows and the tile's 64 keys.
    float s[8][4];
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
      s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
      for (int np = 0; np < 4; ++np) {
        uint32_t bf[4];
        Ldmatrix4(bf, T::BtAddress(k_tile(buf), np * 16, kk * 16, lane));
        M::Mma(s[2 * np], qf[kk], bf[0], bf[1]);
        M::Mma(s[2 * np + 1], qf[kk], bf[2], bf[3]);
      }
    }

    // Scale, mask, online softmax.
    const int64_t key0 = static_cast<int64_t>(n) * kTileRows;
    float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int64_t j = key0 + nt * 8 + 2 * tq + (e & 1);
        const int64_t i = rows[e >> 1];
        const bool masked =
            j >= S || (dims.causal && j > i) ||
            (i < S && OutsideDocument(dims.positions, dims.window, row0, i, j));
        if constexpr (kSoftcap) {
          s[nt][e] =
              masked ? -INFINITY : Softcap(s[nt][e] * dims.scale, dims.softcap);
        } else {
          s[nt][e] = masked ? -INFINITY : s[nt][e] * dims.scale;
        }
        tile_max[e >> 1] = fmaxf(tile_max[e >> 1], s[nt][e]);
      }
    }
    float shift[2], correction[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float m_new = fmaxf(m[r], QuadMax(tile_max[r]));
      shift[r] = m_new == -INFINITY ? 0.0f : m_new;
      correction[r] = __expf(m[r] - shift[r]);  // 0 while m is -inf
      m[r] = m_new;
    }
    float row_sum[2] = {0.0f, 0.0f};
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float p = __expf(s[nt][e] - shift[e >> 1]);
        s[nt][e] = p;
        row_sum[e >> 1] += p;
      }
    }
#pragma unroll
    for (int r = 0; r < 2; ++r)
      l[r] = l[r] * correction[r] + QuadSum(row_sum[r]);
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) {
      o[dt][0] *= correction[0];
      o[dt][1] *= correction[0];
      o[dt][2] *= correction[1];
      o[dt][3] *= correction[1];
    }

    // O += P V.
#pragma unroll
    for (int kj = 0; kj < 4; ++kj) {
      const uint32_t pa[4] = {M::Pack(s[2 * kj][0], s[2 * kj][1]),
                              M::Pack(s[2 * kj][2], s[2 * kj][3]),
                              M::Pack(s[2 * kj + 1][0], s[2 * kj + 1][1]),
                              M::Pack(s[2 * kj + 1][2], s[2 * kj + 1][3])};
#pragma unroll
      for (int dp = 0; dp < D / 16; ++dp) {
        uint32_t bf[4];
        Ldmatrix4Trans(bf, T::BAddress(v_tile(buf), kj * 16, dp * 16, lane));
        M::Mma(o[2 * dp], pa, bf[0], bf[1]);
        M::Mma(o[2 * dp + 1], pa, bf[2], bf[3]);
      }
    }
    CpAsyncWaitAll();
    __syncthreads();  // next tile landed; this one is no longer read
  }

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t i = rows[r];
    if (i >= S) continue;
    const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
    E* dst = out + ((row0 + i) * dims.heads + h) * D;
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) {
      *reinterpret_cast<uint32_t*>(dst + dt * 8 + 2 * tq) =
          M::Pack(o[dt][2 * r] * inv, o[dt][2 * r + 1] * inv);
    }
    if (tq == 0) {
      lse.Store((b * dims.heads + h) * S + i,
                static_cast<float>(static_cast<double>(m[r]) +
                                   log(static_cast<double>(l[r]))));
    }
  }
}

// ---------------------------------------------------------------------------
// Backward: dQ.

template <typename E, int D, bool kSoftcap>
__global__ void __launch_bounds__(kThreads, 2)
    FlashDqKernel(const E* __restrict__ q, const E* __restrict__ k,
                  const E* __restrict__ v, const E* __restrict__ d_out,
                  E* __restrict__ dq, Dyn lse, const float* __restrict__ delta,
                  FlashDims dims) {
  using T = Tile<D>;
  using M = MmaTraits<E>;
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t q_tile = SmemAddress(smem);
  const uint32_t do_tile = q_tile + T::kBytes;
  auto k_tile = [&](int buf) { return q_tile + (2 + buf) * T::kBytes; };
  auto v_tile = [&](int buf) { return q_tile + (4 + buf) * T::kBytes; };

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int gq = lane >> 2, tq = lane & 3;
  const int64_t S = dims.seq;
  const int64_t q0 =
      static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * kTileRows;
  const int64_t b = blockIdx.y / dims.heads;
  const int64_t h = blockIdx.y % dims.heads;
  const int64_t kvh = h / dims.group;
  const int64_t row0 = b * S;
  const int64_t stat0 = (b * dims.heads + h) * S;
  const int64_t key_end =
      dims.causal ? (q0 + kTileRows < S ? q0 + kTileRows : S) : S;
  const int tiles = static_cast<int>((key_end + kTileRows - 1) / kTileRows);
  const int first_tile = FirstKeyTile(dims, row0, q0);

  LoadTile<E, D>(q_tile, q, row0, q0, S, dims.heads, h);
  LoadTile<E, D>(do_tile, d_out, row0, q0, S, dims.heads, h);
  LoadTile<E, D>(k_tile(0), k, row0, first_tile * kTileRows, S, dims.kv_heads,
                 kvh);
  LoadTile<E, D>(v_tile(0), v, row0, first_tile * kTileRows, S, dims.kv_heads,
                 kvh);
  CpAsyncCommit();

  const int64_t rows[2] = {q0 + warp * 16 + gq, q0 + warp * 16 + gq + 8};
  float row_lse[2], row_delta[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    row_lse[r] = rows[r] < S ? lse.Load(stat0 + rows[r]) : 0.0f;
    row_delta[r] = rows[r] < S ? delta[stat0 + rows[r]] : 0.0f;
  }
  float acc[D / 8][4];
#pragma unroll
  for (int dt = 0; dt < D / 8; ++dt) {
    acc[dt][0] = acc[dt][1] = acc[dt][2] = acc[dt][3] = 0.0f;
  }
  CpAsyncWaitAll();
  __syncthreads();

  for (int n = first_tile; n < tiles; ++n) {
    const int buf = (n - first_tile) & 1;
    if (n + 1 < tiles) {
      LoadTile<E, D>(k_tile(buf ^ 1), k, row0, (n + 1) * kTileRows, S,
                     dims.kv_heads, kvh);
      LoadTile<E, D>(v_tile(buf ^ 1), v, row0, (n + 1) * kTileRows, S,
                     dims.kv_heads, kvh);
    }
    CpAsyncCommit();

    // S = Q K^T and dP = dO V^T.
    float s[8][4], dp[8][4];
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) s[nt][e] = dp[nt][e] = 0.0f;
    }
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t qa[4], da[4];
      Ldmatrix4(qa, T::AAddress(q_tile, warp * 16, kk * 16, lane));
      Ldmatrix4(da, T::AAddress(do_tile, warp * 16, kk * 16, lane));
#pragma unroll
      for (int np = 0; np < 4; ++np) {
        uint32_t kb[4], vb[4];
        Ldmatrix4(kb, T::BtAddress(k_tile(buf), np * 16, kk * 16, lane));
        Ldmatrix4(vb, T::BtAddress(v_tile(buf), np * 16, kk * 16, lane));
        M::Mma(s[2 * np], qa, kb[0], kb[1]);
        M::Mma(s[2 * np + 1], qa, kb[2], kb[3]);
        M::Mma(dp[2 * np], da, vb[0], vb[1]);
        M::Mma(dp[2 * np + 1], da, vb[2], vb[3]);
      }
    }
    // dS = P (dP - delta), P = exp(scale S - lse); with a cap,
    // P = exp(cap(scale S) - lse) and dS carries the cap's derivative.
    const int64_t key0 = static_cast<int64_t>(n) * kTileRows;
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int64_t j = key0 + nt * 8 + 2 * tq + (e & 1);
        const int64_t i = rows[e >> 1];
        const bool masked =
            i >= S || j >= S || (dims.causal && j > i) ||
            OutsideDocument(dims.positions, dims.window, row0, i, j);
        if constexpr (kSoftcap) {
          float p = 0.0f, grad = 1.0f;
          if (!masked) {
            const float capped = Softcap(s[nt][e] * dims.scale, dims.softcap);
            grad = SoftcapGrad(capped, dims.softcap);
            p = __expf(capped - row_lse[e >> 1]);
          }
          s[nt][e] = p * (dp[nt][e] - row_delta[e >> 1]) * grad;
        } else {
          const float p =
              masked ? 0.0f : __expf(s[nt][e] * dims.scale - row_lse[e >> 1]);
          s[nt][e] = p * (dp[nt][e] - row_delta[e >> 1]);
        }
      }
    }
    // dQ += dS K.
#pragma unroll
    for (int kj = 0; kj < 4; ++kj) {
      const uint32_t sa[4] = {M::Pack(s[2 * kj][0], s[2 * kj][1]),
                              M::Pack(s[2 * kj][2], s[2 * kj][3]),
                              M::Pack(s[2 * kj + 1][0], s[2 * kj + 1][1]),
                              M::Pack(s[2 * kj + 1][2], s[2 * kj + 1][3])};
#pragma unroll
      for (int dpair = 0; dpair < D / 16; ++dpair) {
        uint32_t kb[4];
        Ldmatrix4Trans(kb, T::BAddress(k_tile(buf), kj * 16, dpair * 16, lane));
        M::Mma(acc[2 * dpair], sa, kb[0], kb[1]);
        M::Mma(acc[2 * dpair + 1], sa, kb[2], kb[3]);
      }
    }
    CpAsyncWaitAll();
    __syncthreads();
  }

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t i = rows[r];
    if (i >= S) continue;
    E* dst = dq + ((row0 + i) * dims.heads + h) * D;
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) {
      *reinterpret_cast<uint32_t*>(dst + dt * 8 + 2 * tq) =
          M::Pack(acc[dt][2 * r] * dims.scale, acc[dt][2 * r + 1] * dims.scale);
    }
  }
}

// ---------------------------------------------------------------------------
// Backward: dK and dV.

template <typename E, int D, bool kSoftcap>
__global__ void __launch_bounds__(kThreads, 2)
    FlashDkvKernel(const E* __restrict__ q, const E* __restrict__ k,
                   const E* __restrict__ v, const E* __restrict__ d_out,
                   E* __restrict__ dk, E* __restrict__ dv, Dyn lse,
                   const float* __restrict__ delta, FlashDims dims) {
  using T = Tile<D>;
  using M = MmaTraits<E>;
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t k_tile = SmemAddress(smem);
  const uint32_t v_tile = k_tile + T::kBytes;
  auto q_tile = [&](int buf) { return k_tile + (2 + buf) * T::kBytes; };
  auto do_tile = [&](int buf) { return k_tile + (4 + buf) * T::kBytes; };
  float* stats = reinterpret_cast<float*>(smem + 6 * T::kBytes);
  auto lse_s = [&](int buf) { return stats + buf * 2 * kTileRows; };
  auto delta_s = [&](int buf) {
    return stats + buf * 2 * kTileRows + kTileRows;
  };

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int gq = lane >> 2, tq = lane & 3;
  const int64_t S = dims.seq;
  const int64_t k0 = static_cast<int64_t>(blockIdx.x) * kTileRows;
  const int64_t b = blockIdx.y / dims.kv_heads;
  const int64_t kvh = blockIdx.y % dims.kv_heads;
  const int64_t row0 = b * S;
  // Under a causal mask, queries before k0 see none of these keys; query
  // tiles are aligned at multiples of 64 like key tiles.
  // Past the end of the last key's document or window, no query sees any.
  const int64_t first_query = dims.causal ? k0 : 0;
  __shared__ int query_end_scratch;
  const int64_t query_end =
      QueryEnd(dims, row0, (k0 + kTileRows < S ? k0 + kTileRows : S) - 1,
               &query_end_scratch);
  const int tiles_per_head =
      static_cast<int>((query_end - first_query + kTileRows - 1) / kTileRows);
  const int total = static_cast<int>(dims.group) * tiles_per_head;

  // Issues the loads of step `it` (query head, query tile) into buffer buf.
  auto load_step = [&](int it, int buf) {
    const int64_t h = kvh * dims.group + it / tiles_per_head;
    const int64_t i0 = first_query + (it % tiles_per_head) * kTileRows;
    LoadTile<E, D>(q_tile(buf), q, row0, i0, S, dims.heads, h);
    LoadTile<E, D>(do_tile(buf), d_out, row0, i0, S, dims.heads, h);
    if (threadIdx.x < kTileRows) {
      const int64_t i = i0 + threadIdx.x;
      const int64_t stat = (b * dims.heads + h) * S + i;
      lse_s(buf)[threadIdx.x] = i < S ? lse.Load(stat) : 0.0f;
      delta_s(buf)[threadIdx.x] = i < S ? delta[stat] : 0.0f;
    }
  };

  LoadTile<E, D>(k_tile, k, row0, k0, S, dims.kv_heads, kvh);
  LoadTile<E, D>(v_tile, v, row0, k0, S, dims.kv_heads, kvh);
  if (total > 0) load_step(0, 0);
  CpAsyncCommit();
  CpAsyncWaitAll();
  __syncthreads();

  float dk_acc[D / 8][4], dv_acc[D / 8][4];
#pragma unroll
  for (int dt = 0; dt < D / 8; ++dt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) dk_acc[dt][e] = dv_acc[dt][e] = 0.0f;
  }
  const int64_t keys[2] = {k0 + warp * 16 + gq, k0 + warp * 16 + gq + 8};

  for (int it = 0; it < total; ++it) {
    const int buf = it & 1;
    if (it + 1 < total) load_step(it + 1, buf ^ 1);
    CpAsyncCommit();
    const int64_t i0 = first_query + (it % tiles_per_head) * kTileRows;
    const float* tile_lse = lse_s(buf);
    const float* tile_delta = delta_s(buf);

#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int qbase = half * 32;
      // S^T = K Q^T and dP^T = V dO^T: 16 keys x 32 queries per warp.
      float st[4][4], dpt[4][4];
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) st[nt][e] = dpt[nt][e] = 0.0f;
      }
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        uint32_t ka[4], va[4];
        Ldmatrix4(ka, T::AAddress(k_tile, warp * 16, kk * 16, lane));
        Ldmatrix4(va, T::AAddress(v_tile, warp * 16, kk * 16, lane));
#pragma unroll
        for (int np = 0; np < 2; ++np) {
          uint32_t qb[4], db[4];
          Ldmatrix4(qb,
                    T::BtAddress(q_tile(buf), qbase + np * 16, kk * 16, lane));
          Ldmatrix4(db,
                    T::BtAddress(do_tile(buf), qbase + np * 16, kk * 16, lane));
          M::Mma(st[2 * np], ka, qb[0], qb[1]);
          M::Mma(st[2 * np + 1], ka, qb[2], qb[3]);
          M::Mma(dpt[2 * np], va, db[0], db[1]);
          M::Mma(dpt[2 * np + 1], va, db[2], db[3]);
        }
      }
      // P^T and dS^T.
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int col = qbase + nt * 8 + 2 * tq + (e & 1);
          const int64_t i = i0 + col;
          const int64_t j = keys[e >> 1];
          const bool masked =
              i >= S || (dims.causal && i < j) ||
              OutsideDocument(dims.positions, dims.window, row0, i, j);
          if constexpr (kSoftcap) {
            float p = 0.0f, grad = 1.0f;
            if (!masked) {
              const float capped =
                  Softcap(st[nt][e] * dims.scale, dims.softcap);
              grad = SoftcapGrad(capped, dims.softcap);
              p = __expf(capped - tile_lse[col]);
            }
            st[nt][e] = p;
            dpt[nt][e] = p * (dpt[nt][e] - tile_delta[col]) * grad;
          } else {
            const float p =
                masked ? 0.0f : __expf(st[nt][e] * dims.scale - tile_lse[col]);
            st[nt][e] = p;
            dpt[nt][e] = p * (dpt[nt][e] - tile_delta[col]);
          }
        }
      }
      // dV += P^T dO and dK += dS^T Q over the 32 queries (2 k-steps).
#pragma unroll
      for (int ks = 0; ks < 2; ++ks) {
        const uint32_t pa[4] = {M::Pack(st[2 * ks][0], st[2 * ks][1]),
                                M::Pack(st[2 * ks][2], st[2 * ks][3]),
                                M::Pack(st[2 * ks + 1][0], st[2 * ks + 1][1]),
                                M::Pack(st[2 * ks + 1][2], st[2 * ks + 1][3])};
        const uint32_t sa[4] = {
            M::Pack(dpt[2 * ks][0], dpt[2 * ks][1]),
            M::Pack(dpt[2 * ks][2], dpt[2 * ks][3]),
            M::Pack(dpt[2 * ks + 1][0], dpt[2 * ks + 1][1]),
            M::Pack(dpt[2 * ks + 1][2], dpt[2 * ks + 1][3])};
#pragma unroll
        for (int dpair = 0; dpair < D / 16; ++dpair) {
          uint32_t db[4], qb[4];
          Ldmatrix4Trans(
              db, T::BAddress(do_tile(buf), qbase + ks * 16, dpair * 16, lane));
          Ldmatrix4Trans(
              qb, T::BAddress(q_tile(buf), qbase + ks * 16, dpair * 16, lane));
          M::Mma(dv_acc[2 * dpair], pa, db[0], db[1]);
          M::Mma(dv_acc[2 * dpair + 1], pa, db[2], db[3]);
          M::Mma(dk_acc[2 * dpair], sa, qb[0], qb[1]);
          M::Mma(dk_acc[2 * dpair + 1], sa, qb[2], qb[3]);
        }
      }
    }
    CpAsyncWaitAll();
    __syncthreads();
  }

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t j = keys[r];
    if (j >= S) continue;
    const int64_t at = ((row0 + j) * dims.kv_heads + kvh) * D;
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) {
      *reinterpret_cast<uint32_t*>(dk + at + dt * 8 + 2 * tq) = M::Pack(
          dk_acc[dt][2 * r] * dims.scale, dk_acc[dt][2 * r + 1] * dims.scale);
      *reinterpret_cast<uint32_t*>(dv + at + dt * 8 + 2 * tq) =
          M::Pack(dv_acc[dt][2 * r], dv_acc[dt][2 * r + 1]);
    }
  }
}

// ---------------------------------------------------------------------------
// Host side.

FlashDims MakeDims(const AttentionShape& s) {
  FlashDims d;
  d.seq = s.seq;
  d.heads = s.num_heads;
  d.kv_heads = s.num_kv_heads;
  d.group = s.num_heads / s.num_kv_heads;
  d.causal = s.causal;
  d.scale = ScoreScale(s);
  d.softcap = s.softcap;
  d.positions = s.positions;
  d.window = s.window;
  return d;
}

template <int D>
constexpr int ForwardSmem() {
  return 5 * Tile<D>::kBytes;
}
template <int D>
constexpr int DqSmem() {
  return 6 * Tile<D>::kBytes;
}
template <int D>
constexpr int DkvSmem() {
  return 6 * Tile<D>::kBytes + 4 * kTileRows * static_cast<int>(sizeof(float));
}

template <typename K>
cudaError_t SetSmem(K kernel, int bytes) {
  return cudaFuncSetAttribute(
      kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}

// Calls f(E{}, integral_constant<D>, bool_constant<kSoftcap>) for the
// problem's element type, head_dim (FlashAttentionSupports holds) and
// soft-capping.
template <typename F>
cudaError_t DispatchFlash(DT dtype, const AttentionShape& shape, F&& f) {
  auto with_cap = [&](auto e, auto d) {
    if (shape.softcap > 0.0f) return f(e, d, std::true_type());
    return f(e, d, std::false_type());
  };
  auto with_d = [&](auto e) {
    if (shape.head_dim == 64) {
      return with_cap(e, std::integral_constant<int, 64>());
    }
    return with_cap(e, std::integral_constant<int, 128>());
  };
  if (dtype == DT::kBF16) return with_d(__nv_bfloat16());
  return with_d(__half());
}

}  // namespace

bool FlashAttentionSupports(const AttentionShape& shape, const Tensor* tensors,
                            int count) {
  if (shape.head_dim != 64 && shape.head_dim != 128) return false;
  if (shape.num_kv_heads <= 0 || shape.num_heads % shape.num_kv_heads != 0) {
    return false;
  }
  if (count <= 0) return false;
  const DT dtype = tensors[0].dtype;
  if (dtype != DT::kBF16 && dtype != DT::kF16) return false;
  for (int i = 0; i < count; ++i) {
    if (tensors[i].dtype != dtype || !Aligned16(tensors[i].data)) return false;
  }
  return true;
}

cudaError_t LaunchFlashAttentionForward(const Env& env,
                                        const AttentionShape& shape, Tensor q,
                                        Tensor k, Tensor v, Tensor out,
                                        Tensor lse) {
  if (shape.batch <= 0 || shape.seq <= 0) return cudaSuccess;
  const FlashDims dims = MakeDims(shape);
  const dim3 grid(
      static_cast<unsigned>((shape.seq + kTileRows - 1) / kTileRows),
      static_cast<unsigned>(shape.batch * shape.num_heads));
  return DispatchFlash(q.dtype, shape, [&](auto e, auto d, auto cap) {
    using E = decltype(e);
    constexpr int D = decltype(d)::value;
    auto kernel = FlashForwardKernel<E, D, decltype(cap)::value>;
    cudaError_t err = SetSmem(kernel, ForwardSmem<D>());
    if (err != cudaSuccess) return err;
    kernel<<<grid, kThreads, ForwardSmem<D>(), env.stream>>>(
        static_cast<const E*>(q.data), static_cast<const E*>(k.data),
        static_cast<const E*>(v.data), static_cast<E*>(out.data), Dyn(lse),
        dims);
    return cudaGetLastError();
  });
}

cudaError_t LaunchFlashAttentionBackward(const Env& env,
                                         const AttentionShape& shape, Tensor q,
                                         Tensor k, Tensor v, Tensor out,
                                         Tensor lse, Tensor d_out, Tensor dq,
                                         Tensor dk, Tensor dv) {
  if (shape.batch <= 0 || shape.seq <= 0) return cudaSuccess;
  const FlashDims dims = MakeDims(shape);
  float* delta = static_cast<float*>(env.scratch);
  cudaError_t err = LaunchAttentionDelta(env, shape, out, d_out, delta);
  if (err != cudaSuccess) return err;
  const unsigned tiles =
      static_cast<unsigned>((shape.seq + kTileRows - 1) / kTileRows);
  return DispatchFlash(q.dtype, shape, [&](auto e, auto d, auto cap) {
    using E = decltype(e);
    constexpr int D = decltype(d)::value;
    constexpr bool kSoftcap = decltype(cap)::value;
    const E* qp = static_cast<const E*>(q.data);
    const E* kp = static_cast<const E*>(k.data);
    const E* vp = static_cast<const E*>(v.data);
    const E* dop = static_cast<const E*>(d_out.data);

    auto dkv_kernel = FlashDkvKernel<E, D, kSoftcap>;
    cudaError_t status = SetSmem(dkv_kernel, DkvSmem<D>());
    if (status != cudaSuccess) return status;
    dkv_kernel<<<dim3(tiles,
                      static_cast<unsigned>(shape.batch * shape.num_kv_heads)),
                 kThreads, DkvSmem<D>(), env.stream>>>(
        qp, kp, vp, dop, static_cast<E*>(dk.data), static_cast<E*>(dv.data),
        Dyn(lse), delta, dims);
    status = cudaGetLastError();
    if (status != cudaSuccess) return status;

    auto dq_kernel = FlashDqKernel<E, D, kSoftcap>;
    status = SetSmem(dq_kernel, DqSmem<D>());
    if (status != cudaSuccess) return status;
    dq_kernel<<<dim3(tiles,
                     static_cast<unsigned>(shape.batch * shape.num_heads)),
                kThreads, DqSmem<D>(), env.stream>>>(
        qp, kp, vp, dop, static_cast<E*>(dq.data), Dyn(lse), delta, dims);
    return cudaGetLastError();
  });
}

}  // namespace internal
}  // namespace cuda
}  // namespace zero3
