// Copyright 2026 The zero3 Authors.

#include "core/runtime/reference_executor.h"

#include <cstring>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/kernels/dtype.h"
#include "core/kernels/reference.h"
#include "core/util/check.h"

namespace zero3 {
namespace runtime {
namespace {

namespace k = kernels;

// A tensor seen as fp32: the buffer itself when it holds fp32, else a widened
// copy that Commit() narrows back.
class F32 {
 public:
  F32(const TensorRef& t, bool load) : t_(t) {
    if (t.dtype == k::DType::kF32) {
      ptr_ = t.slice.As<float>();
    } else {
      copy_.resize(t.elements());
      if (load) {
        k::CastArgs args;
        args.n = t.elements();
        args.src = t.dtype;
        args.dst = k::DType::kF32;
        k::Cast(args, t.slice.data(), copy_.data());
      }
      ptr_ = copy_.data();
    }
  }
  float* get() { return ptr_; }
  void Commit() {
    if (t_.dtype == k::DType::kF32) return;
    k::CastArgs args;
    args.n = t_.elements();
    args.src = k::DType::kF32;
    args.dst = t_.dtype;
    k::Cast(args, copy_.data(), t_.slice.data());
  }

 private:
  TensorRef t_;
  float* ptr_ = nullptr;
  std::vector<float> copy_;
};

class Checker {
 public:
  explicit Checker(const KernelCall& call) : call_(call) {}
  void Need(const TensorRef& t, int64_t elements, const char* name) {
    // An op that reads or writes none of a tensor (k = 0, n = 0) needs no
    // memory behind it: empty host buffers have none.
    if (!status_.ok() || elements == 0) return;
    if (t.slice.data() == nullptr) {
      status_ = absl::FailedPreconditionError(
          absl::StrCat(call_.label, " (", call_.OpName(), "): tensor ", name,
                       " has no data (timing-mode buffer?)"));
    } else if (t.elements() < elements) {
      status_ = absl::InvalidArgumentError(absl::StrCat(
          call_.label, " (", call_.OpName(), "): tensor ", name, " holds ",
          t.elements(), " elements, the op needs ", elements));
    }
  }
  void NeedIds(const BufferSlice& s, int64_t count, const char* name) {
    NeedRaw(s, count, 4, name, "int32 ids");
  }
  void NeedDoubles(const BufferSlice& s, int64_t count, const char* name) {
    NeedRaw(s, count, 8, name, "doubles");
  }
  const absl::Status& status() const { return status_; }

 private:
  // A raw slice of `count` values of `size` bytes.
  void NeedRaw(const BufferSlice& s, int64_t count, int64_t size,
               const char* name, const char* what) {
    if (!status_.ok()) return;
    if (s.data() == nullptr || s.bytes() < count * size) {
      status_ = absl::InvalidArgumentError(
          absl::StrCat(call_.label, " (", call_.OpName(), "): ", name,
                       " needs ", count, " ", what));
    }
  }

  const KernelCall& call_;
  absl::Status status_;
};

// The op's document positions (int32 [rows]), or null where it has none.
const int32_t* Positions(Checker& c, const BufferSlice& positions,
                         int64_t rows) {
  if (positions.bytes() == 0) return nullptr;
  c.NeedIds(positions, rows, "positions");
  return c.status().ok() ? positions.As<int32_t>() : nullptr;
}

template <class>
inline constexpr bool kAlwaysFalse = false;

}  // namespace

absl::Status ExecuteReference(const KernelCall& call) {
  Checker c(call);
  absl::Status result;
  std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        const auto& a = o.args;
        if constexpr (std::is_same_v<T, ops::EmbeddingForward>) {
          c.NeedIds(o.tokens, a.num_tokens, "tokens");
          c.Need(o.table, a.vocab_size * a.dim, "table");
          c.Need(o.out, a.num_tokens * a.dim, "out");
          if (!c.status().ok()) return;
          F32 table(o.table, true), out(o.out, false);
          k::EmbeddingForward(a, o.tokens.template As<int32_t>(), table.get(),
                              out.get());
          out.Commit();
        } else if constexpr (std::is_same_v<T, ops::EmbeddingBackward>) {
          c.NeedIds(o.tokens, a.num_tokens, "tokens");
          c.Need(o.d_out, a.num_tokens * a.dim, "d_out");
          c.Need(o.d_table, a.vocab_size * a.dim, "d_table");
          if (!c.status().ok()) return;
          F32 d_out(o.d_out, true), d_table(o.d_table, true);
          k::EmbeddingBackward(a, o.tokens.template As<int32_t>(), d_out.get(),
                               d_table.get());
          d_table.Commit();
        } else if constexpr (std::is_same_v<T, ops::Matmul>) {
          c.Need(o.a, a.m * a.k, "a");
          c.Need(o.b, a.k * a.n, "b");
          c.Need(o.c, a.m * a.n, "c");
          if (!c.status().ok()) return;
          F32 A(o.a, true), B(o.b, true), C(o.c, a.beta != 0.0f);
          k::Matmul(a, A.get(), B.get(), C.get());
          C.Commit();
        } else if constexpr (std::is_same_v<T, ops::BiasAdd>) {
          c.Need(o.bias, a.cols, "bias");
          c.Need(o.x, a.rows * a.cols, "x");
          if (!c.status().ok()) return;
          F32 bias(o.bias, true), x(o.x, true);
          k::BiasAdd(a, bias.get(), x.get());
          x.Commit();
        } else if constexpr (std::is_same_v<T, ops::BiasBackward>) {
          c.Need(o.dy, a.rows * a.cols, "dy");
          c.Need(o.d_bias, a.cols, "d_bias");
          if (!c.status().ok()) return;
          F32 dy(o.dy, true), db(o.d_bias, true);
          k::BiasBackward(a, dy.get(), db.get());
          db.Commit();
        } else if constexpr (std::is_same_v<T, ops::RmsNormForward>) {
          c.Need(o.x, a.rows * a.dim, "x");
          c.Need(o.weight, a.dim, "weight");
          c.Need(o.y, a.rows * a.dim, "y");
          c.Need(o.rstd, a.rows, "rstd");
          if (!c.status().ok()) return;
          F32 x(o.x, true), w(o.weight, true), y(o.y, false), r(o.rstd, false);
          k::RmsNormForward(a, x.get(), w.get(), y.get(), r.get());
          y.Commit();
          r.Commit();
        } else if constexpr (std::is_same_v<T, ops::RmsNormBackward>) {
          c.Need(o.x, a.rows * a.dim, "x");
          c.Need(o.weight, a.dim, "weight");
          c.Need(o.rstd, a.rows, "rstd");
          c.Need(o.dy, a.rows * a.dim, "dy");
          c.Need(o.dx, a.rows * a.dim, "dx");
          c.Need(o.d_weight, a.dim, "d_weight");
          if (!c.status().ok()) return;
          F32 x(o.x, true), w(o.weight, true), r(o.rstd, true), dy(o.dy, true),
              dx(o.dx, false), dw(o.d_weight, true);
          k::RmsNormBackward(a, x.get(), w.get(), r.get(), dy.get(), dx.get(),
                             dw.get());
          dx.Commit();
          dw.Commit();
        } else if constexpr (std::is_same_v<T, ops::RotaryForward> ||
                             std::is_same_v<T, ops::RotaryBackward>) {
          const int64_t n = a.batch * a.seq * a.heads * a.head_dim;
          const TensorRef& in = [&]() -> const TensorRef& {
            if constexpr (std::is_same_v<T, ops::RotaryForward>)
              return o.x;
            else
              return o.dy;
          }();
          const TensorRef& out = [&]() -> const TensorRef& {
            if constexpr (std::is_same_v<T, ops::RotaryForward>)
              return o.y;
            else
              return o.dx;
          }();
          c.Need(in, n, "input");
          c.Need(out, n, "output");
          const int32_t* positions = Positions(c, o.positions, a.batch * a.seq);
          if (!c.status().ok()) return;
          F32 x(in, true), y(out, false);
          if constexpr (std::is_same_v<T, ops::RotaryForward>) {
            k::RotaryForward(a, x.get(), y.get(), positions);
          } else {
            k::RotaryBackward(a, x.get(), y.get(), positions);
          }
          y.Commit();
        } else if constexpr (std::is_same_v<T, ops::AttentionForward>) {
          const int64_t tq = a.batch * a.seq * a.num_heads * a.head_dim;
          const int64_t tk = a.batch * a.seq * a.num_kv_heads * a.head_dim;
          c.Need(o.q, tq, "q");
          c.Need(o.k, tk, "k");
          c.Need(o.v, tk, "v");
          c.Need(o.out, tq, "out");
          c.Need(o.lse, a.batch * a.num_heads * a.seq, "lse");
          const int32_t* positions = Positions(c, o.positions, a.batch * a.seq);
          if (!c.status().ok()) return;
          F32 q(o.q, true), kk(o.k, true), v(o.v, true), out(o.out, false),
              lse(o.lse, false);
          k::AttentionForward(a, q.get(), kk.get(), v.get(), out.get(),
                              lse.get(), positions);
          out.Commit();
          lse.Commit();
        } else if constexpr (std::is_same_v<T, ops::AttentionBackward>) {
          const int64_t tq = a.batch * a.seq * a.num_heads * a.head_dim;
          const int64_t tk = a.batch * a.seq * a.num_kv_heads * a.head_dim;
          c.Need(o.q, tq, "q");
          c.Need(o.k, tk, "k");
          c.Need(o.v, tk, "v");
          c.Need(o.out, tq, "out");
          c.Need(o.lse, a.batch * a.num_heads * a.seq, "lse");
          c.Need(o.d_out, tq, "d_out");
          c.Need(o.dq, tq, "dq");
          c.Need(o.dk, tk, "dk");
          c.Need(o.dv, tk, "dv");
          const int32_t* positions = Positions(c, o.positions, a.batch * a.seq);
          if (!c.status().ok()) return;
          F32 q(o.q, true), kk(o.k, true), v(o.v, true), out(o.out, true),
              lse(o.lse, true), dout(o.d_out, true), dq(o.dq, false),
              dk(o.dk, false), dv(o.dv, false);
          k::AttentionBackward(a, q.get(), kk.get(), v.get(), out.get(),
                               lse.get(), dout.get(), dq.get(), dk.get(),
                               dv.get(), positions);
          dq.Commit();
          dk.Commit();
          dv.Commit();
        } else if constexpr (std::is_same_v<T, ops::SwigluForward>) {
          c.Need(o.gate, a.n, "gate");
          c.Need(o.up, a.n, "up");
          c.Need(o.h, a.n, "h");
          if (!c.status().ok()) return;
          F32 g(o.gate, true), u(o.up, true), h(o.h, false);
          k::SwigluForward(a, g.get(), u.get(), h.get());
          h.Commit();
        } else if constexpr (std::is_same_v<T, ops::SwigluBackward>) {
          c.Need(o.gate, a.n, "gate");
          c.Need(o.up, a.n, "up");
          c.Need(o.dh, a.n, "dh");
          c.Need(o.d_gate, a.n, "d_gate");
          c.Need(o.d_up, a.n, "d_up");
          if (!c.status().ok()) return;
          F32 g(o.gate, true), u(o.up, true), dh(o.dh, true),
              dg(o.d_gate, false), du(o.d_up, false);
          k::SwigluBackward(a, g.get(), u.get(), dh.get(), dg.get(), du.get());
          dg.Commit();
          du.Commit();
        } else if constexpr (std::is_same_v<T, ops::CrossEntropyForward>) {
          const bool rows = o.row_loss.bytes() > 0;
          c.Need(o.logits, a.num_tokens * a.vocab_size, "logits");
          c.NeedIds(o.targets, a.BatchTokens(), "targets");
          c.Need(o.lse, a.num_tokens, "lse");
          if (rows) {
            c.NeedDoubles(o.row_loss, a.num_tokens, "row_loss");
          } else {
            c.Need(o.loss, 1, "loss");
          }
          if (!c.status().ok()) return;
          F32 logits(o.logits, true), lse(o.lse, false);
          const int32_t* targets = o.targets.template As<int32_t>();
          if (rows) {
            k::CrossEntropyRowLosses(a, logits.get(), targets, lse.get(),
                                     o.row_loss.template As<double>());
          } else {
            F32 loss(o.loss, false);
            loss.get()[0] = static_cast<float>(
                k::CrossEntropyForward(a, logits.get(), targets, lse.get()));
            loss.Commit();
          }
          lse.Commit();
        } else if constexpr (std::is_same_v<T, ops::CrossEntropyLoss>) {
          c.NeedIds(o.targets, a.num_tokens, "targets");
          c.NeedDoubles(o.row_loss, a.num_tokens, "row_loss");
          c.Need(o.loss, 1, "loss");
          if (!c.status().ok()) return;
          F32 loss(o.loss, false);
          loss.get()[0] = static_cast<float>(
              k::CrossEntropyMean(a, o.targets.template As<int32_t>(),
                                  o.row_loss.template As<double>()));
          loss.Commit();
        } else if constexpr (std::is_same_v<T, ops::CrossEntropyBackward>) {
          c.Need(o.logits, a.num_tokens * a.vocab_size, "logits");
          c.NeedIds(o.targets, a.BatchTokens(), "targets");
          c.Need(o.lse, a.num_tokens, "lse");
          c.Need(o.d_logits, a.num_tokens * a.vocab_size, "d_logits");
          if (!c.status().ok()) return;
          F32 logits(o.logits, true), lse(o.lse, true), dl(o.d_logits, false);
          k::CrossEntropyBackward(a, logits.get(),
                                  o.targets.template As<int32_t>(), lse.get(),
                                  dl.get());
          dl.Commit();
        } else if constexpr (std::is_same_v<T, ops::Accumulate>) {
          c.Need(o.x, a.n, "x");
          c.Need(o.y, a.n, "y");
          if (!c.status().ok()) return;
          k::Accumulate(a, o.x.dtype, o.x.slice.data(), o.y.dtype,
                        o.y.slice.data());
        } else if constexpr (std::is_same_v<T, ops::Scale>) {
          c.Need(o.x, a.n, "x");
          if (!c.status().ok()) return;
          k::Scale(a, o.x.dtype, o.x.slice.data());
        } else if constexpr (std::is_same_v<T, ops::Fill>) {
          c.Need(o.x, a.n, "x");
          if (!c.status().ok()) return;
          k::Fill(a, o.x.dtype, o.x.slice.data());
        } else if constexpr (std::is_same_v<T, ops::Add>) {
          c.Need(o.a, a.n, "a");
          c.Need(o.b, a.n, "b");
          c.Need(o.out, a.n, "out");
          if (!c.status().ok()) return;
          if (o.a.dtype != o.b.dtype || o.a.dtype != o.out.dtype) {
            result = absl::InvalidArgumentError(
                absl::StrCat(call.label, ": add needs one dtype"));
            return;
          }
          k::Add(a, o.out.dtype, o.a.slice.data(), o.b.slice.data(),
                 o.out.slice.data());
        } else if constexpr (std::is_same_v<T, ops::Cast>) {
          c.Need(o.src, a.n, "src");
          c.Need(o.dst, a.n, "dst");
          if (!c.status().ok()) return;
          if (a.src != o.src.dtype || a.dst != o.dst.dtype) {
            result = absl::InvalidArgumentError(absl::StrCat(
                call.label, ": cast dtypes disagree with its tensors"));
            return;
          }
          k::Cast(a, o.src.slice.data(), o.dst.slice.data());
        } else if constexpr (std::is_same_v<T, ops::SumSquares>) {
          c.Need(o.x, a.n, "x");
          c.Need(o.out, 2, "out");
          if (!c.status().ok()) return;
          if (o.out.dtype != k::DType::kF32) {
            result = absl::InvalidArgumentError(absl::StrCat(
                call.label, ": sum_squares writes two fp32 values"));
            return;
          }
          float* out = o.out.slice.template As<float>();
          const double base =
              o.accumulate ? static_cast<double>(out[0]) + out[1] : 0.0;
          const double total =
              base + k::SumSquares(a, o.x.dtype, o.x.slice.data());
          out[0] = static_cast<float>(total);
          out[1] = static_cast<float>(total - static_cast<double>(out[0]));
        } else if constexpr (std::is_same_v<T, ops::AdamW>) {
          for (const TensorRef* t :
               {&o.params, &o.grads, &o.exp_avg, &o.exp_avg_sq}) {
            if (t->dtype != k::DType::kF32) {
              result = absl::InvalidArgumentError(
                  absl::StrCat(call.label, ": adamw needs fp32 tensors"));
              return;
            }
          }
          c.Need(o.params, a.n, "params");
          c.Need(o.grads, a.n, "grads");
          c.Need(o.exp_avg, a.n, "exp_avg");
          c.Need(o.exp_avg_sq, a.n, "exp_avg_sq");
          if (!c.status().ok()) return;
          k::AdamWStep(a, o.params.slice.template As<float>(),
                       o.grads.slice.template As<float>(),
                       o.exp_avg.slice.template As<float>(),
                       o.exp_avg_sq.slice.template As<float>());
        } else {
          static_assert(kAlwaysFalse<T>, "unhandled op");
        }
      },
      call.op);
  if (!c.status().ok()) return c.status();
  return result;
}

}  // namespace runtime
}  // namespace zero3
