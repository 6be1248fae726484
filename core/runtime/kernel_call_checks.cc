// Copyright 2026 The zero3 Authors.

#include "core/runtime/kernel_call_checks.h"

#include <cmath>
#include <type_traits>
#include <variant>

#include "absl/strings/str_cat.h"
#include "core/kernels/dtype.h"
#include "core/kernels/op_args.h"

namespace zero3 {
namespace runtime {
namespace {

namespace k = kernels;

template <class>
inline constexpr bool kAlwaysFalse = false;

// Packed documents' positions, where the op has them: one int32 a row.
void NeedPositions(KernelCallChecker& c, const BufferSlice& positions,
                   int64_t rows) {
  if (positions.bytes() > 0) c.NeedIds(positions, rows, "positions");
}

void CheckLossDivisor(KernelCallChecker& c, const k::CrossEntropyArgs& a) {
  if (!(a.loss_divisor >= 0 && std::isfinite(a.loss_divisor))) {
    c.Fail(absl::StrCat("loss_divisor must be finite and >= 0, got ",
                        a.loss_divisor));
  }
}

// The gated activation is one the kernels know.
void CheckActivation(KernelCallChecker& c, const k::SwigluArgs& a) {
  if (a.activation != k::GluActivation::kSilu &&
      a.activation != k::GluActivation::kGeluTanh) {
    c.Fail(absl::StrCat("unknown activation ", static_cast<int>(a.activation)));
  }
}

void CheckAttention(const k::AttentionArgs& a, KernelCallChecker& c) {
  c.NonNegative(a.window, "window");
  c.NonNegative(a.batch, "batch");
  c.NonNegative(a.seq, "seq");
  c.Positive(a.num_heads, "num_heads");
  c.Positive(a.num_kv_heads, "num_kv_heads");
  c.Positive(a.head_dim, "head_dim");
  c.Finite(a.scale, "scale", /*non_negative=*/true);
  c.Finite(a.softcap, "softcap", /*non_negative=*/true);
  if (c.ok() && a.num_heads % a.num_kv_heads != 0) {
    c.Fail("num_heads must be a multiple of num_kv_heads");
  }
}

}  // namespace

void KernelCallChecker::Fail(absl::string_view what) {
  if (!status_.ok()) return;
  status_ = absl::InvalidArgumentError(
      absl::StrCat(call_.label, " (", call_.OpName(), "): ", what));
}

void KernelCallChecker::Unsupported(absl::string_view what) {
  if (!status_.ok()) return;
  status_ = absl::UnimplementedError(
      absl::StrCat(call_.label, " (", call_.OpName(), "): ", what));
}

void KernelCallChecker::NonNegative(int64_t value, const char* name) {
  if (value < 0) Fail(absl::StrCat(name, " is negative (", value, ")"));
}

void KernelCallChecker::Positive(int64_t value, const char* name) {
  if (value <= 0) Fail(absl::StrCat(name, " must be positive, got ", value));
}

void KernelCallChecker::Finite(float value, const char* name,
                               bool non_negative) {
  if (!std::isfinite(value) || (non_negative && !(value >= 0.0f))) {
    Fail(absl::StrCat(name, " must be finite", non_negative ? " and >= 0" : "",
                      ", got ", value));
  }
}

void KernelCallChecker::Need(const TensorRef& t, int64_t elements,
                             const char* name) {
  if (!status_.ok()) return;
  if (need_data_ && elements > 0 && t.slice.data() == nullptr) {
    status_ = absl::FailedPreconditionError(
        absl::StrCat(call_.label, " (", call_.OpName(), "): tensor ", name,
                     " has no data (a timing-mode buffer?)"));
  } else if (t.elements() < elements) {
    Fail(absl::StrCat("tensor ", name, " holds ", t.elements(),
                      " elements, the op needs ", elements));
  }
}

void KernelCallChecker::NeedIds(const BufferSlice& s, int64_t count,
                                const char* name) {
  if (!status_.ok() || count <= 0) return;
  if (s.bytes() < count * 4 || (need_data_ && s.data() == nullptr)) {
    Fail(absl::StrCat(name, " needs ", count, " int32 ids"));
  }
}

void KernelCallChecker::NeedBytes(const BufferSlice& s, int64_t bytes,
                                  const char* name) {
  if (!status_.ok() || bytes <= 0) return;
  if (s.bytes() < bytes || (need_data_ && s.data() == nullptr)) {
    Fail(absl::StrCat(name, " needs ", bytes, " bytes"));
  }
}

void KernelCallChecker::NeedF32(const TensorRef& t, const char* name) {
  if (t.dtype != k::DType::kF32) {
    Fail(absl::StrCat("tensor ", name, " must be f32, is ",
                      k::DTypeName(t.dtype)));
  }
}

absl::Status CheckKernelCall(const KernelCall& call, bool need_data) {
  KernelCallChecker c(call, need_data);
  std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        const auto& a = o.args;
        if constexpr (std::is_same_v<T, ops::EmbeddingForward> ||
                      std::is_same_v<T, ops::EmbeddingBackward>) {
          c.NonNegative(a.num_tokens, "num_tokens");
          c.NonNegative(a.vocab_size, "vocab_size");
          c.NonNegative(a.dim, "dim");
          if (!c.ok()) return;
          c.NeedIds(o.tokens, a.num_tokens, "tokens");
          if constexpr (std::is_same_v<T, ops::EmbeddingForward>) {
            c.Need(o.table, a.vocab_size * a.dim, "table");
            c.Need(o.out, a.num_tokens * a.dim, "out");
          } else {
            c.Need(o.d_out, a.num_tokens * a.dim, "d_out");
            c.Need(o.d_table, a.vocab_size * a.dim, "d_table");
          }
        } else if constexpr (std::is_same_v<T, ops::Matmul>) {
          c.NonNegative(a.m, "m");
          c.NonNegative(a.n, "n");
          c.NonNegative(a.k, "k");
          if (!c.ok()) return;
          c.Need(o.a, a.m * a.k, "a");
          c.Need(o.b, a.k * a.n, "b");
          c.Need(o.c, a.m * a.n, "c");
        } else if constexpr (std::is_same_v<T, ops::BiasAdd> ||
                             std::is_same_v<T, ops::BiasBackward>) {
          c.NonNegative(a.rows, "rows");
          c.NonNegative(a.cols, "cols");
          if (!c.ok()) return;
          if constexpr (std::is_same_v<T, ops::BiasAdd>) {
            c.Need(o.bias, a.cols, "bias");
            c.Need(o.x, a.rows * a.cols, "x");
          } else {
            c.Need(o.dy, a.rows * a.cols, "dy");
            c.Need(o.d_bias, a.cols, "d_bias");
          }
        } else if constexpr (std::is_same_v<T, ops::RmsNormForward> ||
                             std::is_same_v<T, ops::RmsNormBackward>) {
          c.NonNegative(a.rows, "rows");
          c.Positive(a.dim, "dim");
          if (!(a.eps >= 0.0f)) c.Fail("eps must be non-negative");
          c.Finite(a.weight_offset, "weight_offset", /*non_negative=*/false);
          if (!c.ok()) return;
          c.Need(o.x, a.rows * a.dim, "x");
          c.Need(o.weight, a.dim, "weight");
          c.Need(o.rstd, a.rows, "rstd");
          if constexpr (std::is_same_v<T, ops::RmsNormForward>) {
            c.Need(o.y, a.rows * a.dim, "y");
          } else {
            c.Need(o.dy, a.rows * a.dim, "dy");
            c.Need(o.dx, a.rows * a.dim, "dx");
            c.Need(o.d_weight, a.dim, "d_weight");
          }
        } else if constexpr (std::is_same_v<T, ops::RotaryForward> ||
                             std::is_same_v<T, ops::RotaryBackward>) {
          c.NonNegative(a.batch, "batch");
          c.NonNegative(a.seq, "seq");
          c.NonNegative(a.heads, "heads");
          c.Positive(a.head_dim, "head_dim");
          if (!c.ok()) return;
          if (a.head_dim % 2 != 0) c.Fail("rotary head_dim must be even");
          if (!(a.theta > 0.0f)) c.Fail("theta must be positive");
          if (a.rotary_dim < 0 || a.rotary_dim > a.head_dim ||
              a.rotary_dim % 2 != 0) {
            c.Fail("rotary_dim must be even and at most head_dim");
          }
          if (a.has_inv_freq && a.RotaryDim() / 2 > kernels::kMaxRotaryPairs) {
            c.Fail("too many rotary pairs for the frequency table");
          }
          NeedPositions(c, o.positions, a.batch * a.seq);
          const int64_t n = a.batch * a.seq * a.heads * a.head_dim;
          if constexpr (std::is_same_v<T, ops::RotaryForward>) {
            c.Need(o.x, n, "x");
            c.Need(o.y, n, "y");
          } else {
            c.Need(o.dy, n, "dy");
            c.Need(o.dx, n, "dx");
          }
        } else if constexpr (std::is_same_v<T, ops::AttentionForward> ||
                             std::is_same_v<T, ops::AttentionBackward>) {
          CheckAttention(a, c);
          NeedPositions(c, o.positions, a.batch * a.seq);
          if (!c.ok()) return;
          const int64_t tq = a.batch * a.seq * a.num_heads * a.head_dim;
          const int64_t tk = a.batch * a.seq * a.num_kv_heads * a.head_dim;
          c.Need(o.q, tq, "q");
          c.Need(o.k, tk, "k");
          c.Need(o.v, tk, "v");
          c.Need(o.out, tq, "out");
          c.Need(o.lse, a.batch * a.num_heads * a.seq, "lse");
          if constexpr (std::is_same_v<T, ops::AttentionBackward>) {
            c.Need(o.d_out, tq, "d_out");
            c.Need(o.dq, tq, "dq");
            c.Need(o.dk, tk, "dk");
            c.Need(o.dv, tk, "dv");
          }
        } else if constexpr (std::is_same_v<T, ops::SwigluForward>) {
          c.NonNegative(a.n, "n");
          CheckActivation(c, a);
          if (!c.ok()) return;
          c.Need(o.gate, a.n, "gate");
          c.Need(o.up, a.n, "up");
          c.Need(o.h, a.n, "h");
        } else if constexpr (std::is_same_v<T, ops::SwigluBackward>) {
          c.NonNegative(a.n, "n");
          CheckActivation(c, a);
          if (!c.ok()) return;
          c.Need(o.gate, a.n, "gate");
          c.Need(o.up, a.n, "up");
          c.Need(o.dh, a.n, "dh");
          c.Need(o.d_gate, a.n, "d_gate");
          c.Need(o.d_up, a.n, "d_up");
        } else if constexpr (std::is_same_v<T, ops::CrossEntropyForward> ||
                             std::is_same_v<T, ops::CrossEntropyBackward>) {
          c.NonNegative(a.num_tokens, "num_tokens");
          c.Positive(a.vocab_size, "vocab_size");
          if (!c.ok()) return;
          c.NonNegative(a.batch_tokens, "batch_tokens");
          c.NonNegative(a.row_offset, "row_offset");
          CheckLossDivisor(c, a);
          c.Finite(a.logit_softcap, "logit_softcap", /*non_negative=*/true);
          if (c.ok() && a.row_offset + a.num_tokens > a.BatchTokens()) {
            c.Fail(absl::StrCat("rows [", a.row_offset, ", ",
                                a.row_offset + a.num_tokens,
                                ") outside a batch of ", a.BatchTokens()));
          }
          if (!c.ok()) return;
          c.Need(o.logits, a.num_tokens * a.vocab_size, "logits");
          c.NeedIds(o.targets, a.BatchTokens(), "targets");
          c.Need(o.lse, a.num_tokens, "lse");
          if constexpr (std::is_same_v<T, ops::CrossEntropyForward>) {
            if (o.row_loss.bytes() > 0) {
              c.NeedBytes(o.row_loss, a.num_tokens * 8, "row_loss");
            } else {
              c.Need(o.loss, 1, "loss");
            }
          } else {
            c.Need(o.d_logits, a.num_tokens * a.vocab_size, "d_logits");
          }
        } else if constexpr (std::is_same_v<T, ops::CrossEntropyLoss>) {
          c.NonNegative(a.num_tokens, "num_tokens");
          c.Positive(a.vocab_size, "vocab_size");
          CheckLossDivisor(c, a);
          if (!c.ok()) return;
          c.NeedIds(o.targets, a.num_tokens, "targets");
          c.NeedBytes(o.row_loss, a.num_tokens * 8, "row_loss");
          c.Need(o.loss, 1, "loss");
        } else if constexpr (std::is_same_v<T, ops::Accumulate>) {
          c.NonNegative(a.n, "n");
          if (!c.ok()) return;
          c.Need(o.x, a.n, "x");
          c.Need(o.y, a.n, "y");
        } else if constexpr (std::is_same_v<T, ops::Scale> ||
                             std::is_same_v<T, ops::Fill>) {
          c.NonNegative(a.n, "n");
          if (!c.ok()) return;
          c.Need(o.x, a.n, "x");
        } else if constexpr (std::is_same_v<T, ops::Add>) {
          c.NonNegative(a.n, "n");
          if (!c.ok()) return;
          c.Need(o.a, a.n, "a");
          c.Need(o.b, a.n, "b");
          c.Need(o.out, a.n, "out");
          if (o.a.dtype != o.b.dtype || o.a.dtype != o.out.dtype) {
            c.Fail("add needs one dtype");
          }
        } else if constexpr (std::is_same_v<T, ops::Cast>) {
          c.NonNegative(a.n, "n");
          if (!c.ok()) return;
          c.Need(o.src, a.n, "src");
          c.Need(o.dst, a.n, "dst");
          if (a.src != o.src.dtype || a.dst != o.dst.dtype) {
            c.Fail("cast dtypes disagree with its tensors");
          }
        } else if constexpr (std::is_same_v<T, ops::SumSquares>) {
          c.NonNegative(a.n, "n");
          if (!c.ok()) return;
          c.Need(o.x, a.n, "x");
          c.Need(o.out, 2, "out");
          if (o.out.dtype != k::DType::kF32) {
            c.Fail("sum_squares writes two fp32 values");
          }
        } else if constexpr (std::is_same_v<T, ops::AdamW>) {
          c.NonNegative(a.n, "n");
          if (a.step < 1) c.Fail("AdamW steps count from 1");
          c.NeedF32(o.grads, "grads");
          for (const TensorRef* t : {&o.params, &o.exp_avg, &o.exp_avg_sq}) {
            if (t->dtype != k::DType::kF32 && t->dtype != k::DType::kBF16) {
              c.Fail("AdamW keeps params and moments in fp32 or bf16");
            }
          }
          if (o.exp_avg.dtype != o.exp_avg_sq.dtype) {
            c.Fail("AdamW's two moments have one dtype");
          }
          if (!c.ok()) return;
          c.Need(o.params, a.n, "params");
          c.Need(o.grads, a.n, "grads");
          c.Need(o.exp_avg, a.n, "exp_avg");
          c.Need(o.exp_avg_sq, a.n, "exp_avg_sq");
        } else {
          static_assert(kAlwaysFalse<T>, "unhandled op");
        }
      },
      call.op);
  return c.status();
}

}  // namespace runtime
}  // namespace zero3
