// Copyright 2026 The zero3 Authors.

#include "core/runtime/kernel_call.h"

#include <type_traits>

namespace zero3 {
namespace runtime {
namespace {

struct AccessList {
  std::vector<Access> list;
  void R(const TensorRef& t) { R(t.slice); }
  void W(const TensorRef& t) { W(t.slice); }
  void RW(const TensorRef& t) {
    R(t);
    W(t);
  }
  void R(const BufferSlice& s) { list.push_back({s, false}); }
  void W(const BufferSlice& s) { list.push_back({s, true}); }
};

template <class>
inline constexpr bool kAlwaysFalse = false;

}  // namespace

absl::string_view KernelCall::OpName() const {
  return std::visit(
      [](const auto& o) -> absl::string_view {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, ops::EmbeddingForward>)
          return "embedding_fwd";
        else if constexpr (std::is_same_v<T, ops::EmbeddingBackward>)
          return "embedding_bwd";
        else if constexpr (std::is_same_v<T, ops::Matmul>)
          return "matmul";
        else if constexpr (std::is_same_v<T, ops::BiasAdd>)
          return "bias_add";
        else if constexpr (std::is_same_v<T, ops::BiasBackward>)
          return "bias_bwd";
        else if constexpr (std::is_same_v<T, ops::RmsNormForward>)
          return "rmsnorm_fwd";
        else if constexpr (std::is_same_v<T, ops::RmsNormBackward>)
          return "rmsnorm_bwd";
        else if constexpr (std::is_same_v<T, ops::RotaryForward>)
          return "rotary_fwd";
        else if constexpr (std::is_same_v<T, ops::RotaryBackward>)
          return "rotary_bwd";
        else if constexpr (std::is_same_v<T, ops::AttentionForward>)
          return "attention_fwd";
        else if constexpr (std::is_same_v<T, ops::AttentionBackward>)
          return "attention_bwd";
        else if constexpr (std::is_same_v<T, ops::SwigluForward>)
          return "swiglu_fwd";
        else if constexpr (std::is_same_v<T, ops::SwigluBackward>)
          return "swiglu_bwd";
        else if constexpr (std::is_same_v<T, ops::CrossEntropyForward>)
          return "cross_entropy_fwd";
        else if constexpr (std::is_same_v<T, ops::CrossEntropyBackward>)
          return "cross_entropy_bwd";
        else if constexpr (std::is_same_v<T, ops::CrossEntropyLoss>)
          return "cross_entropy_loss";
        else if constexpr (std::is_same_v<T, ops::Accumulate>)
          return "accumulate";
        else if constexpr (std::is_same_v<T, ops::Scale>)
          return "scale";
        else if constexpr (std::is_same_v<T, ops::Fill>)
          return "fill";
        else if constexpr (std::is_same_v<T, ops::Add>)
          return "add";
        else if constexpr (std::is_same_v<T, ops::Cast>)
          return "cast";
        else if constexpr (std::is_same_v<T, ops::SumSquares>)
          return "sum_squares";
        else if constexpr (std::is_same_v<T, ops::AdamW>)
          return "adamw";
        else
          static_assert(kAlwaysFalse<T>, "unhandled op");
      },
      op);
}

std::vector<Access> KernelCall::Accesses() const {
  AccessList a;
  std::visit(
      [&a](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, ops::EmbeddingForward>) {
          a.R(o.tokens);
          a.R(o.table);
          a.W(o.out);
        } else if constexpr (std::is_same_v<T, ops::EmbeddingBackward>) {
          a.R(o.tokens);
          a.R(o.d_out);
          a.RW(o.d_table);
        } else if constexpr (std::is_same_v<T, ops::Matmul>) {
          a.R(o.a);
          a.R(o.b);
          if (o.args.beta != 0.0f) a.R(o.c);
          a.W(o.c);
        } else if constexpr (std::is_same_v<T, ops::BiasAdd>) {
          a.R(o.bias);
          a.RW(o.x);
        } else if constexpr (std::is_same_v<T, ops::BiasBackward>) {
          a.R(o.dy);
          a.RW(o.d_bias);
        } else if constexpr (std::is_same_v<T, ops::RmsNormForward>) {
          a.R(o.x);
          a.R(o.weight);
          a.W(o.y);
          a.W(o.rstd);
        } else if constexpr (std::is_same_v<T, ops::RmsNormBackward>) {
          a.R(o.x);
          a.R(o.weight);
          a.R(o.rstd);
          a.R(o.dy);
          a.W(o.dx);
          a.RW(o.d_weight);
        } else if constexpr (std::is_same_v<T, ops::RotaryForward>) {
          a.R(o.x);
          a.W(o.y);
          if (o.positions.bytes() > 0) a.R(o.positions);
        } else if constexpr (std::is_same_v<T, ops::RotaryBackward>) {
          a.R(o.dy);
          a.W(o.dx);
          if (o.positions.bytes() > 0) a.R(o.positions);
        } else if constexpr (std::is_same_v<T, ops::AttentionForward>) {
          if (o.positions.bytes() > 0) a.R(o.positions);
          a.R(o.q);
          a.R(o.k);
          a.R(o.v);
          a.W(o.out);
          a.W(o.lse);
        } else if constexpr (std::is_same_v<T, ops::AttentionBackward>) {
          if (o.positions.bytes() > 0) a.R(o.positions);
          a.R(o.q);
          a.R(o.k);
          a.R(o.v);
          a.R(o.out);
          a.R(o.lse);
          a.R(o.d_out);
          a.W(o.dq);
          a.W(o.dk);
          a.W(o.dv);
        } else if constexpr (std::is_same_v<T, ops::SwigluForward>) {
          a.R(o.gate);
          a.R(o.up);
          a.W(o.h);
        } else if constexpr (std::is_same_v<T, ops::SwigluBackward>) {
          a.R(o.gate);
          a.R(o.up);
          a.R(o.dh);
          a.W(o.d_gate);
          a.W(o.d_up);
        } else if constexpr (std::is_same_v<T, ops::CrossEntropyForward>) {
          a.R(o.logits);
          a.R(o.targets);
          a.W(o.lse);
          if (o.row_loss.bytes() > 0) {
            a.W(o.row_loss);
          } else {
            a.W(o.loss);
          }
        } else if constexpr (std::is_same_v<T, ops::CrossEntropyBackward>) {
          a.R(o.logits);
          a.R(o.targets);
          a.R(o.lse);
          a.W(o.d_logits);
        } else if constexpr (std::is_same_v<T, ops::CrossEntropyLoss>) {
          a.R(o.targets);
          a.R(o.row_loss);
          a.W(o.loss);
        } else if constexpr (std::is_same_v<T, ops::Accumulate>) {
          a.R(o.x);
          a.RW(o.y);
        } else if constexpr (std::is_same_v<T, ops::Scale>) {
          a.RW(o.x);
        } else if constexpr (std::is_same_v<T, ops::Fill>) {
          a.W(o.x);
        } else if constexpr (std::is_same_v<T, ops::Add>) {
          a.R(o.a);
          a.R(o.b);
          a.W(o.out);
        } else if constexpr (std::is_same_v<T, ops::Cast>) {
          a.R(o.src);
          a.W(o.dst);
        } else if constexpr (std::is_same_v<T, ops::SumSquares>) {
          a.R(o.x);
          if (o.accumulate) a.R(o.out);
          a.W(o.out);
        } else if constexpr (std::is_same_v<T, ops::AdamW>) {
          a.R(o.grads);
          a.RW(o.params);
          a.RW(o.exp_avg);
          a.RW(o.exp_avg_sq);
        } else {
          static_assert(kAlwaysFalse<T>, "unhandled op");
        }
      },
      op);
  return std::move(a.list);
}

}  // namespace runtime
}  // namespace zero3
