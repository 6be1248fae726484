// Copyright 2026 The zero3 Authors.
//
// op_args.h: the shapes and scalars of every kernel, as plain data.
//
// A kernel call in the runtime names an op, carries one of these structs and
// lists its buffers. The CPU reference (reference.h), the CUDA kernels and the
// cost model (op_cost.h) all take the same struct, so an op means the same
// thing everywhere. The structs are aggregates with defaults; fields are set
// by name:
//
//   MatmulArgs args;
//   args.trans_b = true;
//   args.m = tokens;
//   args.n = out_features;
//   args.k = in_features;
//
// Shape conventions used throughout: every tensor is a dense row-major array;
// "[a, b, c]" lists its dimensions from slowest to fastest varying. Token
// tensors flatten batch and sequence: row t = b * seq + s.

#ifndef ZERO3_CORE_KERNELS_OP_ARGS_H_
#define ZERO3_CORE_KERNELS_OP_ARGS_H_

#include <cmath>
#include <cstdint>

#include "core/kernels/dtype.h"

namespace zero3 {
namespace kernels {

// Token embedding lookup: out[t, :] = table[tokens[t], :].
struct EmbeddingArgs {
  int64_t num_tokens = 0;  // T
  int64_t vocab_size = 0;  // V: rows of the table
  int64_t dim = 0;         // D: columns of the table
};

// General matrix multiply C = alpha * op(A) * op(B) + beta * C, where op(X)
// is X or its transpose. op(A) is [m, k], op(B) is [k, n], C is [m, n]. With
// trans_a, A is stored [k, m]; with trans_b, B is stored [n, k]. All three
// are dense (leading dimension = stored column count).
struct MatmulArgs {
  bool trans_a = false;
  bool trans_b = false;
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  float alpha = 1.0f;
  // 0 overwrites C without reading it (so C may hold garbage, even NaN);
  // 1 accumulates into C (gradient accumulation).
  float beta = 0.0f;
};

// The three GEMMs of a linear layer y = x * W^T with x [rows, in],
// W [out, in] (PyTorch's nn.Linear layout) and y [rows, out].

// Forward: y = x * W^T, as Matmul(args, x, W, y).
inline MatmulArgs LinearForwardArgs(int64_t rows, int64_t in_features,
                                    int64_t out_features) {
  MatmulArgs args;
  args.trans_b = true;
  args.m = rows;
  args.n = out_features;
  args.k = in_features;
  return args;
}

// Input gradient: dx = dy * W (+ beta * dx), as Matmul(args, dy, W, dx).
inline MatmulArgs LinearBackwardInputArgs(int64_t rows, int64_t in_features,
                                          int64_t out_features,
                                          float beta = 0.0f) {
  MatmulArgs args;
  args.m = rows;
  args.n = in_features;
  args.k = out_features;
  args.beta = beta;
  return args;
}

// Weight gradient, accumulated: dW += dy^T * x, as Matmul(args, dy, x, dW).
inline MatmulArgs LinearBackwardWeightArgs(int64_t rows, int64_t in_features,
                                           int64_t out_features,
                                           float beta = 1.0f) {
  MatmulArgs args;
  args.trans_a = true;
  args.m = out_features;
  args.n = in_features;
  args.k = rows;
  args.beta = beta;
  return args;
}

// Bias over rows: x[r, c] += bias[c]; its gradient is the column sum of dy.
struct BiasArgs {
  int64_t rows = 0;
  int64_t cols = 0;
};

// RMSNorm over the last dimension of x [rows, dim]:
// y = x * rsqrt(mean(x^2) + eps) * (weight_offset + weight).
struct RmsNormArgs {
  int64_t rows = 0;
  int64_t dim = 0;
  float eps = 1e-6f;
  // 0, or 1 for Gemma's RMSNorm, which scales by (1 + weight) with the
  // weight initialized to zero.
  float weight_offset = 0.0f;
};

// Rotary position embedding in the Llama/Qwen "rotate_half" convention on
// x [batch * seq, heads, head_dim]. The position of row t is t % seq. Of
// each head's first RotaryDim() dimensions (the rest pass through), for
// i < RotaryDim() / 2 the pair (x[i], x[i + RotaryDim() / 2]) is rotated by
// the angle position * inv_freq(i), with cos and sin multiplied by
// attention_scaling. inv_freq(i) is theta^(-2i / RotaryDim()), or, for a
// scaled RoPE (llama3, yarn, linear, ...; core/model/rope.h computes it),
// the table's entry.
inline constexpr int64_t kMaxRotaryPairs = 256;
struct RotaryArgs {
  int64_t batch = 0;
  int64_t seq = 0;
  int64_t heads = 0;
  int64_t head_dim = 0;    // Even.
  float theta = 10000.0f;  // 1e6 for Qwen2.5, 5e5 for Llama 3.
  // transformers' partial_rotary_factor * head_dim: 0 rotates the whole
  // head; else even and at most head_dim.
  int64_t rotary_dim = 0;
  // yarn's and longrope's attention factor; 1 for the other types.
  float attention_scaling = 1.0f;
  // true: inv_freq[i] holds pair i's inverse frequency (i < RotaryDim() / 2,
  // at most kMaxRotaryPairs); false: computed from theta.
  bool has_inv_freq = false;
  float inv_freq[kMaxRotaryPairs] = {};
  int64_t RotaryDim() const { return rotary_dim > 0 ? rotary_dim : head_dim; }
};

// Scaled dot-product self-attention with grouped-query heads:
// q [batch * seq, num_heads, head_dim], k and v
// [batch * seq, num_kv_heads, head_dim], out like q. Query head h reads
// kv head h / (num_heads / num_kv_heads), as Hugging Face's repeat_kv. A
// score is scale * q.k (scale 1 / sqrt(head_dim) unless set), then, with
// softcap > 0, softcap * tanh(score / softcap) (Gemma 2's
// attn_logit_softcapping), before the mask and the softmax.
struct AttentionArgs {
  int64_t batch = 0;
  int64_t seq = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;  // Divides num_heads.
  int64_t head_dim = 0;
  bool causal = true;  // Query s attends to keys 0..s only.
  // Causal only, > 0: a sliding window, query s attends to keys
  // s - window + 1 .. s (Mistral's and Phi-3's sliding_window, as
  // transformers masks it); 0: no window.
  int64_t window = 0;
  // > 0: the scores' scale (Gemma's query_pre_attn_scalar^-0.5); 0:
  // 1 / sqrt(head_dim).
  float scale = 0.0f;
  // > 0: scores are capped at +-softcap by tanh; 0: no capping.
  float softcap = 0.0f;
  double Scale() const {
    return scale > 0 ? static_cast<double>(scale)
                     : 1.0 / std::sqrt(static_cast<double>(head_dim));
  }
};

// The gated MLP's activation (transformers' hidden_act / hidden_activation).
enum class GluActivation {
  kSilu,      // "silu": g * sigmoid(g) (SwiGLU: Llama, Qwen, ...)
  kGeluTanh,  // "gelu_pytorch_tanh": GELU's tanh approximation (GeGLU: Gemma)
};

// The gated activation over n elements (gate, up and h alike, typically
// [rows, ffn]): h = act(gate) * up, act as `activation` says.
struct SwigluArgs {
  int64_t n = 0;
  GluActivation activation = GluActivation::kSilu;
};

// Softmax cross-entropy of logits [num_tokens, vocab_size] against int32
// targets. Rows whose target is ignore_index do not count. The loss is the
// sum of the counted rows' terms over a divisor: loss_divisor where it is
// positive (the engine's share of a global batch's predicted targets), else
// the batch's counted rows (its mean).
//
// The rows may be one chunk of a larger batch (an LM head computed a few
// rows at a time): they are rows [row_offset, row_offset + num_tokens) of a
// batch of batch_tokens rows. targets then holds the whole batch's
// batch_tokens targets (row r of the op reads targets[row_offset + r]), and
// the mean loss and its gradient count the batch's counted rows. With
// batch_tokens 0 the batch is the op's own rows (row_offset must be 0).
struct CrossEntropyArgs {
  int64_t num_tokens = 0;
  int64_t vocab_size = 0;
  int32_t ignore_index = -1;
  // The backward pass multiplies the gradient of the mean loss by this: the
  // loss scale (fp16) and 1 / gradient_accumulation_steps go through it.
  float grad_scale = 1.0f;
  double loss_divisor = 0.0;  // >= 0 and finite; 0: the counted rows
  int64_t batch_tokens = 0;
  int64_t row_offset = 0;
  // > 0: each logit x is first capped to softcap * tanh(x / softcap)
  // (Gemma 2's final_logit_softcapping), and the gradient written is that
  // of the raw logits; 0: no capping.
  float logit_softcap = 0.0f;
  // The rows of the batch: batch_tokens, or num_tokens when it is 0.
  int64_t BatchTokens() const {
    return batch_tokens > 0 ? batch_tokens : num_tokens;
  }
  // What the loss divides by, given the batch's counted rows.
  double Divisor(int64_t counted) const {
    return loss_divisor > 0 ? loss_divisor : static_cast<double>(counted);
  }
};

// y += alpha * x over n elements.
struct AccumulateArgs {
  int64_t n = 0;
  float alpha = 1.0f;
};

// x *= alpha over n elements.
struct ScaleArgs {
  int64_t n = 0;
  float alpha = 1.0f;
};

// x = value over n elements.
struct FillArgs {
  int64_t n = 0;
  float value = 0.0f;
};

// out = a + b over n elements (the residual connection).
struct AddArgs {
  int64_t n = 0;
};

// dst = src over n elements, converting between storage types (rounding to
// nearest even when narrowing).
struct CastArgs {
  int64_t n = 0;
  DType src = DType::kF32;
  DType dst = DType::kF32;
};

// Reductions over n elements (sum of squares, all-finite).
struct ReduceArgs {
  int64_t n = 0;
};

// One AdamW (or Adam with L2) step over n fp32 elements with DeepSpeed
// cpu_adam's math; defaults are DeepSpeedCPUAdam's constructor defaults.
struct AdamWArgs {
  int64_t n = 0;
  int64_t step = 1;  // t: 1 on the first step.
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  bool bias_correction = true;
  // true: decoupled weight decay (AdamW). false: L2, wd * p added to g.
  bool adamw_mode = true;
  // Gradients are multiplied by this first (DeepSpeed's combined unscale
  // and clip factor), in the same pass: no separate scaling kernel.
  float grad_scale = 1.0f;
};

// The per-step scalars of an AdamW step, as DeepSpeed's cpu_adam forms them
// (Adam_Optimizer::IncrementStep: beta^t with pow() in double, rounded to
// float, then the corrections in float). Every implementation (the CPU
// reference, the CUDA kernel, the host optimizer) takes them from here, so
// their updates agree bit for bit.
struct AdamWStepScalars {
  float step_size = 0;         // -lr / (1 - beta1^t)
  float w_decay = 0;           // -lr * weight_decay
  float bias_correction2 = 1;  // 1 / sqrt(1 - beta2^t)
  bool decoupled = false;      // weight decay applied to the parameter
  bool l2 = false;             // weight decay added to the gradient
};

inline AdamWStepScalars AdamWStepScalarsOf(const AdamWArgs& args) {
  float bias_correction1 = 1.0f;
  AdamWStepScalars s;
  if (args.bias_correction) {
    const float beta1_t = static_cast<float>(
        std::pow(static_cast<double>(args.beta1), args.step));
    const float beta2_t = static_cast<float>(
        std::pow(static_cast<double>(args.beta2), args.step));
    bias_correction1 = 1.0f - beta1_t;
    s.bias_correction2 = 1.0f / std::sqrt(1.0f - beta2_t);
  }
  s.step_size = -1.0f * args.lr / bias_correction1;
  s.w_decay = -1.0f * args.lr * args.weight_decay;
  // DeepSpeed applies only a positive weight decay.
  const bool has_decay = args.weight_decay > 0.0f;
  s.decoupled = has_decay && args.adamw_mode;
  s.l2 = has_decay && !args.adamw_mode;
  return s;
}

}  // namespace kernels
}  // namespace zero3

#endif  // ZERO3_CORE_KERNELS_OP_ARGS_H_
