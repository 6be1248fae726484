// Copyright 2026 The zero3 Authors.
//
// device_util.h: device code shared by the kernels of this directory:
// element types and their conversions, typed and dynamically typed tensor
// accessors with 16-byte vector loads, warp and block reductions, and launch
// helpers. Include only from .cu files (compiled by nvcc).
//
// Conversions match core/kernels/dtype.h bit for bit: float -> bf16 and
// float -> fp16 round to nearest even, NaN keeps its sign and top payload
// bits and is made quiet, overflow goes to inf, subnormals are kept.

#ifndef ZERO3_BACKENDS_CUDA_KERNELS_DEVICE_UTIL_H_
#define ZERO3_BACKENDS_CUDA_KERNELS_DEVICE_UTIL_H_

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/kernels/device_ops.h"

namespace zero3 {
namespace cuda {
namespace internal {

// ---------------------------------------------------------------------------
// Element types. Each tag names its storage type and converts to and from
// float; bf16 and fp16 are stored as raw 16-bit patterns.

// Whether causal query i cannot see key j for the packed documents or the
// sliding window: j before i's document in the sequence whose first row is
// row0 (positions: each row's place in its document; null: one document
// per sequence), or j at least `window` rows before i (0: no window). i
// must be within the sequence.
__device__ __forceinline__ bool OutsideDocument(const int32_t* positions,
                                                int64_t window, int64_t row0,
                                                int64_t i, int64_t j) {
  return (positions != nullptr && j < i - positions[row0 + i]) ||
         (window > 0 && j <= i - window);
}

// Soft-capping, cap > 0: cap * tanh(x / cap), in the float operations of
// kernels::Softcap.
__device__ __forceinline__ float Softcap(float x, float cap) {
  return __fmul_rn(cap, tanhf(__fdiv_rn(x, cap)));
}

// The derivative of Softcap at the point where it returned `capped`:
// 1 - (capped / cap)^2, as kernels::SoftcapGrad computes it.
__device__ __forceinline__ float SoftcapGrad(float capped, float cap) {
  const float t = __fdiv_rn(capped, cap);
  return __fsub_rn(1.0f, __fmul_rn(t, t));
}

__device__ __forceinline__ float BF16BitsToFloat(uint16_t bits) {
  return __uint_as_float(static_cast<uint32_t>(bits) << 16);
}

__device__ __forceinline__ uint16_t FloatToBF16Bits(float value) {
  const uint32_t bits = __float_as_uint(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);  // quiet NaN
  }
  // Round to nearest even at bit 16; a carry into the exponent gives inf.
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

__device__ __forceinline__ float F16BitsToFloat(uint16_t bits) {
  if ((bits & 0x7C00u) == 0x7C00u && (bits & 0x3FFu) != 0) {
    // NaN: keep sign and payload, as dtype.cc does (the hardware conversion
    // need not).
    return __uint_as_float((static_cast<uint32_t>(bits & 0x8000u) << 16) |
                           0x7F800000u |
                           (static_cast<uint32_t>(bits & 0x3FFu) << 13));
  }
  return __half2float(__ushort_as_half(bits));
}

__device__ __forceinline__ uint16_t FloatToF16Bits(float value) {
  const uint32_t bits = __float_as_uint(value);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) {
    return static_cast<uint16_t>(((bits >> 16) & 0x8000u) | 0x7E00u |
                                 ((magnitude >> 13) & 0x3FFu));
  }
  // cvt.rn.f16.f32: IEEE round to nearest even, subnormals kept (no .ftz),
  // overflow to inf.
  return __half_as_ushort(__float2half_rn(value));
}

struct F32 {
  using Storage = float;
  static constexpr DT kDType = DT::kF32;
  __device__ __forceinline__ static float ToFloat(float v) { return v; }
  __device__ __forceinline__ static float FromFloat(float v) { return v; }
};

struct BF16 {
  using Storage = uint16_t;
  static constexpr DT kDType = DT::kBF16;
  __device__ __forceinline__ static float ToFloat(uint16_t v) {
    return BF16BitsToFloat(v);
  }
  __device__ __forceinline__ static uint16_t FromFloat(float v) {
    return FloatToBF16Bits(v);
  }
};

struct F16 {
  using Storage = uint16_t;
  static constexpr DT kDType = DT::kF16;
  __device__ __forceinline__ static float ToFloat(uint16_t v) {
    return F16BitsToFloat(v);
  }
  __device__ __forceinline__ static uint16_t FromFloat(float v) {
    return FloatToF16Bits(v);
  }
};

__device__ __forceinline__ float LoadDyn(DT dtype, const void* p, int64_t i) {
  switch (dtype) {
    case DT::kBF16:
      return BF16BitsToFloat(static_cast<const uint16_t*>(p)[i]);
    case DT::kF16:
      return F16BitsToFloat(static_cast<const uint16_t*>(p)[i]);
    default:
      return static_cast<const float*>(p)[i];
  }
}

__device__ __forceinline__ void StoreDyn(DT dtype, void* p, int64_t i,
                                         float v) {
  switch (dtype) {
    case DT::kBF16:
      static_cast<uint16_t*>(p)[i] = FloatToBF16Bits(v);
      break;
    case DT::kF16:
      static_cast<uint16_t*>(p)[i] = FloatToF16Bits(v);
      break;
    default:
      static_cast<float*>(p)[i] = v;
      break;
  }
}

// ---------------------------------------------------------------------------
// Accessors. Kernels are templated on them: Typed<Tag> when the element type
// is known at compile time (vector loads), Dyn when it is a run-time value
// (mixed-dtype calls; a warp-uniform switch per element).
//
// Load<N>/Store<N> move N consecutive elements starting at i. For Typed, when
// N elements span a whole number of 16-byte words, they move as 16-byte
// vectors: the caller guarantees that the address of element i is 16-byte
// aligned (launchers check the base pointer and use N = 1 otherwise).

template <typename Tag>
struct Typed {
  using Storage = typename Tag::Storage;
  static constexpr bool kVectorizable = true;
  Storage* p;

  explicit Typed(const Tensor& t) : p(static_cast<Storage*>(t.data)) {}

  __device__ __forceinline__ float Load(int64_t i) const {
    return Tag::ToFloat(p[i]);
  }
  __device__ __forceinline__ void Store(int64_t i, float v) const {
    p[i] = Tag::FromFloat(v);
  }

  template <int N>
  __device__ __forceinline__ void Load(int64_t i, float (&out)[N]) const {
    constexpr int kPerWord = 16 / sizeof(Storage);
    if constexpr (N % kPerWord == 0) {
#pragma unroll
      for (int w = 0; w < N / kPerWord; ++w) {
        const uint4 word =
            *reinterpret_cast<const uint4*>(p + i + w * kPerWord);
        const Storage* e = reinterpret_cast<const Storage*>(&word);
#pragma unroll
        for (int j = 0; j < kPerWord; ++j) {
          out[w * kPerWord + j] = Tag::ToFloat(e[j]);
        }
      }
    } else {
#pragma unroll
      for (int j = 0; j < N; ++j) out[j] = Tag::ToFloat(p[i + j]);
    }
  }

  template <int N>
  __device__ __forceinline__ void Store(int64_t i, const float (&in)[N]) const {
    constexpr int kPerWord = 16 / sizeof(Storage);
    if constexpr (N % kPerWord == 0) {
#pragma unroll
      for (int w = 0; w < N / kPerWord; ++w) {
        uint4 word;
        Storage* e = reinterpret_cast<Storage*>(&word);
#pragma unroll
        for (int j = 0; j < kPerWord; ++j) {
          e[j] = Tag::FromFloat(in[w * kPerWord + j]);
        }
        *reinterpret_cast<uint4*>(p + i + w * kPerWord) = word;
      }
    } else {
#pragma unroll
      for (int j = 0; j < N; ++j) p[i + j] = Tag::FromFloat(in[j]);
    }
  }
};

struct Dyn {
  static constexpr bool kVectorizable = false;
  void* p;
  DT dtype;

  explicit Dyn(const Tensor& t) : p(t.data), dtype(t.dtype) {}

  __device__ __forceinline__ float Load(int64_t i) const {
    return LoadDyn(dtype, p, i);
  }
  __device__ __forceinline__ void Store(int64_t i, float v) const {
    StoreDyn(dtype, p, i, v);
  }
  template <int N>
  __device__ __forceinline__ void Load(int64_t i, float (&out)[N]) const {
#pragma unroll
    for (int j = 0; j < N; ++j) out[j] = LoadDyn(dtype, p, i + j);
  }
  template <int N>
  __device__ __forceinline__ void Store(int64_t i, const float (&in)[N]) const {
#pragma unroll
    for (int j = 0; j < N; ++j) StoreDyn(dtype, p, i + j, in[j]);
  }
};

// Calls f(Tag{}) for the tag of `dtype`.
template <typename F>
__host__ decltype(auto) DispatchDType(DT dtype, F&& f) {
  switch (dtype) {
    case DT::kBF16:
      return f(BF16{});
    case DT::kF16:
      return f(F16{});
    default:
      return f(F32{});
  }
}

inline bool Aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

// ---------------------------------------------------------------------------
// Reductions.

__device__ __forceinline__ float WarpSum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    v += __shfl_xor_sync(0xFFFFFFFFu, v, offset);
  }
  return v;
}

__device__ __forceinline__ double WarpSum(double v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    v += __shfl_xor_sync(0xFFFFFFFFu, v, offset);
  }
  return v;
}

__device__ __forceinline__ float WarpMax(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, offset));
  }
  return v;
}

// Sum over the block; every thread gets the result. `shared` holds at least
// 32 values. blockDim.x is a multiple of 32. Contains __syncthreads (call from
// all threads), and may be called repeatedly with the same `shared`.
template <typename T>
__device__ __forceinline__ T BlockSum(T v, T* shared) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int warps = blockDim.x >> 5;
  v = WarpSum(v);
  __syncthreads();  // `shared` may still be read by a previous call
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : T(0);
  return WarpSum(v);
}

__device__ __forceinline__ float BlockMax(float v, float* shared) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int warps = blockDim.x >> 5;
  v = WarpMax(v);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : -INFINITY;
  return WarpMax(v);
}

// ---------------------------------------------------------------------------
// Column sums, in two deterministic steps: partial sums over row ranges
// (ColumnPartialSums), then out[c] += the partials in order
// (FinalizeColumns). The split depends only on the shape, so a result does
// not depend on the GPU it ran on.

constexpr int kColumnTile = 32;
constexpr int kColumnRowLanes = 8;

// The number of row ranges for a column sum over `rows` rows.
inline int64_t ColumnSplits(int64_t rows) {
  int64_t splits = (rows + 255) / 256;
  if (splits > 64) splits = 64;
  if (splits < 1) splits = 1;
  return splits;
}

// grid (ceil(cols / 32), splits), block (32, 8). partial[s * cols + c] = sum
// of in[r, c] over the rows of range s.
template <typename In>
__global__ void __launch_bounds__(kColumnTile* kColumnRowLanes)
    ColumnPartialSums(In in, int64_t rows, int64_t cols, float* partial) {
  __shared__ float sums[kColumnRowLanes][kColumnTile + 1];
  const int64_t c =
      static_cast<int64_t>(blockIdx.x) * kColumnTile + threadIdx.x;
  const int64_t per_split = (rows + gridDim.y - 1) / gridDim.y;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * per_split;
  const int64_t r1 = r0 + per_split < rows ? r0 + per_split : rows;
  float sum = 0.0f;
  if (c < cols) {
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kColumnRowLanes) {
      sum += in.Load(r * cols + c);
    }
  }
  sums[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    float total = 0.0f;
#pragma unroll
    for (int y = 0; y < kColumnRowLanes; ++y) total += sums[y][threadIdx.x];
    partial[static_cast<int64_t>(blockIdx.y) * cols + c] = total;
  }
}

// out[c] = out[c] + sum_s partial[s * cols + c], summed in order of s.
template <typename Out>
__global__ void FinalizeColumns(const float* partial, int64_t splits,
                                int64_t cols, Out out) {
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       c < cols; c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float sum = 0.0f;
    for (int64_t s = 0; s < splits; ++s) sum += partial[s * cols + c];
    out.Store(c, out.Load(c) + sum);
  }
}

// ---------------------------------------------------------------------------
// Launch shapes.

// Blocks for a grid-stride loop over `work` items with `threads` per block:
// enough to fill the device several times, never more than the work needs,
// at least one.
inline unsigned GridFor(int64_t work, int threads, int sm_count) {
  const int64_t needed = (work + threads - 1) / threads;
  const int64_t cap = static_cast<int64_t>(sm_count) * 16;
  int64_t blocks = needed < cap ? needed : cap;
  if (blocks < 1) blocks = 1;
  return static_cast<unsigned>(blocks);
}

__device__ __forceinline__ int64_t GlobalThread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ int64_t GridStride() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

// Carves 256-byte aligned pieces off a scratch area.
class ScratchCarver {
 public:
  explicit ScratchCarver(void* base) : base_(static_cast<char*>(base)) {}
  template <typename T>
  T* Take(int64_t count) {
    T* p = reinterpret_cast<T*>(base_ + used_);
    used_ += AlignScratch(count * static_cast<int64_t>(sizeof(T)));
    return p;
  }

 private:
  char* base_;
  int64_t used_ = 0;
};

}  // namespace internal
}  // namespace cuda
}  // namespace zero3

#endif  // ZERO3_BACKENDS_CUDA_KERNELS_DEVICE_UTIL_H_
