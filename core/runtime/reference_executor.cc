// Copyright 2026 The zero3 Authors.

#include "core/runtime/reference_executor.h"

#include <cstring>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/kernels/dtype.h"
#include "core/kernels/reference.h"
#include "core/runtime/kernel_call_checks.h"
#include "core/util/check.h"
#include "core/util/status_macros.h"

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

// The op's document positions (int32 [rows]), or null where it has none.
const int32_t* Positions(const BufferSlice& positions) {
  return positions.bytes() == 0 ? nullptr : positions.As<int32_t>();
}

template <class>
inline constexpr bool kAlwaysFalse = false;

}  // namespace

absl::Status ExecuteReference(const KernelCall& call) {
  ZR_RETURN_IF_ERROR(CheckKernelCall(call, /*need_data=*/true));
  std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        const auto& a = o.args;
        if constexpr (std::is_same_v<T, ops::EmbeddingForward>) {
          F32 table(o.table, true), out(o.out, false);
          k::EmbeddingForward(a, o.tokens.template As<int32_t>(), table.get(),
                              out.get());
          out.Commit();
        } else if constexpr (std::is_same_v<T, ops::EmbeddingBackward>) {
          F32 d_out(o.d_out, true), d_table(o.d_table, true);
          k::EmbeddingBackward(a, o.tokens.template As<int32_t>(), d_out.get(),
                               d_table.get());
          d_table.Commit();
        } else if constexpr (std::is_same_v<T, ops::Matmul>) {
          F32 A(o.a, true), B(o.b, true), C(o.c, a.beta != 0.0f);
          k::Matmul(a, A.get(), B.get(), C.get());
          C.Commit();
        } else if constexpr (std::is_same_v<T, ops::BiasAdd>) {
          F32 bias(o.bias, true), x(o.x, true);
          k::BiasAdd(a, bias.get(), x.get());
          x.Commit();
        } else if constexpr (std::is_same_v<T, ops::BiasBackward>) {
          F32 dy(o.dy, true), db(o.d_bias, true);
          k::BiasBackward(a, dy.get(), db.get());
          db.Commit();
        } else if constexpr (std::is_same_v<T, ops::RmsNormForward>) {
          F32 x(o.x, true), w(o.weight, true), y(o.y, false), r(o.rstd, false);
          k::RmsNormForward(a, x.get(), w.get(), y.get(), r.get());
          y.Commit();
          r.Commit();
        } else if constexpr (std::is_same_v<T, ops::RmsNormBackward>) {
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
          const int32_t* positions = Positions(o.positions);
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
          const int32_t* positions = Positions(o.positions);
          F32 q(o.q, true), kk(o.k, true), v(o.v, true), out(o.out, false),
              lse(o.lse, false);
          k::AttentionForward(a, q.get(), kk.get(), v.get(), out.get(),
                              lse.get(), positions);
          out.Commit();
          lse.Commit();
        } else if constexpr (std::is_same_v<T, ops::AttentionBackward>) {
          const int32_t* positions = Positions(o.positions);
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
          F32 g(o.gate, true), u(o.up, true), h(o.h, false);
          k::SwigluForward(a, g.get(), u.get(), h.get());
          h.Commit();
        } else if constexpr (std::is_same_v<T, ops::SwigluBackward>) {
          F32 g(o.gate, true), u(o.up, true), dh(o.dh, true),
              dg(o.d_gate, false), du(o.d_up, false);
          k::SwigluBackward(a, g.get(), u.get(), dh.get(), dg.get(), du.get());
          dg.Commit();
          du.Commit();
        } else if constexpr (std::is_same_v<T, ops::CrossEntropyForward>) {
          const bool rows = o.row_loss.bytes() > 0;
          if (rows) {
          } else {
          }
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
          F32 loss(o.loss, false);
          loss.get()[0] = static_cast<float>(
              k::CrossEntropyMean(a, o.targets.template As<int32_t>(),
                                  o.row_loss.template As<double>()));
          loss.Commit();
        } else if constexpr (std::is_same_v<T, ops::CrossEntropyBackward>) {
          F32 logits(o.logits, true), lse(o.lse, true), dl(o.d_logits, false);
          k::CrossEntropyBackward(a, logits.get(),
                                  o.targets.template As<int32_t>(), lse.get(),
                                  dl.get());
          dl.Commit();
        } else if constexpr (std::is_same_v<T, ops::Accumulate>) {
          k::Accumulate(a, o.x.dtype, o.x.slice.data(), o.y.dtype,
                        o.y.slice.data());
        } else if constexpr (std::is_same_v<T, ops::Scale>) {
          k::Scale(a, o.x.dtype, o.x.slice.data());
        } else if constexpr (std::is_same_v<T, ops::Fill>) {
          k::Fill(a, o.x.dtype, o.x.slice.data());
        } else if constexpr (std::is_same_v<T, ops::Add>) {
          k::Add(a, o.out.dtype, o.a.slice.data(), o.b.slice.data(),
                 o.out.slice.data());
        } else if constexpr (std::is_same_v<T, ops::Cast>) {
          k::Cast(a, o.src.slice.data(), o.dst.slice.data());
        } else if constexpr (std::is_same_v<T, ops::SumSquares>) {
          float* out = o.out.slice.template As<float>();
          const double base =
              o.accumulate ? static_cast<double>(out[0]) + out[1] : 0.0;
          const double total =
              base + k::SumSquares(a, o.x.dtype, o.x.slice.data());
          out[0] = static_cast<float>(total);
          out[1] = static_cast<float>(total - static_cast<double>(out[0]));
        } else if constexpr (std::is_same_v<T, ops::AdamW>) {
          k::AdamWStep(a, o.params.dtype, o.params.slice.data(),
                       o.grads.slice.template As<float>(), o.exp_avg.dtype,
                       o.exp_avg.slice.data(), o.exp_avg_sq.slice.data());
        } else {
          static_assert(kAlwaysFalse<T>, "unhandled op");
        }
      },
      call.op);
  return absl::OkStatus();
}

}  // namespace runtime
}  // namespace zero3
