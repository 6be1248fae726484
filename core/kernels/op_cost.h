// Copyright 2026 The zero3 Authors.
//
// op_cost.h: floating-point operations and memory traffic of each kernel, for
// the simulator's roofline cost model (time = max(flops / peak_flops,
// bytes / bandwidth) plus launch overhead, decided by the simulator).
//
// Conventions, shared by every formula below:
//  - s is the element size of the op's DType (4 for f32, 2 for bf16/f16).
//    Token ids and targets are int32 (4 bytes). Saved statistics (RMSNorm's
//    rstd, attention's and cross-entropy's lse) are fp32 (4 bytes) whatever
//    the element type, as in the CUDA kernels.
//  - Bytes are compulsory traffic: every input read once, every output
//    written once, as an ideal kernel would. Buffers that are read and
//    written (accumulated gradients, beta != 0) count on both sides. Real
//    kernels re-read tiles (FlashAttention re-reads K and V per query
//    block); the simulator's hardware profile absorbs that as efficiency.
//  - FLOPs count multiplies and adds separately (a fused multiply-add is 2),
//    and exp, sqrt and divide as 1 each. GEMM-like ops follow the usual
//    2mnk convention; elementwise ops use the per-element counts documented
//    on each function. Scalar results of reductions are not counted as
//    bytes.
//
// All functions are pure and thread-safe.

#ifndef ZERO3_CORE_KERNELS_OP_COST_H_
#define ZERO3_CORE_KERNELS_OP_COST_H_

#include <cstdint>
#include <ostream>

#include "core/kernels/dtype.h"
#include "core/kernels/op_args.h"

namespace zero3 {
namespace kernels {

struct OpCost {
  int64_t flops = 0;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;

  int64_t bytes() const { return bytes_read + bytes_written; }

  OpCost& operator+=(const OpCost& other) {
    flops += other.flops;
    bytes_read += other.bytes_read;
    bytes_written += other.bytes_written;
    return *this;
  }
  friend OpCost operator+(OpCost a, const OpCost& b) { return a += b; }
  friend bool operator==(const OpCost& a, const OpCost& b) {
    return a.flops == b.flops && a.bytes_read == b.bytes_read &&
           a.bytes_written == b.bytes_written;
  }
  friend bool operator!=(const OpCost& a, const OpCost& b) { return !(a == b); }
};

std::ostream& operator<<(std::ostream& os, const OpCost& cost);

// Embedding, T tokens of width D.
// Forward:  flops 0; read 4T + T*D*s; written T*D*s.
// Backward: flops T*D (one add per element); read 4T + 2*T*D*s (d_out and
//           the d_table rows updated); written T*D*s.
OpCost EmbeddingForwardCost(const EmbeddingArgs& args, DType dtype);
OpCost EmbeddingBackwardCost(const EmbeddingArgs& args, DType dtype);

// Matmul: flops 2*m*n*k; read (m*k + k*n)*s, plus m*n*s when beta != 0;
// written m*n*s.
OpCost MatmulCost(const MatmulArgs& args, DType dtype);

// Bias over R rows x C columns.
// Add:      flops R*C; read (R*C + C)*s; written R*C*s.
// Backward: flops R*C; read (R*C + C)*s (dy, d_bias); written C*s.
OpCost BiasAddCost(const BiasArgs& args, DType dtype);
OpCost BiasBackwardCost(const BiasArgs& args, DType dtype);

// RMSNorm over R rows x D.
// Forward:  flops 4*R*D (square, sum, times rstd, times weight);
//           read (R*D + D)*s; written R*D*s + 4R (rstd).
// Backward: flops 9*R*D (g = dy*w; sum g*x: 2; d_weight += dy*x*rstd: 3;
//           dx = rstd*g - c*x: 3); read (2*R*D + 2*D)*s + 4R (x, dy,
//           weight, d_weight, rstd); written (R*D + D)*s (dx, d_weight).
OpCost RmsNormForwardCost(const RmsNormArgs& args, DType dtype);
OpCost RmsNormBackwardCost(const RmsNormArgs& args, DType dtype);

// Rotary over N = batch*seq*heads*head_dim elements, forward or backward:
// flops 3N (each pair takes 4 multiplies and 2 adds); read N*s; written N*s.
// The cos/sin values are not counted (computed or cached per position).
OpCost RotaryForwardCost(const RotaryArgs& args, DType dtype);
OpCost RotaryBackwardCost(const RotaryArgs& args, DType dtype);

// Attention, B = batch, S = seq, Hq = num_heads, Hkv = num_kv_heads,
// D = head_dim; Q = B*S*Hq*D and K = B*S*Hkv*D elements.
// Forward:  flops 4*B*Hq*S^2*D (Q*K^T and P*V, 2*S^2*D each per head),
//           halved when causal: 2*B*Hq*S^2*D. The softmax is not counted
//           (the FlashAttention convention).
//           read (Q + 2K)*s; written Q*s + 4*B*Hq*S (lse).
// Backward: flops 2.5x forward (five GEMMs to the forward's two: S = Q*K^T
//           recomputed, dV = P^T*dO, dP = dO*V^T, dQ = dS*K, dK = dS^T*Q);
//           read (3Q + 2K)*s + 4*B*Hq*S (q, out, d_out, k, v, lse);
//           written (Q + 2K)*s (dq, dk, dv).
OpCost AttentionForwardCost(const AttentionArgs& args, DType dtype);
OpCost AttentionBackwardCost(const AttentionArgs& args, DType dtype);

// SwiGLU over n elements.
// Forward:  flops 6n (sigmoid: negate, exp, add, divide; times g; times up);
//           read 2n*s; written n*s.
// Backward: flops 12n (sigmoid 4, silu 1, d_gate's factor 5, two products
//           with dh 2); read 3n*s; written 2n*s.
OpCost SwigluForwardCost(const SwigluArgs& args, DType dtype);
OpCost SwigluBackwardCost(const SwigluArgs& args, DType dtype);

// Cross-entropy over T rows x V.
// Forward:  flops 4*T*V (max, subtract, exp, sum); read T*V*s + 4T
//           (targets); written 4T (lse).
// Backward: flops 4*T*V (subtract lse, exp, subtract one-hot, scale);
//           read T*V*s + 8T (targets, lse); written T*V*s.
OpCost CrossEntropyForwardCost(const CrossEntropyArgs& args, DType dtype);
OpCost CrossEntropyBackwardCost(const CrossEntropyArgs& args, DType dtype);
// Loss (the mean of T per-row terms): flops 2T; read 12T (targets and
// double terms); written 4.
OpCost CrossEntropyLossCost(const CrossEntropyArgs& args);

// Elementwise over n elements.
// Accumulate: flops 2n; read n*(s_x + s_y); written n*s_y.
// Scale:      flops n;  read n*s; written n*s.
// Fill:       flops 0;  read 0; written n*s.
// Add:        flops n;  read 2n*s; written n*s.
// Cast:       flops 0;  read n*s_src; written n*s_dst.
OpCost AccumulateCost(const AccumulateArgs& args, DType dtype);
OpCost AccumulateCost(const AccumulateArgs& args, DType x_dtype, DType y_dtype);
OpCost ScaleCost(const ScaleArgs& args, DType dtype);
OpCost FillCost(const FillArgs& args, DType dtype);
OpCost AddCost(const AddArgs& args, DType dtype);
OpCost CastCost(const CastArgs& args);

// Reductions over n elements.
// SumSquares: flops 2n; read n*s. AllFinite: flops n; read n*s.
OpCost SumSquaresCost(const ReduceArgs& args, DType dtype);
OpCost AllFiniteCost(const ReduceArgs& args, DType dtype);

// AdamW over n elements, fp32 gradients, params of `params_dtype` and
// moments of `moments_dtype`: flops 13n, 15n with weight decay (see
// AdamWStep's formula); read the gradients and the three states (16n in
// fp32), written the three states (12n in fp32).
OpCost AdamWCost(const AdamWArgs& args, DType params_dtype = DType::kF32,
                 DType moments_dtype = DType::kF32);

}  // namespace kernels
}  // namespace zero3

#endif  // ZERO3_CORE_KERNELS_OP_COST_H_
