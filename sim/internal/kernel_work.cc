// Copyright 2026 The zero3 Authors.

#include "sim/internal/kernel_work.h"

#include <type_traits>

#include "core/kernels/op_cost.h"

namespace zero3 {
namespace sim {
namespace internal {
namespace {

namespace k = kernels;
namespace ops = runtime::ops;

template <class>
inline constexpr bool kAlwaysFalse = false;

// The cost formulas live with the kernels (core/kernels/op_cost.h); this maps
// a call to the formula for its op and the dtype it computes in.
k::OpCost CostOf(const runtime::KernelCall& call) {
  return std::visit(
      [](const auto& o) -> k::OpCost {
        using T = std::decay_t<decltype(o)>;
        const auto& a = o.args;
        if constexpr (std::is_same_v<T, ops::EmbeddingForward>)
          return k::EmbeddingForwardCost(a, o.table.dtype);
        else if constexpr (std::is_same_v<T, ops::EmbeddingBackward>)
          return k::EmbeddingBackwardCost(a, o.d_table.dtype);
        else if constexpr (std::is_same_v<T, ops::Matmul>)
          return k::MatmulCost(a, o.a.dtype);
        else if constexpr (std::is_same_v<T, ops::BiasAdd>)
          return k::BiasAddCost(a, o.x.dtype);
        else if constexpr (std::is_same_v<T, ops::BiasBackward>)
          return k::BiasBackwardCost(a, o.dy.dtype);
        else if constexpr (std::is_same_v<T, ops::RmsNormForward>)
          return k::RmsNormForwardCost(a, o.x.dtype);
        else if constexpr (std::is_same_v<T, ops::RmsNormBackward>)
          return k::RmsNormBackwardCost(a, o.x.dtype);
        else if constexpr (std::is_same_v<T, ops::RotaryForward>)
          return k::RotaryForwardCost(a, o.x.dtype);
        else if constexpr (std::is_same_v<T, ops::RotaryBackward>)
          return k::RotaryBackwardCost(a, o.dy.dtype);
        else if constexpr (std::is_same_v<T, ops::AttentionForward>)
          return k::AttentionForwardCost(a, o.q.dtype);
        else if constexpr (std::is_same_v<T, ops::AttentionBackward>)
          return k::AttentionBackwardCost(a, o.q.dtype);
        else if constexpr (std::is_same_v<T, ops::SwigluForward>)
          return k::SwigluForwardCost(a, o.gate.dtype);
        else if constexpr (std::is_same_v<T, ops::SwigluBackward>)
          return k::SwigluBackwardCost(a, o.gate.dtype);
        else if constexpr (std::is_same_v<T, ops::CrossEntropyForward>)
          return k::CrossEntropyForwardCost(a, o.logits.dtype);
        else if constexpr (std::is_same_v<T, ops::CrossEntropyBackward>)
          return k::CrossEntropyBackwardCost(a, o.logits.dtype);
        else if constexpr (std::is_same_v<T, ops::Accumulate>)
          return k::AccumulateCost(a, o.x.dtype, o.y.dtype);
        else if constexpr (std::is_same_v<T, ops::Scale>)
          return k::ScaleCost(a, o.x.dtype);
        else if constexpr (std::is_same_v<T, ops::Fill>)
          return k::FillCost(a, o.x.dtype);
        else if constexpr (std::is_same_v<T, ops::Add>)
          return k::AddCost(a, o.out.dtype);
        else if constexpr (std::is_same_v<T, ops::Cast>)
          return k::CastCost(a);
        else if constexpr (std::is_same_v<T, ops::SumSquares>)
          return k::SumSquaresCost(a, o.x.dtype);
        else if constexpr (std::is_same_v<T, ops::AdamW>)
          return k::AdamWCost(a);
        else
          static_assert(kAlwaysFalse<T>, "unhandled op");
      },
      call.op);
}

}  // namespace

KernelWork WorkOf(const runtime::KernelCall& call) {
  if (const auto* mm = std::get_if<ops::Matmul>(&call.op)) {
    return MatmulWork(mm->args, mm->a.dtype);
  }
  if (const auto* f = std::get_if<ops::AttentionForward>(&call.op)) {
    return AttentionWork(f->args, /*backward=*/false, f->q.dtype);
  }
  if (const auto* b = std::get_if<ops::AttentionBackward>(&call.op)) {
    return AttentionWork(b->args, /*backward=*/true, b->q.dtype);
  }
  const k::OpCost cost = CostOf(call);
  KernelWork w;
  w.flops = static_cast<double>(cost.flops);
  w.bytes = static_cast<double>(cost.bytes_read + cost.bytes_written);
  w.compute_class = std::holds_alternative<ops::AdamW>(call.op)
                        ? ComputeClass::kOptimizer
                        : ComputeClass::kElementwise;
  return w;
}

}  // namespace internal
}  // namespace sim
}  // namespace zero3
