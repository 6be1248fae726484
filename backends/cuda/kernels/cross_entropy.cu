// Copyright 2026 The zero3 Authors.
//
// Softmax cross-entropy forward (log-sum-exp per row and the mean loss) and
// backward (softmax minus one-hot, scaled).
//
// Forward: one block per row reads the logits once, keeping an online
// (running max, rescaled sum) pair per thread; the block combines the pairs
// in double. Each row writes its loss term (lse - logit[target] in double,
// 0 when ignored) to scratch, or for a chunk of a batch to the op's row_loss;
// the loss kernel (one block) sums a batch's terms in a fixed order, in
// double, counts its targets, and stores the mean as one fp32 on the device.
// A whole batch runs it at once; a chunked one through CrossEntropyLoss after
// its last chunk, with the same bits. Deterministic.
//
// Backward: a small kernel counts the batch's counted rows and forms the
// factor grad_scale / count (in double, rounded to float, as the reference
// does); then an elementwise pass over [rows, vocab] writes the gradient, in
// place if d_logits aliases logits.
//
// Soft-capped logits (softcap > 0, a template flag of both kernels): each
// logit x is replaced by z = softcap * tanh(x / softcap) where it is read,
// so lse and the loss terms are those of z, and the backward pass writes the
// gradient of the raw logits, (softmax(z) - onehot) * factor * (1 - (z /
// softcap)^2). Without it the kernels are those of plain logits.
//
// Targets that are neither ignore_index nor in [0, vocab_size) are counted in
// env.error_count by the forward pass and treated as ignored by both.

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "backends/cuda/kernels/device_ops.h"
#include "backends/cuda/kernels/device_util.h"

namespace zero3 {
namespace cuda {
namespace internal {
namespace {

constexpr int kVec = 8;
constexpr int kFinalThreads = 1024;

int ForwardThreads(int64_t vocab_size) {
  if (vocab_size >= 32768) return 1024;
  if (vocab_size >= 4096) return 256;
  return 128;
}

// Calls f(std::bool_constant<kCap>), kCap = softcap > 0.
template <typename F>
decltype(auto) DispatchCap(float softcap, F&& f) {
  if (softcap > 0.0f) return f(std::true_type());
  return f(std::false_type());
}

__device__ __forceinline__ bool Counted(int32_t target, int32_t ignore_index,
                                        int64_t vocab_size) {
  return target != ignore_index && target >= 0 && target < vocab_size;
}

template <int N, bool kCap, typename L>
__global__ void CrossEntropyForwardKernel(L logits, const int32_t* targets,
                                          Dyn lse, int64_t rows,
                                          int64_t vocab_size,
                                          int32_t ignore_index, float softcap,
                                          double* row_loss, int* error_count) {
  __shared__ float shared_max[32];
  __shared__ double shared_sum[32];
  const int64_t chunks = vocab_size / N;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t base = row * vocab_size;
    float m = -INFINITY;
    float s = 0.0f;
    for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      float v[N];
      logits.template Load<N>(base + c * N, v);
      if constexpr (kCap) {
#pragma unroll
        for (int j = 0; j < N; ++j) v[j] = Softcap(v[j], softcap);
      }
      float local = v[0];
#pragma unroll
      for (int j = 1; j < N; ++j) local = fmaxf(local, v[j]);
      if (local > m) {
        // m == -inf leaves s == 0, and 0 * exp(-inf) is 0.
        s *= expf(m - local);
        m = local;
      }
      // A thread that has seen only -inf keeps s == 0: subtract 0 instead of
      // -inf so that exp(-inf - -inf) cannot make a NaN.
      const float shift = m == -INFINITY ? 0.0f : m;
#pragma unroll
      for (int j = 0; j < N; ++j) s += expf(v[j] - shift);
    }
    const float row_max = BlockMax(m, shared_max);
    const float row_shift = row_max == -INFINITY ? 0.0f : row_max;
    const double scaled =
        m == -INFINITY
            ? 0.0
            : static_cast<double>(s) * exp(static_cast<double>(m) - row_shift);
    const double sum = BlockSum(scaled, shared_sum);
    if (threadIdx.x == 0) {
      const double row_lse = static_cast<double>(row_max) + log(sum);
      lse.Store(row, static_cast<float>(row_lse));
      const int32_t target = targets[row];
      const bool counted = Counted(target, ignore_index, vocab_size);
      if (target != ignore_index && !counted && error_count != nullptr) {
        atomicAdd(error_count, 1);
      }
      float target_logit = counted ? logits.Load(base + target) : 0.0f;
      if constexpr (kCap) target_logit = Softcap(target_logit, softcap);
      row_loss[row] =
          counted ? row_lse - static_cast<double>(target_logit) : 0.0;
    }
  }
}

__global__ void __launch_bounds__(kFinalThreads)
    CrossEntropyLossKernel(const double* row_loss, const int32_t* targets,
                           int64_t rows, int64_t vocab_size,
                           int32_t ignore_index, double divisor, Dyn loss) {
  __shared__ double shared[32];
  double total = 0.0;
  double count = 0.0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    total += row_loss[r];
    count += Counted(targets[r], ignore_index, vocab_size) ? 1.0 : 0.0;
  }
  total = BlockSum(total, shared);
  count = BlockSum(count, shared);
  if (threadIdx.x == 0) {
    const double by = divisor > 0.0 ? divisor : count;
    loss.Store(0, count == 0.0 ? 0.0f : static_cast<float>(total / by));
  }
}

// factor[0] = grad_scale / (divisor, or the count where it is 0) as float
// (0 when nothing counts).
__global__ void __launch_bounds__(kFinalThreads)
    CrossEntropyFactorKernel(const int32_t* targets, int64_t rows,
                             int64_t vocab_size, int32_t ignore_index,
                             float grad_scale, double divisor, float* factor) {
  __shared__ double shared[32];
  double count = 0.0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    count += Counted(targets[r], ignore_index, vocab_size) ? 1.0 : 0.0;
  }
  count = BlockSum(count, shared);
  if (threadIdx.x == 0) {
    const double by = divisor > 0.0 ? divisor : count;
    factor[0] = count == 0.0
                    ? 0.0f
                    : static_cast<float>(static_cast<double>(grad_scale) / by);
  }
}

// grid (column chunks, rows), both grid-stride.
template <int N, bool kCap, typename L, typename D>
__global__ void __launch_bounds__(256)
    CrossEntropyBackwardKernel(L logits, const int32_t* targets, Dyn lse,
                               D d_logits, int64_t rows, int64_t vocab_size,
                               int32_t ignore_index, float softcap,
                               const float* factor_ptr) {
  const float factor = *factor_ptr;
  const int64_t chunks = vocab_size / N;
  for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    const int64_t base = row * vocab_size;
    const int32_t target = targets[row];
    const bool counted =
        Counted(target, ignore_index, vocab_size) && factor != 0.0f;
    const float row_lse = lse.Load(row);
    for (int64_t c =
             static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         c < chunks; c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
      float v[N];
      if (counted) {
        logits.template Load<N>(base + c * N, v);
#pragma unroll
        for (int j = 0; j < N; ++j) {
          if constexpr (kCap) v[j] = Softcap(v[j], softcap);
          const float p = expf(__fsub_rn(v[j], row_lse));
          const float hot = c * N + j == target ? 1.0f : 0.0f;
          const float d = __fmul_rn(__fsub_rn(p, hot), factor);
          if constexpr (kCap) {
            v[j] = __fmul_rn(d, SoftcapGrad(v[j], softcap));
          } else {
            v[j] = d;
          }
        }
      } else {
#pragma unroll
        for (int j = 0; j < N; ++j) v[j] = 0.0f;
      }
      d_logits.template Store<N>(base + c * N, v);
    }
  }
}

}  // namespace

int64_t CrossEntropyForwardScratchBytes(int64_t num_tokens) {
  return AlignScratch(num_tokens * static_cast<int64_t>(sizeof(double)));
}

cudaError_t LaunchCrossEntropyForward(const Env& env, int64_t num_tokens,
                                      int64_t vocab_size, int32_t ignore_index,
                                      double divisor, float softcap,
                                      Tensor logits, const int32_t* targets,
                                      Tensor lse, Tensor loss,
                                      double* row_loss_out) {
  double* row_loss = row_loss_out;
  if (row_loss == nullptr) {
    ScratchCarver carver(env.scratch);
    row_loss = carver.Take<double>(num_tokens);
  }
  if (num_tokens > 0) {
    const unsigned grid = static_cast<unsigned>(
        num_tokens < int64_t{1} << 30 ? num_tokens : int64_t{1} << 30);
    const int threads = ForwardThreads(vocab_size);
    DispatchCap(softcap, [&](auto cap) {
      constexpr bool kCap = decltype(cap)::value;
      return DispatchDType(logits.dtype, [&](auto tag) {
        using L = Typed<decltype(tag)>;
        if (vocab_size % kVec == 0 && Aligned16(logits.data)) {
          CrossEntropyForwardKernel<kVec, kCap>
              <<<grid, threads, 0, env.stream>>>(
                  L(logits), targets, Dyn(lse), num_tokens, vocab_size,
                  ignore_index, softcap, row_loss, env.error_count);
        } else {
          CrossEntropyForwardKernel<1, kCap><<<grid, threads, 0, env.stream>>>(
              L(logits), targets, Dyn(lse), num_tokens, vocab_size,
              ignore_index, softcap, row_loss, env.error_count);
        }
        return 0;
      });
    });
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
  }
  if (row_loss_out != nullptr) return cudaSuccess;
  return LaunchCrossEntropyLoss(env, num_tokens, vocab_size, ignore_index,
                                divisor, targets, row_loss, loss);
}

cudaError_t LaunchCrossEntropyLoss(const Env& env, int64_t num_tokens,
                                   int64_t vocab_size, int32_t ignore_index,
                                   double divisor, const int32_t* targets,
                                   const double* row_loss, Tensor loss) {
  CrossEntropyLossKernel<<<1, kFinalThreads, 0, env.stream>>>(
      row_loss, targets, num_tokens, vocab_size, ignore_index, divisor,
      Dyn(loss));
  return cudaGetLastError();
}

int64_t CrossEntropyBackwardScratchBytes() {
  return AlignScratch(sizeof(float));
}

cudaError_t LaunchCrossEntropyBackward(const Env& env, int64_t num_tokens,
                                       int64_t batch_tokens, int64_t row_offset,
                                       int64_t vocab_size, int32_t ignore_index,
                                       float grad_scale, double divisor,
                                       float softcap, Tensor logits,
                                       const int32_t* batch_targets, Tensor lse,
                                       Tensor d_logits) {
  if (num_tokens <= 0 || vocab_size <= 0) return cudaSuccess;
  float* factor = static_cast<float*>(env.scratch);
  CrossEntropyFactorKernel<<<1, kFinalThreads, 0, env.stream>>>(
      batch_targets, batch_tokens, vocab_size, ignore_index, grad_scale,
      divisor, factor);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  const int32_t* targets = batch_targets + row_offset;
  return DispatchCap(softcap, [&](auto cap) {
    constexpr bool kCap = decltype(cap)::value;
    return DispatchDType(logits.dtype, [&](auto l_tag) {
      return DispatchDType(d_logits.dtype, [&](auto d_tag) {
        using L = Typed<decltype(l_tag)>;
        using D = Typed<decltype(d_tag)>;
        const bool vec = vocab_size % kVec == 0 && Aligned16(logits.data) &&
                         Aligned16(d_logits.data);
        const int n = vec ? kVec : 1;
        constexpr int kThreads = 256;
        const int64_t column_blocks =
            (vocab_size / n + kThreads - 1) / kThreads;
        const dim3 grid(
            static_cast<unsigned>(column_blocks < 1024 ? column_blocks : 1024),
            static_cast<unsigned>(num_tokens < 65535 ? num_tokens : 65535));
        if (vec) {
          CrossEntropyBackwardKernel<kVec, kCap>
              <<<grid, kThreads, 0, env.stream>>>(
                  L(logits), targets, Dyn(lse), D(d_logits), num_tokens,
                  vocab_size, ignore_index, softcap, factor);
        } else {
          CrossEntropyBackwardKernel<1, kCap>
              <<<grid, kThreads, 0, env.stream>>>(
                  L(logits), targets, Dyn(lse), D(d_logits), num_tokens,
                  vocab_size, ignore_index, softcap, factor);
        }
        return cudaGetLastError();
      });
    });
  });
}

}  // namespace internal
}  // namespace cuda
}  // namespace zero3
