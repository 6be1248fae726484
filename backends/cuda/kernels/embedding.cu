// Copyright 2026 The zero3 Authors.
//
// Token embedding forward (a row gather) and backward (a scatter-add into the
// table's gradient).
//
// The backward pass is deterministic and matches the reference's summation
// order exactly: the token ids are sorted with their positions (a stable
// radix sort, so equal ids keep ascending positions), then one block per run
// of equal ids sums the run's d_out rows in position order into a float
// accumulator that starts from the table row's current value, and stores the
// row once. That is the reference's sequence of float additions, so an fp32
// d_table matches it bit for bit and a bf16 d_table is rounded once, as the
// reference rounds it. No atomics: a rerun gives the same bits.
//
// Cost: the sort (a few microseconds at 8K tokens) plus one pass over d_out.
// A run is summed by one block, so a token repeated r times costs r
// dependent row loads in that block (loads are issued four at a time); a
// batch made mostly of one id (padding) is the worst case.
//
// Ids outside [0, vocab_size) are counted in env.error_count; their output
// rows are zero (forward) and their gradient rows are dropped (backward).

#include <cuda_runtime.h>

#include <cstdint>
#include <cub/device/device_radix_sort.cuh>

#include "backends/cuda/kernels/device_ops.h"
#include "backends/cuda/kernels/device_util.h"

namespace zero3 {
namespace cuda {
namespace internal {
namespace {

constexpr int kVec = 8;
constexpr int kMaxThreads = 256;

int ThreadsFor(int64_t chunks) {
  int64_t threads = (chunks + 31) / 32 * 32;
  if (threads < 32) threads = 32;
  if (threads > kMaxThreads) threads = kMaxThreads;
  return static_cast<int>(threads);
}

// Bits needed to hold values 0..value.
int BitsFor(int64_t value) {
  int bits = 1;
  while (bits < 32 && (int64_t{1} << bits) <= value) ++bits;
  return bits;
}

template <int N, typename Table, typename Out>
__global__ void EmbeddingForwardKernel(const int32_t* tokens, Table table,
                                       Out out, int64_t num_tokens,
                                       int64_t vocab_size, int64_t dim,
                                       int* error_count) {
  const int64_t chunks = dim / N;
  for (int64_t t = blockIdx.x; t < num_tokens; t += gridDim.x) {
    const int32_t token = tokens[t];
    const bool valid = token >= 0 && token < vocab_size;
    if (!valid && threadIdx.x == 0 && error_count != nullptr) {
      atomicAdd(error_count, 1);
    }
    for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      float v[N];
      if (valid) {
        table.template Load<N>(token * dim + c * N, v);
      } else {
#pragma unroll
        for (int j = 0; j < N; ++j) v[j] = 0.0f;
      }
      out.template Store<N>(t * dim + c * N, v);
    }
  }
}

// keys[t] = tokens[t], or vocab_size (sorted last, then skipped) for an
// invalid id; positions[t] = t.
__global__ void PrepareKeys(const int32_t* tokens, int64_t num_tokens,
                            int64_t vocab_size, uint32_t* keys,
                            uint32_t* positions, int* error_count) {
  for (int64_t t = GlobalThread(); t < num_tokens; t += GridStride()) {
    const int32_t token = tokens[t];
    const bool valid = token >= 0 && token < vocab_size;
    if (!valid && error_count != nullptr) atomicAdd(error_count, 1);
    keys[t] = valid ? static_cast<uint32_t>(token)
                    : static_cast<uint32_t>(vocab_size);
    positions[t] = static_cast<uint32_t>(t);
  }
}

// grid (sorted positions, column chunks). The block at the first position
// of a run of equal keys sums the run into the table's gradient row.
template <int N, typename DOut, typename DTable>
__global__ void AccumulateRuns(const uint32_t* keys, const uint32_t* positions,
                               int64_t num_tokens, int64_t vocab_size,
                               int64_t dim, DOut d_out, DTable d_table) {
  const int64_t col =
      (static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x) * N;
  for (int64_t p = blockIdx.x; p < num_tokens; p += gridDim.x) {
    const uint32_t key = keys[p];
    if (key >= vocab_size) continue;
    if (p > 0 && keys[p - 1] == key) continue;
    int64_t end = p + 1;
    while (end < num_tokens && keys[end] == key) ++end;
    if (col >= dim) continue;
    const int64_t row = static_cast<int64_t>(key) * dim + col;
    float acc[N];
    d_table.template Load<N>(row, acc);
#pragma unroll 4
    for (int64_t q = p; q < end; ++q) {
      float v[N];
      d_out.template Load<N>(static_cast<int64_t>(positions[q]) * dim + col, v);
#pragma unroll
      for (int j = 0; j < N; ++j) acc[j] += v[j];
    }
    d_table.template Store<N>(row, acc);
  }
}

size_t SortTempBytes(int64_t num_tokens, int64_t vocab_size) {
  size_t bytes = 0;
  cub::DeviceRadixSort::SortPairs(
      nullptr, bytes, static_cast<const uint32_t*>(nullptr),
      static_cast<uint32_t*>(nullptr), static_cast<const uint32_t*>(nullptr),
      static_cast<uint32_t*>(nullptr), static_cast<int>(num_tokens), 0,
      BitsFor(vocab_size));
  return bytes;
}

}  // namespace

cudaError_t LaunchEmbeddingForward(const Env& env, int64_t num_tokens,
                                   int64_t vocab_size, int64_t dim,
                                   const int32_t* tokens, Tensor table,
                                   Tensor out) {
  if (num_tokens <= 0 || dim <= 0) return cudaSuccess;
  const unsigned grid = static_cast<unsigned>(
      num_tokens < int64_t{1} << 30 ? num_tokens : int64_t{1} << 30);
  return DispatchDType(table.dtype, [&](auto t_tag) {
    return DispatchDType(out.dtype, [&](auto o_tag) {
      using Table = Typed<decltype(t_tag)>;
      using Out = Typed<decltype(o_tag)>;
      const bool vec =
          dim % kVec == 0 && Aligned16(table.data) && Aligned16(out.data);
      if (vec) {
        EmbeddingForwardKernel<kVec>
            <<<grid, ThreadsFor(dim / kVec), 0, env.stream>>>(
                tokens, Table(table), Out(out), num_tokens, vocab_size, dim,
                env.error_count);
      } else {
        EmbeddingForwardKernel<1><<<grid, ThreadsFor(dim), 0, env.stream>>>(
            tokens, Table(table), Out(out), num_tokens, vocab_size, dim,
            env.error_count);
      }
      return cudaGetLastError();
    });
  });
}

int64_t EmbeddingBackwardScratchBytes(int64_t num_tokens, int64_t vocab_size) {
  if (num_tokens <= 0) return 0;
  return 4 * AlignScratch(num_tokens * static_cast<int64_t>(sizeof(uint32_t))) +
         AlignScratch(
             static_cast<int64_t>(SortTempBytes(num_tokens, vocab_size)));
}

cudaError_t LaunchEmbeddingBackward(const Env& env, int64_t num_tokens,
                                    int64_t vocab_size, int64_t dim,
                                    const int32_t* tokens, Tensor d_out,
                                    Tensor d_table) {
  if (num_tokens <= 0 || dim <= 0) return cudaSuccess;
  ScratchCarver carver(env.scratch);
  uint32_t* keys_in = carver.Take<uint32_t>(num_tokens);
  uint32_t* keys_out = carver.Take<uint32_t>(num_tokens);
  uint32_t* positions_in = carver.Take<uint32_t>(num_tokens);
  uint32_t* positions_out = carver.Take<uint32_t>(num_tokens);
  size_t temp_bytes = SortTempBytes(num_tokens, vocab_size);
  void* temp = carver.Take<char>(static_cast<int64_t>(temp_bytes));

  PrepareKeys<<<GridFor(num_tokens, 256, env.sm_count), 256, 0, env.stream>>>(
      tokens, num_tokens, vocab_size, keys_in, positions_in, env.error_count);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  err = cub::DeviceRadixSort::SortPairs(
      temp, temp_bytes, keys_in, keys_out, positions_in, positions_out,
      static_cast<int>(num_tokens), 0, BitsFor(vocab_size), env.stream);
  if (err != cudaSuccess) return err;

  return DispatchDType(d_out.dtype, [&](auto o_tag) {
    return DispatchDType(d_table.dtype, [&](auto t_tag) {
      using DOut = Typed<decltype(o_tag)>;
      using DTable = Typed<decltype(t_tag)>;
      const bool vec =
          dim % kVec == 0 && Aligned16(d_out.data) && Aligned16(d_table.data);
      const int n = vec ? kVec : 1;
      const int threads = ThreadsFor((dim + n - 1) / n);
      const int64_t columns_per_block = static_cast<int64_t>(threads) * n;
      const dim3 grid(static_cast<unsigned>(
                          num_tokens < 65535 * 16 ? num_tokens : 65535 * 16),
                      static_cast<unsigned>((dim + columns_per_block - 1) /
                                            columns_per_block));
      if (vec) {
        AccumulateRuns<kVec><<<grid, threads, 0, env.stream>>>(
            keys_out, positions_out, num_tokens, vocab_size, dim, DOut(d_out),
            DTable(d_table));
      } else {
        AccumulateRuns<1><<<grid, threads, 0, env.stream>>>(
            keys_out, positions_out, num_tokens, vocab_size, dim, DOut(d_out),
            DTable(d_table));
      }
      return cudaGetLastError();
    });
  });
}

}  // namespace internal
}  // namespace cuda
}  // namespace zero3
