// Copyright 2026 The zero3 Authors.

#include "core/runtime/launch_count.h"

#include <type_traits>
#include <variant>

namespace zero3 {
namespace runtime {
namespace {

template <typename T>
constexpr bool kAlwaysFalse = false;

// Bits of the largest id below `vocab_size` (the sort's key width).
int KeyBits(int64_t vocab_size) {
  int bits = 1;
  while (bits < 32 && (int64_t{1} << bits) <= vocab_size) ++bits;
  return bits;
}

}  // namespace

int RadixSortLaunches(int64_t num_items, int key_bits) {
  constexpr int64_t kSingleTile = 128 * 16;  // CUB's single-tile limit
  if (num_items <= 1) return 0;
  if (num_items <= kSingleTile) return 1;
  return 2 + (key_bits + 7) / 8;
}

int LaunchesOf(const KernelCall& call) {
  return std::visit(
      [](const auto& o) -> int {
        using T = std::decay_t<decltype(o)>;
        const auto& a = o.args;
        if constexpr (std::is_same_v<T, ops::EmbeddingForward>) {
          return a.num_tokens > 0 && a.dim > 0 ? 1 : 0;
        } else if constexpr (std::is_same_v<T, ops::EmbeddingBackward>) {
          if (a.num_tokens <= 0 || a.dim <= 0) return 0;
          // Keys, the sort, the ordered sums of each id's rows.
          return 2 + RadixSortLaunches(a.num_tokens, KeyBits(a.vocab_size));
        } else if constexpr (std::is_same_v<T, ops::Matmul>) {
          // cuBLASLt, or a fill / scale for an empty sum.
          return a.m > 0 && a.n > 0 ? 1 : 0;
        } else if constexpr (std::is_same_v<T, ops::BiasBackward>) {
          return a.rows > 0 && a.cols > 0 ? 2 : 0;  // partials, final sums
        } else if constexpr (std::is_same_v<T, ops::RmsNormForward>) {
          return a.rows > 0 && a.dim > 0 ? 1 : 0;
        } else if constexpr (std::is_same_v<T, ops::RmsNormBackward>) {
          // Rows, then d_weight's column sums in two ordered steps.
          return a.rows > 0 && a.dim > 0 ? 3 : 0;
        } else if constexpr (std::is_same_v<T, ops::RotaryForward> ||
                             std::is_same_v<T, ops::RotaryBackward>) {
          // The rotation, and a copy of the dimensions a partial one
          // passes through.
          if (a.batch * a.seq * (a.RotaryDim() / 2) <= 0 || a.heads <= 0) {
            return 0;
          }
          return a.RotaryDim() < a.head_dim ? 2 : 1;
        } else if constexpr (std::is_same_v<T, ops::AttentionForward>) {
          return a.batch > 0 && a.seq > 0 ? 1 : 0;
        } else if constexpr (std::is_same_v<T, ops::AttentionBackward>) {
          // Delta (rowsum of out * d_out), dK/dV, dQ.
          return a.batch > 0 && a.seq > 0 ? 3 : 0;
        } else if constexpr (std::is_same_v<T, ops::CrossEntropyForward>) {
          // Per-row losses, then the ordered mean (also of no rows); a
          // chunk writes its rows' terms only.
          if (o.row_loss.bytes() > 0) return a.num_tokens > 0 ? 1 : 0;
          return a.num_tokens > 0 ? 2 : 1;
        } else if constexpr (std::is_same_v<T, ops::CrossEntropyLoss>) {
          return 1;  // the ordered mean of the chunks' terms
        } else if constexpr (std::is_same_v<T, ops::CrossEntropyBackward>) {
          // The scale factor, then the rows.
          return a.num_tokens > 0 && a.vocab_size > 0 ? 2 : 0;
        } else if constexpr (std::is_same_v<T, ops::Cast>) {
          // A same-dtype cast is a device copy, none in place.
          if (a.n <= 0) return 0;
          const bool in_place =
              o.src.slice.buffer().id() == o.dst.slice.buffer().id() &&
              o.src.slice.offset() == o.dst.slice.offset();
          return a.src == a.dst && in_place ? 0 : 1;
        } else if constexpr (std::is_same_v<T, ops::SumSquares>) {
          return a.n > 0 ? 2 : 1;  // partials (when any), the ordered sum
        } else if constexpr (std::is_same_v<T, ops::BiasAdd>) {
          return a.rows * a.cols > 0 ? 1 : 0;
        } else if constexpr (std::is_same_v<T, ops::SwigluForward> ||
                             std::is_same_v<T, ops::SwigluBackward> ||
                             std::is_same_v<T, ops::Accumulate> ||
                             std::is_same_v<T, ops::Scale> ||
                             std::is_same_v<T, ops::Fill> ||
                             std::is_same_v<T, ops::Add> ||
                             std::is_same_v<T, ops::AdamW>) {
          return a.n > 0 ? 1 : 0;  // one elementwise kernel (fill: memset)
        } else {
          static_assert(kAlwaysFalse<T>, "unhandled op");
        }
      },
      call.op);
}

}  // namespace runtime
}  // namespace zero3
