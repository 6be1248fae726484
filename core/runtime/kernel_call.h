// Copyright 2026 The zero3 Authors.
//
// kernel_call.h: a kernel launch as data.
//
// A KernelCall names an op, carries its shapes and scalars (the Args structs
// of core/kernels/op_args.h, shared with the CPU reference, the CUDA kernels
// and the cost model) and the tensors it reads and writes. Backends dispatch
// on the op: the simulator runs the CPU reference in data mode and costs the
// op from its FLOPs and bytes; the CUDA backend runs its kernel.
//
// Each op struct holds what is true of the op whatever runs it, beside its
// fields: its name (kName) and its accesses (Access: the byte ranges it reads
// and writes, derived from its fields so they cannot disagree with what the
// kernel touches). KernelCall::OpName and Accesses visit them, so a new op
// adds them here and nowhere else. Tensors whose op accumulates into them
// (beta != 0, gradient sums) are both read and written. Token and target ids
// are int32 buffers and are given as raw slices. What differs by backend
// stays with the backend, one dispatch each: the reference kernels
// (reference_executor.cc), the simulator's cost (sim/internal/kernel_work.cc)
// and the CUDA kernels (backends/cuda/kernels/launch.cc, with their launch
// counts in launch_count.cc, which the simulator's launch queue charges).
//
// Every tensor may have its own dtype; kernels compute in fp32 and store
// rounded to the output's dtype.

#ifndef ZERO3_CORE_RUNTIME_KERNEL_CALL_H_
#define ZERO3_CORE_RUNTIME_KERNEL_CALL_H_

#include <string>
#include <variant>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/kernels/op_args.h"
#include "core/runtime/buffer.h"

namespace zero3 {
namespace runtime {

namespace ops {

struct EmbeddingForward {
  kernels::EmbeddingArgs args;
  BufferSlice tokens;  // int32 [T]
  TensorRef table, out;
  static constexpr absl::string_view kName = "embedding_fwd";
  // Its accesses: list.R(what it reads), W(what it writes), RW(both).
  template <class L>
  void Access(L& list) const {
    list.R(tokens);
    list.R(table);
    list.W(out);
  }
};
struct EmbeddingBackward {  // d_table accumulates
  kernels::EmbeddingArgs args;
  BufferSlice tokens;
  TensorRef d_out, d_table;
  static constexpr absl::string_view kName = "embedding_bwd";
  // Its accesses: list.R(what it reads), W(what it writes), RW(both).
  template <class L>
  void Access(L& list) const {
    list.R(tokens);
    list.R(d_out);
    list.RW(d_table);
  }
};
struct Matmul {  // c accumulates when args.beta != 0
  kernels::MatmulArgs args;
  TensorRef a, b, c;
  static constexpr absl::string_view kName = "matmul";
  // Its accesses: list.R(what it reads), W(what it writes), RW(both).
  template <class L>
  void Access(L& list) const {
    list.R(a);
    list.R(b);
    if (args.beta != 0.0f) list.R(c);
    list.W(c);
  }
};
struct BiasAdd {  // in place on x
  kernels::BiasArgs args;
  TensorRef bias, x;
  static constexpr absl::string_view kName = "bias_add";
  // Its accesses: list.R(what it reads), W(what it writes), RW(both).
  template <class L>
  void Access(L& list) const {
    list.R(bias);
    list.RW(x);
  }
};
struct BiasBackward {  // d_bias accumulates
  kernels::BiasArgs args;
  TensorRef dy, d_bias;
  static constexpr absl::string_view kName = "bias_bwd";
  // Its accesses: list.R(what it reads), W(what it writes), RW(both).
  template <class L>
  void Access(L& list) const {
    list.R(dy);
    list.RW(d_bias);
  }
};
struct RmsNormForward {
  kernels::RmsNormArgs args;
  TensorRef x, weight, y, rstd;
  static constexpr absl::string_view kName = "rmsnorm_fwd";
  // Its accesses: list.R(what it reads), W(what it writes), RW(both).
  template <class L>
  void Access(L& list) const {
    list.R(x);
    list.R(weight);
    list.W(y);
    list.W(rstd);
  }
};
struct RmsNormBackward {  // d_weight accumulates
  kernels::RmsNormArgs args;
  TensorRef x, weight, rstd, dy, dx, d_weight;
  static constexpr absl::string_view kName = "rmsnorm_bwd";
  // Its accesses: list.R(what it reads), W(what it writes), RW(both).
  template <class L>
  void Access(L& list) const {
    list.R(x);
    list.R(weight);
    list.R(rstd);
    list.R(dy);
    list.W(dx);
    list.RW(d_weight);
  }
};
// `positions`, where not empty: int32 [batch * seq], each row's place in its
// packed document (the reference kernels' `positions`).
struct RotaryForward {
  kernels::RotaryArgs args;
  TensorRef x, y;
  BufferSlice positions;
  static constexpr absl::string_view kName = "rotary_fwd";
  // Its accesses: list.R(what it reads), W(what it writes), RW(both).
  template <class L>
  void Access(L& list) const {
    list.R(x);
    list.W(y);
    if (positions.bytes() > 0) list.R(positions);
  }
};
struct RotaryBackward {
  kernels::RotaryArgs args;
  TensorRef dy, dx;
  BufferSlice positions;
  static constexpr absl::string_view kName = "rotary_bwd";
  // Its accesses: list.R(what it reads), W(what it writes), RW(both).
  template <class L>
  void Access(L& list) const {
    list.R(dy);
    list.W(dx);
    if (positions.bytes() > 0) list.R(positions);
  }
};
struct AttentionForward {
  kernels::AttentionArgs args;
  TensorRef q, k, v, out, lse;
  BufferSlice positions;
  static constexpr absl::string_view kName = "attention_fwd";
  // Its accesses: list.R(what it reads), W(what it writes), RW(both).
  template <class L>
  void Access(L& list) const {
    if (positions.bytes() > 0) list.R(positions);
    list.R(q);
    list.R(k);
    list.R(v);
    list.W(out);
    list.W(lse);
  }
};
struct AttentionBackward {
  kernels::AttentionArgs args;
  TensorRef q, k, v, out, lse, d_out, dq, dk, dv;
  BufferSlice positions;
  static constexpr absl::string_view kName = "attention_bwd";
  // Its accesses: list.R(what it reads), W(what it writes), RW(both).
  template <class L>
  void Access(L& list) const {
    if (positions.bytes() > 0) list.R(positions);
    list.R(q);
    list.R(k);
    list.R(v);
    list.R(out);
    list.R(lse);
    list.R(d_out);
    list.W(dq);
    list.W(dk);
    list.W(dv);
  }
};
struct SwigluForward {
  kernels::SwigluArgs args;
  TensorRef gate, up, h;
  static constexpr absl::string_view kName = "swiglu_fwd";
  // Its accesses: list.R(what it reads), W(what it writes), RW(both).
  template <class L>
  void Access(L& list) const {
    list.R(gate);
    list.R(up);
    list.W(h);
  }
};
struct SwigluBackward {
  kernels::SwigluArgs args;
  TensorRef gate, up, dh, d_gate, d_up;
  static constexpr absl::string_view kName = "swiglu_bwd";
  // Its accesses: list.R(what it reads), W(what it writes), RW(both).
  template <class L>
  void Access(L& list) const {
    list.R(gate);
    list.R(up);
    list.R(dh);
    list.W(d_gate);
    list.W(d_up);
  }
};
// logits and lse (and d_logits) hold the op's rows, targets the batch's
// (args.BatchTokens() int32 values; see CrossEntropyArgs).
struct CrossEntropyForward {  // loss: one fp32 value, the mean loss
  kernels::CrossEntropyArgs args;
  TensorRef logits;
  BufferSlice targets;
  TensorRef lse, loss;
  // A chunk of a batch: when not empty, the rows' loss terms go here
  // (double [num_tokens]) instead of a mean into loss, which stays unused;
  // CrossEntropyLoss takes the mean once every chunk has written its rows.
  BufferSlice row_loss;
  static constexpr absl::string_view kName = "cross_entropy_fwd";
  // Its accesses: list.R(what it reads), W(what it writes), RW(both).
  template <class L>
  void Access(L& list) const {
    list.R(logits);
    list.R(targets);
    list.W(lse);
    if (row_loss.bytes() > 0) {
      list.W(row_loss);
    } else {
      list.W(loss);
    }
  }
};
struct CrossEntropyBackward {
  kernels::CrossEntropyArgs args;
  TensorRef logits;
  BufferSlice targets;
  TensorRef lse, d_logits;
  static constexpr absl::string_view kName = "cross_entropy_bwd";
  // Its accesses: list.R(what it reads), W(what it writes), RW(both).
  template <class L>
  void Access(L& list) const {
    list.R(logits);
    list.R(targets);
    list.R(lse);
    list.W(d_logits);
  }
};
// loss = the mean of row_loss (double [num_tokens]) over the counted rows of
// targets (int32 [num_tokens]), summed in row order: the mean
// CrossEntropyForward writes for the same rows, bit for bit.
struct CrossEntropyLoss {
  kernels::CrossEntropyArgs args;
  BufferSlice targets, row_loss;
  TensorRef loss;
  static constexpr absl::string_view kName = "cross_entropy_loss";
  // Its accesses: list.R(what it reads), W(what it writes), RW(both).
  template <class L>
  void Access(L& list) const {
    list.R(targets);
    list.R(row_loss);
    list.W(loss);
  }
};
struct Accumulate {  // y += alpha * x
  kernels::AccumulateArgs args;
  TensorRef x, y;
  static constexpr absl::string_view kName = "accumulate";
  // Its accesses: list.R(what it reads), W(what it writes), RW(both).
  template <class L>
  void Access(L& list) const {
    list.R(x);
    list.RW(y);
  }
};
struct Scale {  // in place
  kernels::ScaleArgs args;
  TensorRef x;
  static constexpr absl::string_view kName = "scale";
  // Its accesses: list.R(what it reads), W(what it writes), RW(both).
  template <class L>
  void Access(L& list) const {
    list.RW(x);
  }
};
struct Fill {
  kernels::FillArgs args;
  TensorRef x;
  static constexpr absl::string_view kName = "fill";
  // Its accesses: list.R(what it reads), W(what it writes), RW(both).
  template <class L>
  void Access(L& list) const {
    list.W(x);
  }
};
struct Add {
  kernels::AddArgs args;
  TensorRef a, b, out;
  static constexpr absl::string_view kName = "add";
  // Its accesses: list.R(what it reads), W(what it writes), RW(both).
  template <class L>
  void Access(L& list) const {
    list.R(a);
    list.R(b);
    list.W(out);
  }
};
struct Cast {  // args.src / args.dst must match the tensors' dtypes
  kernels::CastArgs args;
  TensorRef src, dst;
  // src into dst, of equal element counts, with args taken from them.
  static Cast Of(const TensorRef& src, const TensorRef& dst) {
    Cast c;
    c.args.n = src.elements();
    c.args.src = src.dtype;
    c.args.dst = dst.dtype;
    c.src = src;
    c.dst = dst;
    return c;
  }
  static constexpr absl::string_view kName = "cast";
  // Its accesses: list.R(what it reads), W(what it writes), RW(both).
  template <class L>
  void Access(L& list) const {
    list.R(src);
    list.W(dst);
  }
};
// The sum of squares of x, kept in double precision as two fp32 values,
// out = [hi, lo] with hi + lo the double sum: gradient norms must not depend
// on how the sum is split across buckets and ranks beyond double rounding.
// Accumulates into out when `accumulate`.
struct SumSquares {
  kernels::ReduceArgs args;
  TensorRef x, out;  // out: two fp32 values
  bool accumulate = false;
  static constexpr absl::string_view kName = "sum_squares";
  // Its accesses: list.R(what it reads), W(what it writes), RW(both).
  template <class L>
  void Access(L& list) const {
    list.R(x);
    if (accumulate) list.R(out);
    list.W(out);
  }
};
// Updated in place: fp32 gradients; params (the master) and the two
// moments (of one dtype) fp32 or bf16, computed in fp32 and rounded to
// nearest even as they are stored (bf16 master weights and optimizer
// states).
struct AdamW {
  kernels::AdamWArgs args;
  TensorRef params, grads, exp_avg, exp_avg_sq;
  static constexpr absl::string_view kName = "adamw";
  // Its accesses: list.R(what it reads), W(what it writes), RW(both).
  template <class L>
  void Access(L& list) const {
    list.R(grads);
    list.RW(params);
    list.RW(exp_avg);
    list.RW(exp_avg_sq);
  }
};

}  // namespace ops

using Op =
    std::variant<ops::EmbeddingForward, ops::EmbeddingBackward, ops::Matmul,
                 ops::BiasAdd, ops::BiasBackward, ops::RmsNormForward,
                 ops::RmsNormBackward, ops::RotaryForward, ops::RotaryBackward,
                 ops::AttentionForward, ops::AttentionBackward,
                 ops::SwigluForward, ops::SwigluBackward,
                 ops::CrossEntropyForward, ops::CrossEntropyBackward,
                 ops::CrossEntropyLoss, ops::Accumulate, ops::Scale, ops::Fill,
                 ops::Add, ops::Cast, ops::SumSquares, ops::AdamW>;

struct Access {
  BufferSlice slice;
  bool write = false;
};

struct KernelCall {
  KernelCall(Op op, std::string label)
      : op(std::move(op)), label(std::move(label)) {}

  Op op;
  std::string label;

  // The op's kind as text ("matmul", "rmsnorm_fwd", ...).
  absl::string_view OpName() const;
  // Every byte range read and written, writes after reads of the same range.
  std::vector<Access> Accesses() const;
};

}  // namespace runtime
}  // namespace zero3

#endif  // ZERO3_CORE_RUNTIME_KERNEL_CALL_H_
