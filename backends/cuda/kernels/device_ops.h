// Copyright 2026 The zero3 Authors.
//
// device_ops.h: the host-side launchers of the CUDA kernels, one per op,
// taking raw device pointers, element types and shapes.
//
// This is the layer between launch.cc (which unpacks a runtime::KernelCall,
// validates it and turns errors into absl::Status) and the .cu files (which
// hold the kernels). It deliberately includes nothing but the CUDA runtime
// API, so that nvcc compiles the .cu files without Abseil or the rest of the
// project; the semantics of every launcher are those of the op of the same
// name in core/kernels/reference.h and core/runtime/reference_executor.cc:
// each tensor has its own storage type, arithmetic is fp32 (double where the
// reference uses double), results are rounded to nearest even on store.
//
// Every launcher only enqueues work on env.stream and returns the launch
// error (cudaSuccess when the launch was accepted); kernels run
// asynchronously. Callers validate shapes and sizes first: launchers assume
// valid arguments, non-negative sizes and device pointers with enough
// elements. A launcher with nothing to do (n == 0) enqueues nothing.
//
// Scratch: launchers that need temporary device memory take it from
// env.scratch, which must hold at least the bytes the matching
// *ScratchBytes() function returns. Scratch is reused by the next launch, so
// all launches sharing a scratch area must be ordered (one stream).
//
// Thread-safety: launchers are thread-safe; they keep no state except the
// per-device kernel attributes set once (cudaFuncSetAttribute).

#ifndef ZERO3_BACKENDS_CUDA_KERNELS_DEVICE_OPS_H_
#define ZERO3_BACKENDS_CUDA_KERNELS_DEVICE_OPS_H_

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>

namespace zero3 {
namespace cuda {
namespace internal {

// Storage type of a tensor. Mirrors kernels::DType (same order); launch.cc
// converts.
enum class DT : int { kF32 = 0, kBF16 = 1, kF16 = 2 };

// A device tensor: its first element and storage type.
struct Tensor {
  void* data = nullptr;
  DT dtype = DT::kF32;
};

// What every launch needs besides its operands.
struct Env {
  cudaStream_t stream = nullptr;
  int sm_count = 1;
  // Temporary device memory, 256-byte aligned, valid for the launch.
  void* scratch = nullptr;
  int64_t scratch_bytes = 0;
  // A device counter of invalid ids (tokens or targets outside the table),
  // incremented by the kernels that meet one; may be null.
  int* error_count = nullptr;
};

// Rounds up to the alignment every scratch carve-out keeps.
constexpr int64_t AlignScratch(int64_t bytes) {
  return (bytes + 255) / 256 * 256;
}

// ---------------------------------------------------------------------------
// Elementwise (elementwise.cu)

// dst = src converted (round to nearest even). src and dst must not overlap
// unless identical; for equal dtypes the caller copies instead.
cudaError_t LaunchCast(const Env& env, int64_t n, Tensor src, Tensor dst);
// y = y + alpha * x.
cudaError_t LaunchAccumulate(const Env& env, int64_t n, float alpha, Tensor x,
                             Tensor y);
// x = x * alpha.
cudaError_t LaunchScale(const Env& env, int64_t n, float alpha, Tensor x);
// x = value.
cudaError_t LaunchFill(const Env& env, int64_t n, float value, Tensor x);
// out = a + b (out may alias a or b).
cudaError_t LaunchAdd(const Env& env, int64_t n, Tensor a, Tensor b,
                      Tensor out);
// The gated activation. Mirrors kernels::GluActivation (same order);
// launch.cc converts.
enum class Glu : int { kSilu = 0, kGeluTanh = 1 };
// h = act(gate) * up: silu(g) = g * sigmoid(g), or GELU's tanh
// approximation 0.5 g (1 + tanh(sqrt(2 / pi) (g + 0.044715 g^3))).
cudaError_t LaunchSwigluForward(const Env& env, int64_t n, Glu act, Tensor gate,
                                Tensor up, Tensor h);
// d_gate = dh * up * act'(gate), d_up = dh * act(gate).
cudaError_t LaunchSwigluBackward(const Env& env, int64_t n, Glu act,
                                 Tensor gate, Tensor up, Tensor dh,
                                 Tensor d_gate, Tensor d_up);
// x[r, c] += bias[c].
cudaError_t LaunchBiasAdd(const Env& env, int64_t rows, int64_t cols,
                          Tensor bias, Tensor x);

// The scalars of one AdamW step, derived on the host exactly as
// kernels::AdamWStep derives them.
struct AdamWScalars {
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  float step_size = 0.0f;         // -lr / bias_correction1
  float w_decay = 0.0f;           // -lr * weight_decay
  float bias_correction2 = 1.0f;  // 1 / sqrt(1 - beta2^t), or 1
  float grad_scale = 1.0f;        // gradients are multiplied by it first
  bool l2 = false;                // wd > 0 and !adamw_mode
  bool decoupled = false;         // wd > 0 and adamw_mode
};
// Updated in place: params and the two moments fp32 or bf16 (the moments
// of one dtype), fp32 gradients.
cudaError_t LaunchAdamW(const Env& env, int64_t n, const AdamWScalars& s,
                        Tensor params, const float* grads, Tensor exp_avg,
                        Tensor exp_avg_sq);

// ---------------------------------------------------------------------------
// Reductions (reduce.cu)

// out[0..1] (fp32) = [hi, lo] of (accumulate ? out[0] + out[1] : 0) +
// sum x^2, in double.
int64_t SumSquaresScratchBytes(int64_t n);
cudaError_t LaunchSumSquares(const Env& env, int64_t n, Tensor x, float* out,
                             bool accumulate);

// d_bias[c] += sum_r dy[r, c].
int64_t BiasBackwardScratchBytes(int64_t rows, int64_t cols);
cudaError_t LaunchBiasBackward(const Env& env, int64_t rows, int64_t cols,
                               Tensor dy, Tensor d_bias);

// ---------------------------------------------------------------------------
// RMSNorm (rmsnorm.cu). The row is scaled by (weight_offset + weight), the
// sum rounded to float (weight_offset 0: by weight itself).

cudaError_t LaunchRmsNormForward(const Env& env, int64_t rows, int64_t dim,
                                 float eps, float weight_offset, Tensor x,
                                 Tensor weight, Tensor y, Tensor rstd);
int64_t RmsNormBackwardScratchBytes(int64_t rows, int64_t dim);
cudaError_t LaunchRmsNormBackward(const Env& env, int64_t rows, int64_t dim,
                                  float weight_offset, Tensor x, Tensor weight,
                                  Tensor rstd, Tensor dy, Tensor dx,
                                  Tensor d_weight);

// ---------------------------------------------------------------------------
// Rotary (rotary.cu). inverse = false: the forward rotation; true: its
// transpose (the backward pass). y may alias x.

// The frequencies of kernels::RotaryArgs (same meaning; launch.cc checks
// the table's size against kernels::kMaxRotaryPairs): the first rotary_dim
// dimensions of each head rotate, cos and sin scaled by attention_scaling,
// pair i at inv_freq[i] when has_inv_freq, else at theta^(-2i/rotary_dim).
struct RotaryFrequencies {
  int64_t rotary_dim = 0;
  float theta = 10000.0f;
  float attention_scaling = 1.0f;
  bool has_inv_freq = false;
  float inv_freq[256] = {};
};

cudaError_t LaunchRotary(const Env& env, int64_t batch, int64_t seq,
                         int64_t heads, int64_t head_dim,
                         const RotaryFrequencies& freq, bool inverse, Tensor x,
                         Tensor y, const int32_t* positions = nullptr);

// ---------------------------------------------------------------------------
// Embedding (embedding.cu)

cudaError_t LaunchEmbeddingForward(const Env& env, int64_t num_tokens,
                                   int64_t vocab_size, int64_t dim,
                                   const int32_t* tokens, Tensor table,
                                   Tensor out);
int64_t EmbeddingBackwardScratchBytes(int64_t num_tokens, int64_t vocab_size);
cudaError_t LaunchEmbeddingBackward(const Env& env, int64_t num_tokens,
                                    int64_t vocab_size, int64_t dim,
                                    const int32_t* tokens, Tensor d_out,
                                    Tensor d_table);

// ---------------------------------------------------------------------------
// Cross-entropy (cross_entropy.cu). softcap > 0: each logit x counts as
// softcap * tanh(x / softcap) (lse and the loss are of the capped logits,
// the gradient is that of the raw ones); 0: as it is.

// Forward over the rows of `targets` (the op's rows, already offset): with
// row_loss null, the mean loss into `loss` (scratch holds the row terms);
// else the row terms into row_loss and `loss` untouched (no scratch).
int64_t CrossEntropyForwardScratchBytes(int64_t num_tokens);
cudaError_t LaunchCrossEntropyForward(const Env& env, int64_t num_tokens,
                                      int64_t vocab_size, int32_t ignore_index,
                                      double divisor, float softcap,
                                      Tensor logits, const int32_t* targets,
                                      Tensor lse, Tensor loss,
                                      double* row_loss);
// The sum of a batch's row terms over `divisor`, or over its counted
// targets where divisor is 0.
cudaError_t LaunchCrossEntropyLoss(const Env& env, int64_t num_tokens,
                                   int64_t vocab_size, int32_t ignore_index,
                                   double divisor, const int32_t* targets,
                                   const double* row_loss, Tensor loss);
// Rows [row_offset, row_offset + num_tokens) of a batch of batch_tokens
// targets; the factor counts the whole batch.
int64_t CrossEntropyBackwardScratchBytes();
cudaError_t LaunchCrossEntropyBackward(const Env& env, int64_t num_tokens,
                                       int64_t batch_tokens, int64_t row_offset,
                                       int64_t vocab_size, int32_t ignore_index,
                                       float grad_scale, double divisor,
                                       float softcap, Tensor logits,
                                       const int32_t* batch_targets, Tensor lse,
                                       Tensor d_logits);

// ---------------------------------------------------------------------------
// Attention (attention.cu: any dtype, head_dim <= 256;
// flash_attention.cu: tensor cores, bf16/fp16, head_dim 64 or 128)

struct AttentionShape {
  int64_t batch = 0;
  int64_t seq = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  bool causal = true;
  // Packed documents (device, int32 [batch * seq]; null: none): query i of
  // a sequence sees keys i - positions[i] .. i only.
  const int32_t* positions = nullptr;
  // A sliding window (causal): query i sees keys i - window + 1 .. i.
  int64_t window = 0;
  // > 0: the scores' scale; 0: 1 / sqrt(head_dim).
  float scale = 0.0f;
  // > 0: each scaled score s becomes softcap * tanh(s / softcap) before
  // the mask and the softmax; 0: no capping.
  float softcap = 0.0f;
};

// The scale the kernels apply to q.k: kernels::AttentionArgs::Scale()
// rounded to float.
inline float ScoreScale(const AttentionShape& shape) {
  return shape.scale > 0.0f
             ? shape.scale
             : static_cast<float>(
                   1.0 / std::sqrt(static_cast<double>(shape.head_dim)));
}

constexpr int64_t kMaxSimpleAttentionHeadDim = 256;

cudaError_t LaunchAttentionForwardSimple(const Env& env,
                                         const AttentionShape& shape, Tensor q,
                                         Tensor k, Tensor v, Tensor out,
                                         Tensor lse);
// The scratch of both backward paths: delta[b, h, s] = dO . O, fp32.
int64_t AttentionBackwardScratchBytes(const AttentionShape& shape);
// Writes delta (B * Hq * S floats, in scratch) for the backward kernels.
cudaError_t LaunchAttentionDelta(const Env& env, const AttentionShape& shape,
                                 Tensor out, Tensor d_out, float* delta);
cudaError_t LaunchAttentionBackwardSimple(const Env& env,
                                          const AttentionShape& shape, Tensor q,
                                          Tensor k, Tensor v, Tensor out,
                                          Tensor lse, Tensor d_out, Tensor dq,
                                          Tensor dk, Tensor dv);

// True when the tensor-core kernels can run this problem: q, k, v, out (and
// for the backward pass d_out, dq, dk, dv) all bf16 or all fp16, head_dim 64
// or 128, every pointer 16-byte aligned. lse may be of any dtype.
bool FlashAttentionSupports(const AttentionShape& shape, const Tensor* tensors,
                            int count);
cudaError_t LaunchFlashAttentionForward(const Env& env,
                                        const AttentionShape& shape, Tensor q,
                                        Tensor k, Tensor v, Tensor out,
                                        Tensor lse);
// Uses AttentionBackwardScratchBytes(shape) of scratch.
cudaError_t LaunchFlashAttentionBackward(const Env& env,
                                         const AttentionShape& shape, Tensor q,
                                         Tensor k, Tensor v, Tensor out,
                                         Tensor lse, Tensor d_out, Tensor dq,
                                         Tensor dk, Tensor dv);

}  // namespace internal
}  // namespace cuda
}  // namespace zero3

#endif  // ZERO3_BACKENDS_CUDA_KERNELS_DEVICE_OPS_H_
