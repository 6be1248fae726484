// Copyright 2026 The zero3 Authors.
//
// Conformance cases for kernels: every op of core/runtime/kernel_call.h on
// seeded random inputs, run on the device and compared with the CPU
// reference run here on the host (see testing/backend_conformance.h).
//
// Inputs are rounded to their tensor's dtype before either side sees them,
// so both compute from the same values; the reference computes in float and
// its outputs are rounded to the output tensor's dtype, as the kernels
// store them. In the bf16 variant the data tensors are bf16 and the
// per-row statistics (rstd, lse) and scalar results (loss, sum of squares)
// stay fp32, as the engine keeps them.

#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "core/kernels/dtype.h"
#include "core/kernels/op_args.h"
#include "core/kernels/reference.h"
#include "core/runtime/runtime.h"
#include "core/util/status_macros.h"
#include "testing/internal/conformance.h"

namespace zero3 {
namespace testing {
namespace conformance_internal {
namespace {

namespace k = kernels;
namespace ops = runtime::ops;
using runtime::Runtime;
using runtime::TensorRef;

// One case's device, inputs and checks.
class KernelTest {
 public:
  KernelTest(runtime::Stream& stream, DeviceArena& arena)
      : stream_(stream), arena_(arena) {}

  // n values uniform in [lo, hi) that `dtype` holds exactly.
  std::vector<float> Random(int64_t n, DType dtype, double lo = -1.0,
                            double hi = 1.0) {
    return RandomValues(n, seed_++, dtype, lo, hi);
  }

  absl::StatusOr<TensorRef> In(const std::vector<float>& values, DType dtype,
                               absl::string_view label) {
    return arena_.Input(values, dtype, label);
  }
  absl::StatusOr<TensorRef> Out(int64_t elements, DType dtype,
                                absl::string_view label) {
    return arena_.Output(elements, dtype, label);
  }
  absl::StatusOr<runtime::BufferSlice> Ids(const std::vector<int32_t>& ids) {
    return arena_.Ids(ids, "ids");
  }

  absl::Status Launch(runtime::Op op, absl::string_view label) {
    return stream_.Launch(
        runtime::KernelCall(std::move(op), std::string(label)));
  }

  // EXPECTs that `tensor` holds `expected` (computed in float; rounded here
  // to the tensor's dtype).
  absl::Status Check(absl::string_view what, const TensorRef& tensor,
                     std::vector<float> expected) {
    ZR_ASSIGN_OR_RETURN(std::vector<float> actual, arena_.Read(tensor));
    ExpectClose(what, actual, RoundTo(std::move(expected), tensor.dtype),
                tensor.dtype);
    return absl::OkStatus();
  }

 private:
  runtime::Stream& stream_;
  DeviceArena& arena_;
  uint32_t seed_ = 1;
};

using KernelBody = std::function<absl::Status(KernelTest&, DType)>;

absl::Status RunKernelCase(Runtime& rt, DType dtype, const KernelBody& body) {
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Stream> stream,
                      rt.device().CreateStream("kernels"));
  DeviceArena arena(rt, *stream);
  KernelTest test(*stream, arena);
  return body(test, dtype);
}

// ---------------------------------------------------------------------------
// Embedding

absl::Status EmbeddingForwardCase(KernelTest& t, DType dt) {
  k::EmbeddingArgs args;
  args.num_tokens = 7;
  args.vocab_size = 11;
  args.dim = 16;
  const std::vector<int32_t> tokens = {3, 0, 10, 3, 7, 1, 3};
  const std::vector<float> table = t.Random(args.vocab_size * args.dim, dt);
  std::vector<float> out(args.num_tokens * args.dim);
  k::EmbeddingForward<float>(args, tokens.data(), table.data(), out.data());

  ops::EmbeddingForward op;
  op.args = args;
  ZR_ASSIGN_OR_RETURN(op.tokens, t.Ids(tokens));
  ZR_ASSIGN_OR_RETURN(op.table, t.In(table, dt, "table"));
  ZR_ASSIGN_OR_RETURN(op.out, t.Out(out.size(), dt, "out"));
  ZR_RETURN_IF_ERROR(t.Launch(op, "embedding_fwd"));
  return t.Check("out", op.out, out);
}

absl::Status EmbeddingBackwardCase(KernelTest& t, DType dt) {
  k::EmbeddingArgs args;
  args.num_tokens = 7;
  args.vocab_size = 11;
  args.dim = 16;
  // Repeated tokens: their rows of d_table receive sums.
  const std::vector<int32_t> tokens = {3, 0, 10, 3, 7, 1, 3};
  const std::vector<float> d_out = t.Random(args.num_tokens * args.dim, dt);
  const std::vector<float> d_table0 = t.Random(args.vocab_size * args.dim, dt);
  std::vector<float> d_table = d_table0;
  k::EmbeddingBackward<float>(args, tokens.data(), d_out.data(),
                              d_table.data());

  ops::EmbeddingBackward op;
  op.args = args;
  ZR_ASSIGN_OR_RETURN(op.tokens, t.Ids(tokens));
  ZR_ASSIGN_OR_RETURN(op.d_out, t.In(d_out, dt, "d_out"));
  ZR_ASSIGN_OR_RETURN(op.d_table, t.In(d_table0, dt, "d_table"));
  ZR_RETURN_IF_ERROR(t.Launch(op, "embedding_bwd"));
  return t.Check("d_table", op.d_table, d_table);
}

// ---------------------------------------------------------------------------
// Matmul: all four transpose layouts, overwriting (beta = 0, C starts as
// NaN and must not be read) and accumulating (beta = 1, alpha = 0.5).

absl::Status MatmulCase(KernelTest& t, DType dt) {
  for (bool trans_a : {false, true}) {
    for (bool trans_b : {false, true}) {
      for (float beta : {0.0f, 1.0f}) {
        k::MatmulArgs args;
        args.trans_a = trans_a;
        args.trans_b = trans_b;
        args.m = 13;
        args.n = 17;
        args.k = 33;
        args.alpha = beta == 0 ? 1.0f : 0.5f;
        args.beta = beta;
        const std::vector<float> a = t.Random(args.m * args.k, dt);
        const std::vector<float> b = t.Random(args.k * args.n, dt);
        const std::vector<float> c0 = beta == 0
                                          ? std::vector<float>(args.m * args.n)
                                          : t.Random(args.m * args.n, dt);
        std::vector<float> c = c0;
        k::Matmul<float>(args, a.data(), b.data(), c.data());

        ops::Matmul op;
        op.args = args;
        ZR_ASSIGN_OR_RETURN(op.a, t.In(a, dt, "a"));
        ZR_ASSIGN_OR_RETURN(op.b, t.In(b, dt, "b"));
        if (beta == 0) {
          ZR_ASSIGN_OR_RETURN(op.c, t.Out(c.size(), dt, "c"));
        } else {
          ZR_ASSIGN_OR_RETURN(op.c, t.In(c0, dt, "c"));
        }
        ZR_RETURN_IF_ERROR(t.Launch(op, "matmul"));
        ZR_RETURN_IF_ERROR(
            t.Check(absl::StrCat("c (trans_a ", trans_a, ", trans_b ", trans_b,
                                 ", beta ", beta, ")"),
                    op.c, c));
      }
    }
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Bias

absl::Status BiasAddCase(KernelTest& t, DType dt) {
  k::BiasArgs args;
  args.rows = 6;
  args.cols = 10;
  const std::vector<float> bias = t.Random(args.cols, dt);
  const std::vector<float> x0 = t.Random(args.rows * args.cols, dt);
  std::vector<float> x = x0;
  k::BiasAdd<float>(args, bias.data(), x.data());

  ops::BiasAdd op;
  op.args = args;
  ZR_ASSIGN_OR_RETURN(op.bias, t.In(bias, dt, "bias"));
  ZR_ASSIGN_OR_RETURN(op.x, t.In(x0, dt, "x"));
  ZR_RETURN_IF_ERROR(t.Launch(op, "bias_add"));
  return t.Check("x", op.x, x);
}

absl::Status BiasBackwardCase(KernelTest& t, DType dt) {
  k::BiasArgs args;
  args.rows = 6;
  args.cols = 10;
  const std::vector<float> dy = t.Random(args.rows * args.cols, dt);
  const std::vector<float> d_bias0 = t.Random(args.cols, dt);
  std::vector<float> d_bias = d_bias0;
  k::BiasBackward<float>(args, dy.data(), d_bias.data());

  ops::BiasBackward op;
  op.args = args;
  ZR_ASSIGN_OR_RETURN(op.dy, t.In(dy, dt, "dy"));
  ZR_ASSIGN_OR_RETURN(op.d_bias, t.In(d_bias0, dt, "d_bias"));
  ZR_RETURN_IF_ERROR(t.Launch(op, "bias_bwd"));
  return t.Check("d_bias", op.d_bias, d_bias);
}

// ---------------------------------------------------------------------------
// RMSNorm

// weight_offset 0: plain RMSNorm, weights around 1; 1: Gemma's
// (1 + weight), weights around 0.
k::RmsNormArgs NormArgs(float weight_offset) {
  k::RmsNormArgs args;
  args.rows = 5;
  args.dim = 32;
  args.weight_offset = weight_offset;
  return args;
}

std::vector<float> NormWeights(KernelTest& t, DType dt,
                               const k::RmsNormArgs& args) {
  const double center = args.weight_offset == 0.0f ? 1.0 : 0.0;
  return t.Random(args.dim, dt, center - 0.5, center + 0.5);
}

absl::Status RmsNormForwardWith(KernelTest& t, DType dt, float weight_offset) {
  const k::RmsNormArgs args = NormArgs(weight_offset);
  const std::vector<float> x = t.Random(args.rows * args.dim, dt, -2, 2);
  const std::vector<float> weight = NormWeights(t, dt, args);
  std::vector<float> y(x.size()), rstd(args.rows);
  k::RmsNormForward<float>(args, x.data(), weight.data(), y.data(),
                           rstd.data());

  ops::RmsNormForward op;
  op.args = args;
  ZR_ASSIGN_OR_RETURN(op.x, t.In(x, dt, "x"));
  ZR_ASSIGN_OR_RETURN(op.weight, t.In(weight, dt, "weight"));
  ZR_ASSIGN_OR_RETURN(op.y, t.Out(y.size(), dt, "y"));
  ZR_ASSIGN_OR_RETURN(op.rstd, t.Out(rstd.size(), DType::kF32, "rstd"));
  ZR_RETURN_IF_ERROR(t.Launch(op, "rmsnorm_fwd"));
  ZR_RETURN_IF_ERROR(t.Check("y", op.y, y));
  return t.Check("rstd", op.rstd, rstd);
}

absl::Status RmsNormBackwardWith(KernelTest& t, DType dt, float weight_offset) {
  const k::RmsNormArgs args = NormArgs(weight_offset);
  const std::vector<float> x = t.Random(args.rows * args.dim, dt, -2, 2);
  const std::vector<float> weight = NormWeights(t, dt, args);
  const std::vector<float> dy = t.Random(x.size(), dt);
  const std::vector<float> d_weight0 = t.Random(args.dim, dt);
  std::vector<float> y(x.size()), rstd(args.rows);
  k::RmsNormForward<float>(args, x.data(), weight.data(), y.data(),
                           rstd.data());
  std::vector<float> dx(x.size()), d_weight = d_weight0;
  k::RmsNormBackward<float>(args, x.data(), weight.data(), rstd.data(),
                            dy.data(), dx.data(), d_weight.data());

  ops::RmsNormBackward op;
  op.args = args;
  ZR_ASSIGN_OR_RETURN(op.x, t.In(x, dt, "x"));
  ZR_ASSIGN_OR_RETURN(op.weight, t.In(weight, dt, "weight"));
  ZR_ASSIGN_OR_RETURN(op.rstd, t.In(rstd, DType::kF32, "rstd"));
  ZR_ASSIGN_OR_RETURN(op.dy, t.In(dy, dt, "dy"));
  ZR_ASSIGN_OR_RETURN(op.dx, t.Out(dx.size(), dt, "dx"));
  ZR_ASSIGN_OR_RETURN(op.d_weight, t.In(d_weight0, dt, "d_weight"));
  ZR_RETURN_IF_ERROR(t.Launch(op, "rmsnorm_bwd"));
  ZR_RETURN_IF_ERROR(t.Check("dx", op.dx, dx));
  return t.Check("d_weight", op.d_weight, d_weight);
}

absl::Status RmsNormForwardCase(KernelTest& t, DType dt) {
  return RmsNormForwardWith(t, dt, 0.0f);
}
absl::Status RmsNormBackwardCase(KernelTest& t, DType dt) {
  return RmsNormBackwardWith(t, dt, 0.0f);
}
// Gemma's RMSNorm: y = x * rstd * (1 + weight).
absl::Status RmsNormForwardOffsetCase(KernelTest& t, DType dt) {
  return RmsNormForwardWith(t, dt, 1.0f);
}
absl::Status RmsNormBackwardOffsetCase(KernelTest& t, DType dt) {
  return RmsNormBackwardWith(t, dt, 1.0f);
}

// ---------------------------------------------------------------------------
// Rotary

// The plain rotation, and a scaled partial one (a table of frequencies,
// an attention scaling, 4 of 8 dimensions rotated, the rest passed through).
std::vector<k::RotaryArgs> RotaryShapes() {
  k::RotaryArgs plain;
  plain.batch = 2;
  plain.seq = 5;
  plain.heads = 3;
  plain.head_dim = 8;
  k::RotaryArgs scaled = plain;
  scaled.rotary_dim = 4;
  scaled.attention_scaling = 1.25f;
  scaled.has_inv_freq = true;
  scaled.inv_freq[0] = 0.75f;
  scaled.inv_freq[1] = 0.0625f;
  return {plain, scaled};
}

absl::Status RotaryForwardCase(KernelTest& t, DType dt) {
  for (const k::RotaryArgs& args : RotaryShapes()) {
    const std::string what = args.has_inv_freq ? " (scaled, partial)" : "";
    const std::vector<float> x =
        t.Random(args.batch * args.seq * args.heads * args.head_dim, dt);
    std::vector<float> y(x.size());
    k::RotaryForward<float>(args, x.data(), y.data());

    ops::RotaryForward op;
    op.args = args;
    ZR_ASSIGN_OR_RETURN(op.x, t.In(x, dt, "x" + what));
    ZR_ASSIGN_OR_RETURN(op.y, t.Out(y.size(), dt, "y" + what));
    ZR_RETURN_IF_ERROR(t.Launch(op, "rotary_fwd" + what));
    ZR_RETURN_IF_ERROR(t.Check("y" + what, op.y, y));
    // Packed documents: positions restarting every 3 rows.
    std::vector<int32_t> positions(args.batch * args.seq);
    for (size_t i = 0; i < positions.size(); ++i) {
      positions[i] = static_cast<int32_t>((i % args.seq) % 3);
    }
    k::RotaryForward<float>(args, x.data(), y.data(), positions.data());
    ZR_ASSIGN_OR_RETURN(op.positions, t.Ids(positions));
    ZR_ASSIGN_OR_RETURN(op.y, t.Out(y.size(), dt, "y packed" + what));
    const absl::Status launched = t.Launch(op, "rotary_fwd packed" + what);
    if (absl::IsUnimplemented(launched)) continue;
    ZR_RETURN_IF_ERROR(launched);
    ZR_RETURN_IF_ERROR(t.Check("y packed" + what, op.y, y));
  }
  return absl::OkStatus();
}

absl::Status RotaryBackwardCase(KernelTest& t, DType dt) {
  for (const k::RotaryArgs& args : RotaryShapes()) {
    const std::string what = args.has_inv_freq ? " (scaled, partial)" : "";
    const std::vector<float> dy =
        t.Random(args.batch * args.seq * args.heads * args.head_dim, dt);
    std::vector<float> dx(dy.size());
    k::RotaryBackward<float>(args, dy.data(), dx.data());

    ops::RotaryBackward op;
    op.args = args;
    ZR_ASSIGN_OR_RETURN(op.dy, t.In(dy, dt, "dy" + what));
    ZR_ASSIGN_OR_RETURN(op.dx, t.Out(dx.size(), dt, "dx" + what));
    ZR_RETURN_IF_ERROR(t.Launch(op, "rotary_bwd" + what));
    ZR_RETURN_IF_ERROR(t.Check("dx" + what, op.dx, dx));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Attention: grouped-query (4 query heads on 2 kv heads), causal and not.

k::AttentionArgs AttentionShape(bool causal) {
  k::AttentionArgs args;
  args.batch = 2;
  args.seq = 6;
  args.num_heads = 4;
  args.num_kv_heads = 2;
  args.head_dim = 8;
  args.causal = causal;
  return args;
}

// Packed documents of 4 rows (the last of each sequence shorter): each
// row's place in its document.
std::vector<int32_t> PackedPositions(const k::AttentionArgs& a) {
  std::vector<int32_t> p(a.batch * a.seq);
  for (int64_t i = 0; i < static_cast<int64_t>(p.size()); ++i) {
    p[i] = static_cast<int32_t>((i % a.seq) % 4);
  }
  return p;
}

// One attention problem of a case: its arguments, whether its rows are
// packed documents, the name its checks carry, and the range of q.
struct AttentionProblem {
  k::AttentionArgs args;
  bool packed = false;
  std::string name;
  double q_range = 1.0;  // q uniform in [-q_range, q_range)
};

// Causal, full, and causal within packed documents. A backend that refuses
// document positions (Unimplemented) skips the packed variant.
std::vector<AttentionProblem> MaskProblems() {
  return {{AttentionShape(true), false, " (causal)"},
          {AttentionShape(false), false, " (full)"},
          {AttentionShape(true), true, " (packed)"}};
}

// Gemma 2's scores: their own scale (not 1 / sqrt(head_dim)) and capped by
// softcap * tanh(score / softcap), causal and in a sliding window shorter
// than the sequence. q spans [-3, 3], so the scores reach well into the
// cap's curve.
std::vector<AttentionProblem> SoftcapProblems() {
  k::AttentionArgs capped = AttentionShape(true);
  capped.scale = 0.5f;
  capped.softcap = 1.0f;
  k::AttentionArgs windowed = capped;
  windowed.window = 3;
  return {{capped, false, " (scale, softcap, causal)", 3.0},
          {windowed, false, " (scale, softcap, window 3)", 3.0}};
}

absl::Status AttentionForwardOf(KernelTest& t, DType dt,
                                const std::vector<AttentionProblem>& problems) {
  for (const AttentionProblem& problem : problems) {
    const k::AttentionArgs& a = problem.args;
    const std::vector<int32_t> positions = PackedPositions(a);
    const int32_t* packed = problem.packed ? positions.data() : nullptr;
    const int64_t tokens = a.batch * a.seq;
    const std::vector<float> q = t.Random(tokens * a.num_heads * a.head_dim, dt,
                                          -problem.q_range, problem.q_range);
    const std::vector<float> kk =
        t.Random(tokens * a.num_kv_heads * a.head_dim, dt);
    const std::vector<float> v =
        t.Random(tokens * a.num_kv_heads * a.head_dim, dt);
    std::vector<float> out(q.size()), lse(a.batch * a.num_heads * a.seq);
    k::AttentionForward<float>(a, q.data(), kk.data(), v.data(), out.data(),
                               lse.data(), packed);

    ops::AttentionForward op;
    op.args = a;
    if (packed != nullptr) {
      ZR_ASSIGN_OR_RETURN(op.positions, t.Ids(positions));
    }
    ZR_ASSIGN_OR_RETURN(op.q, t.In(q, dt, "q"));
    ZR_ASSIGN_OR_RETURN(op.k, t.In(kk, dt, "k"));
    ZR_ASSIGN_OR_RETURN(op.v, t.In(v, dt, "v"));
    ZR_ASSIGN_OR_RETURN(op.out, t.Out(out.size(), dt, "out"));
    ZR_ASSIGN_OR_RETURN(op.lse, t.Out(lse.size(), DType::kF32, "lse"));
    const absl::Status launched = t.Launch(op, "attention_fwd");
    if (packed != nullptr && absl::IsUnimplemented(launched)) continue;
    ZR_RETURN_IF_ERROR(launched);
    ZR_RETURN_IF_ERROR(t.Check("out" + problem.name, op.out, out));
    ZR_RETURN_IF_ERROR(t.Check("lse" + problem.name, op.lse, lse));
  }
  return absl::OkStatus();
}

absl::Status AttentionBackwardOf(
    KernelTest& t, DType dt, const std::vector<AttentionProblem>& problems) {
  for (const AttentionProblem& problem : problems) {
    const k::AttentionArgs& a = problem.args;
    const std::vector<int32_t> positions = PackedPositions(a);
    const int32_t* packed = problem.packed ? positions.data() : nullptr;
    const int64_t tokens = a.batch * a.seq;
    const std::vector<float> q = t.Random(tokens * a.num_heads * a.head_dim, dt,
                                          -problem.q_range, problem.q_range);
    const std::vector<float> kk =
        t.Random(tokens * a.num_kv_heads * a.head_dim, dt);
    const std::vector<float> v =
        t.Random(tokens * a.num_kv_heads * a.head_dim, dt);
    const std::vector<float> d_out = t.Random(q.size(), dt);
    // The forward pass's results as the device would have stored them.
    std::vector<float> out(q.size()), lse(a.batch * a.num_heads * a.seq);
    k::AttentionForward<float>(a, q.data(), kk.data(), v.data(), out.data(),
                               lse.data(), packed);
    out = RoundTo(std::move(out), dt);
    std::vector<float> dq(q.size()), dk(kk.size()), dv(v.size());
    k::AttentionBackward<float>(a, q.data(), kk.data(), v.data(), out.data(),
                                lse.data(), d_out.data(), dq.data(), dk.data(),
                                dv.data(), packed);

    ops::AttentionBackward op;
    op.args = a;
    if (packed != nullptr) {
      ZR_ASSIGN_OR_RETURN(op.positions, t.Ids(positions));
    }
    ZR_ASSIGN_OR_RETURN(op.q, t.In(q, dt, "q"));
    ZR_ASSIGN_OR_RETURN(op.k, t.In(kk, dt, "k"));
    ZR_ASSIGN_OR_RETURN(op.v, t.In(v, dt, "v"));
    ZR_ASSIGN_OR_RETURN(op.out, t.In(out, dt, "out"));
    ZR_ASSIGN_OR_RETURN(op.lse, t.In(lse, DType::kF32, "lse"));
    ZR_ASSIGN_OR_RETURN(op.d_out, t.In(d_out, dt, "d_out"));
    ZR_ASSIGN_OR_RETURN(op.dq, t.Out(dq.size(), dt, "dq"));
    ZR_ASSIGN_OR_RETURN(op.dk, t.Out(dk.size(), dt, "dk"));
    ZR_ASSIGN_OR_RETURN(op.dv, t.Out(dv.size(), dt, "dv"));
    const absl::Status launched = t.Launch(op, "attention_bwd");
    if (packed != nullptr && absl::IsUnimplemented(launched)) continue;
    ZR_RETURN_IF_ERROR(launched);
    const std::string& m = problem.name;
    ZR_RETURN_IF_ERROR(t.Check("dq" + m, op.dq, dq));
    ZR_RETURN_IF_ERROR(t.Check("dk" + m, op.dk, dk));
    ZR_RETURN_IF_ERROR(t.Check("dv" + m, op.dv, dv));
  }
  return absl::OkStatus();
}

absl::Status AttentionForwardCase(KernelTest& t, DType dt) {
  return AttentionForwardOf(t, dt, MaskProblems());
}
absl::Status AttentionBackwardCase(KernelTest& t, DType dt) {
  return AttentionBackwardOf(t, dt, MaskProblems());
}
absl::Status AttentionForwardSoftcapCase(KernelTest& t, DType dt) {
  return AttentionForwardOf(t, dt, SoftcapProblems());
}
absl::Status AttentionBackwardSoftcapCase(KernelTest& t, DType dt) {
  return AttentionBackwardOf(t, dt, SoftcapProblems());
}

// ---------------------------------------------------------------------------
// The gated activations: SwiGLU (silu) and GeGLU (GELU's tanh approximation).

absl::Status GluForwardWith(KernelTest& t, DType dt,
                            k::GluActivation activation) {
  k::SwigluArgs args;
  args.n = 100;
  args.activation = activation;
  const std::vector<float> gate = t.Random(args.n, dt, -4, 4);
  const std::vector<float> up = t.Random(args.n, dt, -2, 2);
  std::vector<float> h(args.n);
  k::SwigluForward<float>(args, gate.data(), up.data(), h.data());

  ops::SwigluForward op;
  op.args = args;
  ZR_ASSIGN_OR_RETURN(op.gate, t.In(gate, dt, "gate"));
  ZR_ASSIGN_OR_RETURN(op.up, t.In(up, dt, "up"));
  ZR_ASSIGN_OR_RETURN(op.h, t.Out(h.size(), dt, "h"));
  ZR_RETURN_IF_ERROR(t.Launch(op, "swiglu_fwd"));
  return t.Check("h", op.h, h);
}

absl::Status GluBackwardWith(KernelTest& t, DType dt,
                             k::GluActivation activation) {
  k::SwigluArgs args;
  args.n = 100;
  args.activation = activation;
  const std::vector<float> gate = t.Random(args.n, dt, -4, 4);
  const std::vector<float> up = t.Random(args.n, dt, -2, 2);
  const std::vector<float> dh = t.Random(args.n, dt);
  std::vector<float> d_gate(args.n), d_up(args.n);
  k::SwigluBackward<float>(args, gate.data(), up.data(), dh.data(),
                           d_gate.data(), d_up.data());

  ops::SwigluBackward op;
  op.args = args;
  ZR_ASSIGN_OR_RETURN(op.gate, t.In(gate, dt, "gate"));
  ZR_ASSIGN_OR_RETURN(op.up, t.In(up, dt, "up"));
  ZR_ASSIGN_OR_RETURN(op.dh, t.In(dh, dt, "dh"));
  ZR_ASSIGN_OR_RETURN(op.d_gate, t.Out(args.n, dt, "d_gate"));
  ZR_ASSIGN_OR_RETURN(op.d_up, t.Out(args.n, dt, "d_up"));
  ZR_RETURN_IF_ERROR(t.Launch(op, "swiglu_bwd"));
  ZR_RETURN_IF_ERROR(t.Check("d_gate", op.d_gate, d_gate));
  return t.Check("d_up", op.d_up, d_up);
}

absl::Status SwigluForwardCase(KernelTest& t, DType dt) {
  return GluForwardWith(t, dt, k::GluActivation::kSilu);
}
absl::Status SwigluBackwardCase(KernelTest& t, DType dt) {
  return GluBackwardWith(t, dt, k::GluActivation::kSilu);
}
absl::Status GegluForwardCase(KernelTest& t, DType dt) {
  return GluForwardWith(t, dt, k::GluActivation::kGeluTanh);
}
absl::Status GegluBackwardCase(KernelTest& t, DType dt) {
  return GluBackwardWith(t, dt, k::GluActivation::kGeluTanh);
}

// ---------------------------------------------------------------------------
// Cross-entropy: one row ignored; plain logits, and logits soft-capped
// (Gemma 2's final_logit_softcapping) at 2, which bends logits in [-3, 3]
// well into tanh.

constexpr float kLogitSoftcap = 2.0f;

k::CrossEntropyArgs CrossEntropyShape(float logit_softcap) {
  k::CrossEntropyArgs args;
  args.num_tokens = 6;
  args.vocab_size = 13;
  args.ignore_index = -1;
  args.grad_scale = 0.5f;
  args.logit_softcap = logit_softcap;
  return args;
}

const std::vector<int32_t>& Targets() {
  static const std::vector<int32_t>* targets =
      new std::vector<int32_t>{4, 12, -1, 0, 7, 4};
  return *targets;
}

absl::Status CrossEntropyForwardWith(KernelTest& t, DType dt,
                                     float logit_softcap) {
  const k::CrossEntropyArgs args = CrossEntropyShape(logit_softcap);
  const std::vector<float> logits =
      t.Random(args.num_tokens * args.vocab_size, dt, -3, 3);
  std::vector<float> lse(args.num_tokens);
  const float loss = static_cast<float>(k::CrossEntropyForward<float>(
      args, logits.data(), Targets().data(), lse.data()));

  ops::CrossEntropyForward op;
  op.args = args;
  ZR_ASSIGN_OR_RETURN(op.logits, t.In(logits, dt, "logits"));
  ZR_ASSIGN_OR_RETURN(op.targets, t.Ids(Targets()));
  ZR_ASSIGN_OR_RETURN(op.lse, t.Out(lse.size(), DType::kF32, "lse"));
  ZR_ASSIGN_OR_RETURN(op.loss, t.Out(1, DType::kF32, "loss"));
  ZR_RETURN_IF_ERROR(t.Launch(op, "cross_entropy_fwd"));
  ZR_RETURN_IF_ERROR(t.Check("lse", op.lse, lse));
  return t.Check("loss", op.loss, {loss});
}

absl::Status CrossEntropyBackwardWith(KernelTest& t, DType dt,
                                      float logit_softcap) {
  const k::CrossEntropyArgs args = CrossEntropyShape(logit_softcap);
  const std::vector<float> logits =
      t.Random(args.num_tokens * args.vocab_size, dt, -3, 3);
  std::vector<float> lse(args.num_tokens);
  k::CrossEntropyForward<float>(args, logits.data(), Targets().data(),
                                lse.data());
  std::vector<float> d_logits(logits.size());
  k::CrossEntropyBackward<float>(args, logits.data(), Targets().data(),
                                 lse.data(), d_logits.data());

  ops::CrossEntropyBackward op;
  op.args = args;
  ZR_ASSIGN_OR_RETURN(op.logits, t.In(logits, dt, "logits"));
  ZR_ASSIGN_OR_RETURN(op.targets, t.Ids(Targets()));
  ZR_ASSIGN_OR_RETURN(op.lse, t.In(lse, DType::kF32, "lse"));
  ZR_ASSIGN_OR_RETURN(op.d_logits, t.Out(d_logits.size(), dt, "d_logits"));
  ZR_RETURN_IF_ERROR(t.Launch(op, "cross_entropy_bwd"));
  return t.Check("d_logits", op.d_logits, d_logits);
}

// The batch in two chunks of rows (4 and 2, the ignored row in the first):
// each chunk's forward writes its rows' loss terms, CrossEntropyLoss their
// sum over a loss divisor (a rank's share of a global batch's predicted
// targets), each chunk's backward divides by it too.
absl::Status CrossEntropyChunkedWith(KernelTest& t, DType dt,
                                     float logit_softcap) {
  k::CrossEntropyArgs args = CrossEntropyShape(logit_softcap);
  args.loss_divisor = 7.5;
  const int64_t V = args.vocab_size;
  const std::vector<float> logits = t.Random(args.num_tokens * V, dt, -3, 3);
  std::vector<float> lse(args.num_tokens);
  const float loss = static_cast<float>(k::CrossEntropyForward<float>(
      args, logits.data(), Targets().data(), lse.data()));
  std::vector<float> d_logits(logits.size());
  k::CrossEntropyBackward<float>(args, logits.data(), Targets().data(),
                                 lse.data(), d_logits.data());

  ZR_ASSIGN_OR_RETURN(runtime::BufferSlice targets, t.Ids(Targets()));
  ZR_ASSIGN_OR_RETURN(TensorRef row_loss,
                      t.Out(2 * args.num_tokens, DType::kF32, "row_loss"));
  for (const auto& [first, rows] :
       {std::pair<int64_t, int64_t>{0, 4}, std::pair<int64_t, int64_t>{4, 2}}) {
    k::CrossEntropyArgs chunk = args;
    chunk.num_tokens = rows;
    chunk.batch_tokens = args.num_tokens;
    chunk.row_offset = first;
    const auto part = [&](const std::vector<float>& v, int64_t width) {
      return std::vector<float>(v.begin() + first * width,
                                v.begin() + (first + rows) * width);
    };
    ops::CrossEntropyForward f;
    f.args = chunk;
    ZR_ASSIGN_OR_RETURN(f.logits, t.In(part(logits, V), dt, "logits"));
    f.targets = targets;
    ZR_ASSIGN_OR_RETURN(f.lse, t.Out(rows, DType::kF32, "lse"));
    f.row_loss = row_loss.slice.Sub(first * 8, rows * 8);
    ZR_RETURN_IF_ERROR(t.Launch(f, "cross_entropy_fwd chunk"));
    ZR_RETURN_IF_ERROR(t.Check("chunk lse", f.lse, part(lse, 1)));
    ops::CrossEntropyBackward b;
    b.args = chunk;
    b.logits = b.d_logits = f.logits;  // in place, as the model runs it
    b.targets = targets;
    b.lse = f.lse;
    ZR_RETURN_IF_ERROR(t.Launch(b, "cross_entropy_bwd chunk"));
    ZR_RETURN_IF_ERROR(
        t.Check("chunk d_logits", b.d_logits, part(d_logits, V)));
  }
  ops::CrossEntropyLoss l;
  l.args = args;
  l.targets = targets;
  l.row_loss = row_loss.slice;
  ZR_ASSIGN_OR_RETURN(l.loss, t.Out(1, DType::kF32, "loss"));
  ZR_RETURN_IF_ERROR(t.Launch(l, "cross_entropy_loss"));
  return t.Check("loss of the chunks", l.loss, {loss});
}

absl::Status CrossEntropyForwardCase(KernelTest& t, DType dt) {
  return CrossEntropyForwardWith(t, dt, 0.0f);
}
absl::Status CrossEntropyBackwardCase(KernelTest& t, DType dt) {
  return CrossEntropyBackwardWith(t, dt, 0.0f);
}
absl::Status CrossEntropyChunkedCase(KernelTest& t, DType dt) {
  return CrossEntropyChunkedWith(t, dt, 0.0f);
}
absl::Status CrossEntropyForwardSoftcapCase(KernelTest& t, DType dt) {
  return CrossEntropyForwardWith(t, dt, kLogitSoftcap);
}
absl::Status CrossEntropyBackwardSoftcapCase(KernelTest& t, DType dt) {
  return CrossEntropyBackwardWith(t, dt, kLogitSoftcap);
}
absl::Status CrossEntropyChunkedSoftcapCase(KernelTest& t, DType dt) {
  return CrossEntropyChunkedWith(t, dt, kLogitSoftcap);
}

// ---------------------------------------------------------------------------
// Elementwise, cast and reductions; the expected values come from the
// storage-typed reference kernels on encoded bytes.

constexpr int64_t kElements = 77;

absl::Status AccumulateCase(KernelTest& t, DType dt) {
  // Same dtype, and (bf16 variant) a bf16 gradient into an fp32 buffer.
  std::vector<std::pair<DType, DType>> pairs = {{dt, dt}};
  if (dt != DType::kF32) pairs.push_back({dt, DType::kF32});
  for (const auto& [x_dtype, y_dtype] : pairs) {
    k::AccumulateArgs args;
    args.n = kElements;
    args.alpha = 0.75f;
    const std::vector<float> x = t.Random(args.n, x_dtype);
    const std::vector<float> y0 = t.Random(args.n, y_dtype);
    std::vector<uint8_t> y_bytes = Encode(y0, y_dtype);
    k::Accumulate(args, x_dtype, Encode(x, x_dtype).data(), y_dtype,
                  y_bytes.data());

    ops::Accumulate op;
    op.args = args;
    ZR_ASSIGN_OR_RETURN(op.x, t.In(x, x_dtype, "x"));
    ZR_ASSIGN_OR_RETURN(op.y, t.In(y0, y_dtype, "y"));
    ZR_RETURN_IF_ERROR(t.Launch(op, "accumulate"));
    ZR_RETURN_IF_ERROR(t.Check(absl::StrCat("y (", k::DTypeName(y_dtype),
                                            " += ", k::DTypeName(x_dtype), ")"),
                               op.y, Decode(y_bytes, y_dtype)));
  }
  return absl::OkStatus();
}

absl::Status ScaleCase(KernelTest& t, DType dt) {
  k::ScaleArgs args;
  args.n = kElements;
  args.alpha = -1.5f;
  const std::vector<float> x0 = t.Random(args.n, dt);
  std::vector<uint8_t> x_bytes = Encode(x0, dt);
  k::Scale(args, dt, x_bytes.data());

  ops::Scale op;
  op.args = args;
  ZR_ASSIGN_OR_RETURN(op.x, t.In(x0, dt, "x"));
  ZR_RETURN_IF_ERROR(t.Launch(op, "scale"));
  return t.Check("x", op.x, Decode(x_bytes, dt));
}

absl::Status FillCase(KernelTest& t, DType dt) {
  k::FillArgs args;
  args.n = kElements;
  args.value = 0.3f;
  std::vector<uint8_t> x_bytes(args.n * k::DTypeSize(dt));
  k::Fill(args, dt, x_bytes.data());

  ops::Fill op;
  op.args = args;
  ZR_ASSIGN_OR_RETURN(op.x, t.Out(args.n, dt, "x"));
  ZR_RETURN_IF_ERROR(t.Launch(op, "fill"));
  return t.Check("x", op.x, Decode(x_bytes, dt));
}

absl::Status AddCase(KernelTest& t, DType dt) {
  k::AddArgs args;
  args.n = kElements;
  const std::vector<float> a = t.Random(args.n, dt);
  const std::vector<float> b = t.Random(args.n, dt);
  std::vector<uint8_t> out_bytes(args.n * k::DTypeSize(dt));
  k::Add(args, dt, Encode(a, dt).data(), Encode(b, dt).data(),
         out_bytes.data());

  ops::Add op;
  op.args = args;
  ZR_ASSIGN_OR_RETURN(op.a, t.In(a, dt, "a"));
  ZR_ASSIGN_OR_RETURN(op.b, t.In(b, dt, "b"));
  ZR_ASSIGN_OR_RETURN(op.out, t.Out(args.n, dt, "out"));
  ZR_RETURN_IF_ERROR(t.Launch(op, "add"));
  return t.Check("out", op.out, Decode(out_bytes, dt));
}

absl::Status CastCase(KernelTest& t, DType dt) {
  // fp32 variant: a copy. bf16 variant: narrowing (from values bf16 cannot
  // hold, so rounding is exercised), widening, and bf16 to bf16.
  std::vector<std::pair<DType, DType>> pairs = {{DType::kF32, DType::kF32}};
  if (dt != DType::kF32) {
    pairs = {{DType::kF32, dt}, {dt, DType::kF32}, {dt, dt}};
  }
  for (const auto& [src_dtype, dst_dtype] : pairs) {
    k::CastArgs args;
    args.n = kElements;
    args.src = src_dtype;
    args.dst = dst_dtype;
    const std::vector<float> src = t.Random(args.n, src_dtype, -100, 100);
    std::vector<uint8_t> dst_bytes(args.n * k::DTypeSize(dst_dtype));
    k::Cast(args, Encode(src, src_dtype).data(), dst_bytes.data());

    ops::Cast op;
    op.args = args;
    ZR_ASSIGN_OR_RETURN(op.src, t.In(src, src_dtype, "src"));
    ZR_ASSIGN_OR_RETURN(op.dst, t.Out(args.n, dst_dtype, "dst"));
    ZR_RETURN_IF_ERROR(t.Launch(op, "cast"));
    ZR_RETURN_IF_ERROR(
        t.Check(absl::StrCat("dst (", k::DTypeName(src_dtype), " to ",
                             k::DTypeName(dst_dtype), ")"),
                op.dst, Decode(dst_bytes, dst_dtype)));
  }
  return absl::OkStatus();
}

// The sum is kept in double precision as out = [hi, lo], hi + lo = sum:
// checked by value of hi and by hi + lo against the double sum.
absl::Status SumSquaresCase(KernelTest& t, DType dt) {
  k::ReduceArgs args;
  args.n = 1000;
  const std::vector<float> x = t.Random(args.n, dt);
  const double sum = k::SumSquares(args, dt, Encode(x, dt).data());
  for (bool accumulate : {false, true}) {
    ops::SumSquares op;
    op.args = args;
    op.accumulate = accumulate;
    ZR_ASSIGN_OR_RETURN(op.x, t.In(x, dt, "x"));
    // 2.5 + 2^-30 as [hi, lo]: the low part must take part in the sum.
    const float lo = 9.313225746154785e-10f;
    if (accumulate) {
      ZR_ASSIGN_OR_RETURN(op.out, t.In({2.5f, lo}, DType::kF32, "out"));
    } else {
      ZR_ASSIGN_OR_RETURN(op.out, t.Out(2, DType::kF32, "out"));
    }
    ZR_RETURN_IF_ERROR(t.Launch(op, "sum_squares"));
    const double expected =
        (accumulate ? 2.5 + static_cast<double>(lo) : 0.0) + sum;
    const float hi = static_cast<float>(expected);
    const float rest = static_cast<float>(expected - static_cast<double>(hi));
    ZR_RETURN_IF_ERROR(t.Check(
        accumulate ? "[hi, lo] of 2.5 + 2^-30 + sum" : "[hi, lo] of sum",
        op.out, {hi, rest}));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// AdamW (fp32 only, by the op's contract): decoupled decay and L2.

absl::Status AdamWCase(KernelTest& t, DType dt) {
  for (bool adamw_mode : {true, false}) {
    k::AdamWArgs args;
    args.n = 300;
    args.step = 3;
    args.lr = 1e-2f;
    args.weight_decay = 0.1f;
    args.adamw_mode = adamw_mode;
    args.grad_scale = adamw_mode ? 1.0f : 0.37f;  // the fused unscale
    const std::vector<float> params0 = t.Random(args.n, DType::kF32);
    const std::vector<float> grads = t.Random(args.n, DType::kF32, -0.1, 0.1);
    const std::vector<float> m0 = t.Random(args.n, DType::kF32, -0.01, 0.01);
    const std::vector<float> v0 = t.Random(args.n, DType::kF32, 0, 1e-4);
    std::vector<float> params = params0, m = m0, v = v0;
    k::AdamWStep(args, params.data(), grads.data(), m.data(), v.data());

    ops::AdamW op;
    op.args = args;
    ZR_ASSIGN_OR_RETURN(op.params, t.In(params0, DType::kF32, "params"));
    ZR_ASSIGN_OR_RETURN(op.grads, t.In(grads, DType::kF32, "grads"));
    ZR_ASSIGN_OR_RETURN(op.exp_avg, t.In(m0, DType::kF32, "exp_avg"));
    ZR_ASSIGN_OR_RETURN(op.exp_avg_sq, t.In(v0, DType::kF32, "exp_avg_sq"));
    ZR_RETURN_IF_ERROR(t.Launch(op, "adamw"));
    const std::string mode = adamw_mode ? " (adamw)" : " (l2)";
    ZR_RETURN_IF_ERROR(t.Check("params" + mode, op.params, params));
    ZR_RETURN_IF_ERROR(t.Check("exp_avg" + mode, op.exp_avg, m));
    ZR_RETURN_IF_ERROR(t.Check("exp_avg_sq" + mode, op.exp_avg_sq, v));
    ZR_RETURN_IF_ERROR(t.Check("grads, read only" + mode, op.grads, grads));
  }
  return absl::OkStatus();
}

// AdamW over bf16 state: a bf16 master with bf16 or fp32 moments (bf16
// master weights, and optimizer states), and fp32 master with bf16
// moments; against the reference's widen, step, round.
absl::Status AdamWBf16StatesCase(KernelTest& t, DType) {
  const std::pair<DType, DType> kinds[] = {{DType::kBF16, DType::kBF16},
                                           {DType::kBF16, DType::kF32},
                                           {DType::kF32, DType::kBF16}};
  for (const auto& [pdt, mdt] : kinds) {
    k::AdamWArgs args;
    args.n = 300;
    args.step = 3;
    args.lr = 1e-2f;
    args.weight_decay = 0.1f;
    const std::vector<float> params0 = t.Random(args.n, pdt);
    const std::vector<float> grads = t.Random(args.n, DType::kF32, -0.1, 0.1);
    const std::vector<float> m0 = t.Random(args.n, mdt, -0.01, 0.01);
    const std::vector<float> v0 = t.Random(args.n, mdt, 0, 1e-4);
    // The reference in the states' own dtypes.
    auto stored = [&](const std::vector<float>& x, DType dt) {
      std::vector<uint16_t> bits(x.size());
      if (dt == DType::kBF16) {
        k::FloatToBF16(absl::MakeConstSpan(x), absl::MakeSpan(bits));
      }
      return bits;
    };
    std::vector<float> p = params0, m = m0, v = v0;
    std::vector<uint16_t> pb = stored(p, pdt), mb = stored(m, mdt),
                          vb = stored(v, mdt);
    auto data = [](DType dt, std::vector<float>& f,
                   std::vector<uint16_t>& b) -> void* {
      return dt == DType::kBF16 ? static_cast<void*>(b.data())
                                : static_cast<void*>(f.data());
    };
    k::AdamWStep(args, pdt, data(pdt, p, pb), grads.data(), mdt,
                 data(mdt, m, mb), data(mdt, v, vb));
    auto widened = [](DType dt, std::vector<float> f,
                      const std::vector<uint16_t>& b) {
      if (dt == DType::kBF16) {
        k::BF16ToFloat(absl::MakeConstSpan(b), absl::MakeSpan(f));
      }
      return f;
    };
    ops::AdamW op;
    op.args = args;
    ZR_ASSIGN_OR_RETURN(op.params, t.In(params0, pdt, "params"));
    ZR_ASSIGN_OR_RETURN(op.grads, t.In(grads, DType::kF32, "grads"));
    ZR_ASSIGN_OR_RETURN(op.exp_avg, t.In(m0, mdt, "exp_avg"));
    ZR_ASSIGN_OR_RETURN(op.exp_avg_sq, t.In(v0, mdt, "exp_avg_sq"));
    ZR_RETURN_IF_ERROR(t.Launch(op, "adamw bf16 states"));
    const std::string kind = absl::StrCat(" (", k::DTypeName(pdt), " master, ",
                                          k::DTypeName(mdt), " moments)");
    ZR_RETURN_IF_ERROR(
        t.Check("params" + kind, op.params, widened(pdt, p, pb)));
    ZR_RETURN_IF_ERROR(
        t.Check("exp_avg" + kind, op.exp_avg, widened(mdt, m, mb)));
    ZR_RETURN_IF_ERROR(
        t.Check("exp_avg_sq" + kind, op.exp_avg_sq, widened(mdt, v, vb)));
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<ConformanceCase> KernelCases() {
  struct Op {
    const char* name;
    KernelBody body;
    bool fp32_only;
  };
  const Op all[] = {
      {"EmbeddingForward", EmbeddingForwardCase, false},
      {"EmbeddingBackward", EmbeddingBackwardCase, false},
      {"Matmul", MatmulCase, false},
      {"BiasAdd", BiasAddCase, false},
      {"BiasBackward", BiasBackwardCase, false},
      {"RmsNormForward", RmsNormForwardCase, false},
      {"RmsNormBackward", RmsNormBackwardCase, false},
      {"RotaryForward", RotaryForwardCase, false},
      {"RotaryBackward", RotaryBackwardCase, false},
      {"AttentionForward", AttentionForwardCase, false},
      {"AttentionBackward", AttentionBackwardCase, false},
      {"SwigluForward", SwigluForwardCase, false},
      {"SwigluBackward", SwigluBackwardCase, false},
      {"CrossEntropyForward", CrossEntropyForwardCase, false},
      {"CrossEntropyBackward", CrossEntropyBackwardCase, false},
      {"CrossEntropyLoss", CrossEntropyChunkedCase, false},
      {"Accumulate", AccumulateCase, false},
      {"Scale", ScaleCase, false},
      {"Fill", FillCase, false},
      {"Add", AddCase, false},
      {"Cast", CastCase, false},
      {"SumSquares", SumSquaresCase, false},
      {"AdamW", AdamWCase, true},
  };
  static_assert(
      sizeof(all) / sizeof(all[0]) == std::variant_size_v<runtime::Op>,
      "kernel_call.h has a new op: add a conformance case for it");
  // Ops of the list above under the arguments other models set (Gemma's
  // RMSNorm, activation, attention scores and logits).
  const Op variants[] = {
      {"RmsNormForwardWeightOffset", RmsNormForwardOffsetCase, false},
      {"RmsNormBackwardWeightOffset", RmsNormBackwardOffsetCase, false},
      {"AttentionForwardSoftcap", AttentionForwardSoftcapCase, false},
      {"AttentionBackwardSoftcap", AttentionBackwardSoftcapCase, false},
      {"GegluForward", GegluForwardCase, false},
      {"GegluBackward", GegluBackwardCase, false},
      {"AdamWBf16States", AdamWBf16StatesCase, true},
      {"CrossEntropyForwardSoftcap", CrossEntropyForwardSoftcapCase, false},
      {"CrossEntropyBackwardSoftcap", CrossEntropyBackwardSoftcapCase, false},
      {"CrossEntropyLossSoftcap", CrossEntropyChunkedSoftcapCase, false},
  };
  std::vector<Op> listed(std::begin(all), std::end(all));
  listed.insert(listed.end(), std::begin(variants), std::end(variants));
  std::vector<ConformanceCase> cases;
  for (const Op& op : listed) {
    for (DType dtype : {DType::kF32, DType::kBF16}) {
      if (op.fp32_only && dtype != DType::kF32) continue;
      KernelBody body = op.body;
      cases.push_back({"Kernels",
                       absl::StrCat(op.name, "/", k::DTypeName(dtype)), 1,
                       [body, dtype](Runtime& rt) {
                         return RunKernelCase(rt, dtype, body);
                       },
                       __FILE__, __LINE__});
    }
  }
  return cases;
}

}  // namespace conformance_internal
}  // namespace testing
}  // namespace zero3
