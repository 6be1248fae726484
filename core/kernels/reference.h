// Copyright 2026 The zero3 Authors.
//
// reference.h: CPU reference implementations of every kernel of a
// Qwen2/Llama-family decoder-only transformer, forward and backward, plus the
// elementwise, reduction and optimizer kernels the engine needs.
//
// These are the project's correctness oracle: the simulator runs them in data
// mode, the reference trainer runs them, and the CUDA kernels are compared
// against them. They favour clarity and determinism over speed: single
// threaded, a fixed summation order, no fast-math. Every backward is checked
// against finite differences in reference_test.cc.
//
// Conventions (see op_args.h for the Args structs and shape notation):
//  - Templated on T, float or double (double lets tests take precise finite
//    differences; the simulator uses float). Both are instantiated in
//    reference.cc.
//  - Buffers are raw pointers to dense row-major arrays owned by the caller;
//    nothing here retains a pointer or allocates memory visible to the
//    caller. A few functions allocate internal scratch, freed before they
//    return (noted on each).
//  - Outputs are overwritten unless a comment says "accumulates". Activation
//    gradients (dx, dq, ...) are overwritten; parameter gradients (d_weight,
//    d_table, d_bias) accumulate, as in PyTorch, so micro-batches can sum
//    into one gradient buffer.
//  - Unless stated, an output must not overlap an input.
//  - Statistics that are long reductions (mean of squares, softmax
//    normalizers, the loss, norms) accumulate in double; GEMM-like dot
//    products accumulate in T.
//  - Shapes are checked with ZR_CHECK: a mismatch is a bug in the caller.
//  - All functions are pure functions of their arguments and
//    thread-compatible: concurrent calls are safe when their output buffers
//    do not overlap any buffer of another call.

#ifndef ZERO3_CORE_KERNELS_REFERENCE_H_
#define ZERO3_CORE_KERNELS_REFERENCE_H_

#include <cstdint>

#include "core/kernels/dtype.h"
#include "core/kernels/op_args.h"

namespace zero3 {
namespace kernels {

// ---------------------------------------------------------------------------
// Embedding

// out[t, :] = table[tokens[t], :].
// tokens [T] int32, each in [0, vocab_size); table [V, D]; out [T, D].
template <typename T>
void EmbeddingForward(const EmbeddingArgs& args, const int32_t* tokens,
                      const T* table, T* out);

// Accumulates: d_table[tokens[t], :] += d_out[t, :] for every t in order, so
// a token that appears several times receives the sum of its rows.
// tokens [T]; d_out [T, D]; d_table [V, D].
template <typename T>
void EmbeddingBackward(const EmbeddingArgs& args, const int32_t* tokens,
                       const T* d_out, T* d_table);

// ---------------------------------------------------------------------------
// Matmul

// c = alpha * op(a) * op(b) + beta * c (see MatmulArgs for layouts).
// a [m, k] ([k, m] if trans_a); b [k, n] ([n, k] if trans_b); c [m, n].
// With beta == 0, c is write-only: its old contents (even NaN) are ignored.
// Each element of c sums its k products in order. Internal scratch: one row
// of c, plus a transposed copy of b when trans_b.
// Every linear layer and its two backward GEMMs go through this; see
// LinearForwardArgs and friends in op_args.h.
template <typename T>
void Matmul(const MatmulArgs& args, const T* a, const T* b, T* c);

// ---------------------------------------------------------------------------
// Bias

// In place: x[r, c] += bias[c]. x [rows, cols]; bias [cols].
template <typename T>
void BiasAdd(const BiasArgs& args, const T* bias, T* x);

// Accumulates the column sums: d_bias[c] += sum_r dy[r, c].
// dy [rows, cols]; d_bias [cols].
template <typename T>
void BiasBackward(const BiasArgs& args, const T* dy, T* d_bias);

// ---------------------------------------------------------------------------
// RMSNorm

// y[r, :] = x[r, :] * rstd[r] * weight, rstd[r] = 1 / sqrt(mean(x[r, :]^2) +
// eps). x, y [rows, dim]; weight [dim]; rstd [rows], saved for the backward
// pass. y may alias x.
template <typename T>
void RmsNormForward(const RmsNormArgs& args, const T* x, const T* weight, T* y,
                    T* rstd);

// With g = dy * weight (elementwise, per row):
//   dx = rstd * g - x * rstd^3 * sum(g * x) / dim      (overwrites dx)
//   d_weight += sum over rows of dy * x * rstd          (accumulates)
// x, dy, dx [rows, dim]; weight, d_weight [dim]; rstd [rows] from the
// forward pass. dx may alias dy.
template <typename T>
void RmsNormBackward(const RmsNormArgs& args, const T* x, const T* weight,
                     const T* rstd, const T* dy, T* dx, T* d_weight);

// ---------------------------------------------------------------------------
// Rotary position embedding

// For each row t (position p = t % seq), head, and i < half = head_dim / 2,
// with a = p * theta^(-2i / head_dim) (computed in double):
//   y[i]        = x[i] * cos(a) - x[i + half] * sin(a)
//   y[i + half] = x[i + half] * cos(a) + x[i] * sin(a)
// x, y [batch * seq, heads, head_dim]. y may alias x (in place). Internal
// scratch: cos/sin tables of seq * head_dim / 2 values. With `positions`
// (int32 [batch * seq], packed documents), row t's position is
// positions[t] instead: its place in its document, from 0.
template <typename T>
void RotaryForward(const RotaryArgs& args, const T* x, T* y,
                   const int32_t* positions = nullptr);

// The transpose (= inverse) rotation, which is the exact gradient:
//   dx[i]        =  dy[i] * cos(a) + dy[i + half] * sin(a)
//   dx[i + half] =  dy[i + half] * cos(a) - dy[i] * sin(a)
// dy, dx [batch * seq, heads, head_dim]. dx may alias dy.
template <typename T>
void RotaryBackward(const RotaryArgs& args, const T* dy, T* dx,
                    const int32_t* positions = nullptr);

// ---------------------------------------------------------------------------
// Attention

// For every batch b, query head h (kv head g = h / (num_heads /
// num_kv_heads)) and query position i, over key positions j <= i (all j if
// not causal):
//   s_j = scale * q[b, i, h] . k[b, j, g],  scale = 1 / sqrt(head_dim)
//   out[b, i, h] = sum_j softmax(s)_j * v[b, j, g]
//   lse[b, h, i] = log(sum_j exp(s_j))   (the max is subtracted first)
// q, out [batch * seq, num_heads, head_dim];
// k, v [batch * seq, num_kv_heads, head_dim]; lse [batch, num_heads, seq],
// saved for the backward pass. Internal scratch: seq + head_dim values.
// With `positions` (int32 [batch * seq], packed documents; causal only),
// query i sees keys i - positions[b, i] .. i: its own document's only. With
// args.window, no key before i - window + 1 either.
template <typename T>
void AttentionForward(const AttentionArgs& args, const T* q, const T* k,
                      const T* v, T* out, T* lse,
                      const int32_t* positions = nullptr);

// Gradients of the above (overwrites dq, dk, dv). The softmax is rebuilt from
// lse (p_ij = exp(s_ij - lse_i)), as FlashAttention does:
//   dv_j += p_ij do_i;  dp_ij = do_i . v_j;  D_i = do_i . out_i;
//   ds_ij = p_ij (dp_ij - D_i);  dq_i += scale ds_ij k_j;
//   dk_j += scale ds_ij q_i.
// dk and dv of a kv head sum over the query heads of its group.
// q, out, d_out, dq like q; k, v, dk, dv like k; lse [batch, num_heads, seq].
template <typename T>
void AttentionBackward(const AttentionArgs& args, const T* q, const T* k,
                       const T* v, const T* out, const T* lse, const T* d_out,
                       T* dq, T* dk, T* dv, const int32_t* positions = nullptr);

// ---------------------------------------------------------------------------
// SwiGLU

// h = silu(gate) * up, silu(g) = g / (1 + exp(-g)). gate, up, h [n].
template <typename T>
void SwigluForward(const SwigluArgs& args, const T* gate, const T* up, T* h);

// d_gate = dh * up * sigmoid(g) * (1 + g * (1 - sigmoid(g)));
// d_up = dh * silu(g). gate, up, dh, d_gate, d_up [n]. Overwrites both.
template <typename T>
void SwigluBackward(const SwigluArgs& args, const T* gate, const T* up,
                    const T* dh, T* d_gate, T* d_up);

// ---------------------------------------------------------------------------
// Cross-entropy

// Returns the mean over counted rows (target != ignore_index) of
// lse[t] - logits[t, target[t]], accumulated in double; 0 when no row counts.
// Writes lse[t] = log(sum_v exp(logits[t, v])) for every row, counted or not,
// for the backward pass. logits [T, V]; targets [T] int32, each
// ignore_index or in [0, V); lse [T].
template <typename T>
double CrossEntropyForward(const CrossEntropyArgs& args, const T* logits,
                           const int32_t* targets, T* lse);

// The forward pass of a chunk of rows (args.row_offset, args.batch_tokens):
// writes lse[r] for the op's rows and row_loss[r] = lse[r] -
// logits[r, target] (in double) for counted rows, 0 for ignored ones.
// targets holds the batch's targets; logits [num_tokens, V]; lse, row_loss
// [num_tokens].
template <typename T>
void CrossEntropyRowLosses(const CrossEntropyArgs& args, const T* logits,
                           const int32_t* targets, T* lse, double* row_loss);

// The mean loss of a batch from its rows' terms: the sum of row_loss over
// the args.BatchTokens() rows, in row order, in double, divided by the
// number of counted targets; 0 when none counts. Equal bit for bit to what
// CrossEntropyForward returns for the same rows, however they were chunked.
double CrossEntropyMean(const CrossEntropyArgs& args, const int32_t* targets,
                        const double* row_loss);

// d_logits[t, :] = (softmax(logits[t, :]) - onehot(target[t])) * grad_scale /
// count for counted rows, 0 for ignored rows (and everywhere when count is
// 0). logits, d_logits [T, V]; targets, lse [T]. d_logits may alias logits.
// For a chunk, count is the batch's and row t's target is
// targets[row_offset + t].
template <typename T>
void CrossEntropyBackward(const CrossEntropyArgs& args, const T* logits,
                          const int32_t* targets, const T* lse, T* d_logits);

// ---------------------------------------------------------------------------
// Elementwise

// Accumulates: y += alpha * x. x, y [n].
template <typename T>
void Accumulate(const AccumulateArgs& args, const T* x, T* y);

// In place: x *= alpha. x [n].
template <typename T>
void Scale(const ScaleArgs& args, T* x);

// x = value. x [n].
template <typename T>
void Fill(const FillArgs& args, T* x);

// out = a + b. a, b, out [n]; out may alias a or b.
template <typename T>
void Add(const AddArgs& args, const T* a, const T* b, T* out);

// Storage-typed variants for buffers of any DType (bf16 and fp16 held as
// uint16_t bit patterns). Each element is loaded as float, computed in float
// and stored rounded to nearest even.

// dst = src, converted from args.src to args.dst. src [n] of args.src; dst [n]
// of args.dst; they must not overlap unless they are the same buffer and
// dtype (a no-op copy).
void Cast(const CastArgs& args, const void* src, void* dst);

// Accumulates: y += alpha * x, with x and y of their own dtypes (e.g. a bf16
// gradient summed into an fp32 partition).
void Accumulate(const AccumulateArgs& args, DType x_dtype, const void* x,
                DType y_dtype, void* y);

// In place: x *= alpha.
void Scale(const ScaleArgs& args, DType dtype, void* x);

// x = value (rounded to dtype).
void Fill(const FillArgs& args, DType dtype, void* x);

// out = a + b, all three of `dtype`; out may alias a or b.
void Add(const AddArgs& args, DType dtype, const void* a, const void* b,
         void* out);

// ---------------------------------------------------------------------------
// Reductions (gradient norm, overflow check)

// sum_i x[i]^2, accumulated in double in index order. Inf or NaN inputs
// propagate to the result.
template <typename T>
double SumSquares(const ReduceArgs& args, const T* x);
double SumSquares(const ReduceArgs& args, DType dtype, const void* x);

// True when no element is Inf or NaN (true for n == 0).
template <typename T>
bool AllFinite(const ReduceArgs& args, const T* x);
bool AllFinite(const ReduceArgs& args, DType dtype, const void* x);

// ---------------------------------------------------------------------------
// Optimizer

// One step of DeepSpeed's cpu_adam on fp32 arrays of n elements, updating
// params, exp_avg (m) and exp_avg_sq (v) in place; grads is read only (in L2
// mode the decay is added to a local copy of g, as in DeepSpeed):
//   bc1  = bias_correction ? 1 - beta1^t : 1
//   bc2s = bias_correction ? 1 / sqrt(1 - beta2^t) : 1
//   if wd > 0 and !adamw_mode: g = g + wd * p
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g^2
//   denom = sqrt(v) * bc2s + eps
//   if wd > 0 and adamw_mode:  p = p - lr * wd * p   (old p, not
//   bias-corrected) p = p - (lr / bc1) * m / denom
// in float, in DeepSpeed's operation order; beta^t is pow() in double rounded
// to float. The four arrays must not overlap.
void AdamWStep(const AdamWArgs& args, float* params, const float* grads,
               float* exp_avg, float* exp_avg_sq);
// The same step with params of `params_dtype` and moments of
// `moments_dtype` (each kF32 or kBF16): each value widened to fp32, the
// step above, each result rounded to nearest even as it is stored, so a
// bf16 master and moments get the bits of the host's AdamW over them.
void AdamWStep(const AdamWArgs& args, DType params_dtype, void* params,
               const float* grads, DType moments_dtype, void* exp_avg,
               void* exp_avg_sq);

}  // namespace kernels
}  // namespace zero3

#endif  // ZERO3_CORE_KERNELS_REFERENCE_H_
