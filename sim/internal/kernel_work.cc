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

// Work costed by its FLOPs and bytes alone.
KernelWork Streaming(const k::OpCost& cost,
                     ComputeClass cls = ComputeClass::kElementwise) {
  KernelWork w;
  w.compute_class = cls;
  w.flops = static_cast<double>(cost.flops);
  w.bytes = static_cast<double>(cost.bytes_read + cost.bytes_written);
  return w;
}

}  // namespace

// The cost formulas live with the kernels (core/kernels/op_cost.h); this maps
// a call to the formula for its op and the dtype it computes in. Matmuls and
// attention carry their shapes too, for the profile's measured tables.
KernelWork WorkOf(const runtime::KernelCall& call) {
  KernelWork w = std::visit(
      [](const auto& o) -> KernelWork {
        using T = std::decay_t<decltype(o)>;
        const auto& a = o.args;
        if constexpr (std::is_same_v<T, ops::EmbeddingForward>)
          return Streaming(k::EmbeddingForwardCost(a, o.table.dtype));
        else if constexpr (std::is_same_v<T, ops::EmbeddingBackward>)
          return Streaming(k::EmbeddingBackwardCost(a, o.d_table.dtype));
        else if constexpr (std::is_same_v<T, ops::Matmul>)
          return MatmulWork(a, o.a.dtype);
        else if constexpr (std::is_same_v<T, ops::BiasAdd>)
          return Streaming(k::BiasAddCost(a, o.x.dtype));
        else if constexpr (std::is_same_v<T, ops::BiasBackward>)
          return Streaming(k::BiasBackwardCost(a, o.dy.dtype));
        else if constexpr (std::is_same_v<T, ops::RmsNormForward>)
          return Streaming(k::RmsNormForwardCost(a, o.x.dtype));
        else if constexpr (std::is_same_v<T, ops::RmsNormBackward>)
          return Streaming(k::RmsNormBackwardCost(a, o.x.dtype));
        else if constexpr (std::is_same_v<T, ops::RotaryForward>)
          return Streaming(k::RotaryForwardCost(a, o.x.dtype));
        else if constexpr (std::is_same_v<T, ops::RotaryBackward>)
          return Streaming(k::RotaryBackwardCost(a, o.dy.dtype));
        else if constexpr (std::is_same_v<T, ops::AttentionForward>)
          return AttentionWork(a, /*backward=*/false, o.q.dtype);
        else if constexpr (std::is_same_v<T, ops::AttentionBackward>)
          return AttentionWork(a, /*backward=*/true, o.q.dtype);
        else if constexpr (std::is_same_v<T, ops::SwigluForward>)
          return Streaming(k::SwigluForwardCost(a, o.gate.dtype));
        else if constexpr (std::is_same_v<T, ops::SwigluBackward>)
          return Streaming(k::SwigluBackwardCost(a, o.gate.dtype));
        else if constexpr (std::is_same_v<T, ops::CrossEntropyForward>)
          return Streaming(k::CrossEntropyForwardCost(a, o.logits.dtype));
        else if constexpr (std::is_same_v<T, ops::CrossEntropyBackward>)
          return Streaming(k::CrossEntropyBackwardCost(a, o.logits.dtype));
        else if constexpr (std::is_same_v<T, ops::CrossEntropyLoss>)
          return Streaming(k::CrossEntropyLossCost(a));
        else if constexpr (std::is_same_v<T, ops::Accumulate>)
          return Streaming(k::AccumulateCost(a, o.x.dtype, o.y.dtype));
        else if constexpr (std::is_same_v<T, ops::Scale>)
          return Streaming(k::ScaleCost(a, o.x.dtype));
        else if constexpr (std::is_same_v<T, ops::Fill>)
          return Streaming(k::FillCost(a, o.x.dtype));
        else if constexpr (std::is_same_v<T, ops::Add>)
          return Streaming(k::AddCost(a, o.out.dtype));
        else if constexpr (std::is_same_v<T, ops::Cast>)
          return Streaming(k::CastCost(a));
        else if constexpr (std::is_same_v<T, ops::SumSquares>)
          return Streaming(k::SumSquaresCost(a, o.x.dtype));
        else if constexpr (std::is_same_v<T, ops::AdamW>)
          return Streaming(k::AdamWCost(a, o.params.dtype, o.exp_avg.dtype),
                           ComputeClass::kOptimizer);
        else
          static_assert(kAlwaysFalse<T>, "unhandled op");
      },
      call.op);
  w.kind = call.OpName();
  return w;
}

}  // namespace internal
}  // namespace sim
}  // namespace zero3
