// Copyright 2026 The zero3 Authors.
//
// Elementwise ops against the CPU reference: cast, accumulate, scale, fill,
// add, SwiGLU and GeGLU, bias add, AdamW. Those whose float arithmetic is the
// same sequence of correctly rounded operations on both sides must match bit
// for bit.

#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/kernels/test_util.h"
#include "core/kernels/dtype.h"
#include "core/kernels/op_args.h"
#include "core/runtime/kernel_call.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace cuda {
namespace testing {
namespace {

using kernels::DType;
using kernels::DTypeName;
namespace ops = runtime::ops;

constexpr DType kAll[] = {DType::kF32, DType::kBF16, DType::kF16};

// Random values plus the cases conversions get wrong: signed zeros,
// infinities, NaN, fp16 overflow and subnormals, bf16 and fp16 ties.
std::vector<float> WithSpecials(int64_t n, uint32_t seed) {
  std::vector<float> v = RandomValues(n, seed, -3.0f, 3.0f);
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            -std::numeric_limits<float>::quiet_NaN(),
                            65504.0f,
                            65519.0f,
                            65520.0f,
                            1e6f,
                            -1e6f,
                            3e-8f,
                            6e-8f,
                            1e-40f,
                            -1e-45f,
                            1.0f + 1.0f / 256.0f,   // bf16 tie
                            1.0f + 3.0f / 256.0f,   // bf16 tie, rounds up
                            1.0f + 1.0f / 2048.0f,  // fp16 tie
                            3.4e38f};
  for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]) && i < v.size();
       ++i) {
    v[i * 7 % v.size()] = specials[i];
  }
  return v;
}

class ElementwiseTest : public KernelTest {
 protected:
  // The gated activation forward and backward over mixed dtypes and sizes
  // (unaligned tails, 16-byte vectors).
  void CheckGlu(kernels::GluActivation activation);
};

TEST_F(ElementwiseTest, CastEveryPair) {
  for (int64_t n : {int64_t{1}, int64_t{1003}, int64_t{100000}}) {
    for (int64_t offset : {int64_t{0}, int64_t{1}}) {
      for (DType src : kAll) {
        for (DType dst : kAll) {
          OpHarness h;
          h.Input("src", src, WithSpecials(n, 1), offset);
          h.Output("dst", dst, n, Tolerance::Exact(), 0.0f, offset);
          const std::string label =
              absl::StrCat("cast ", DTypeName(src), "->", DTypeName(dst),
                           " n=", n, " offset=", offset);
          ASSERT_TRUE(h.Run(*ctx_, label, [&](const OpHarness::Binder& b) {
                         ops::Cast op;
                         op.args.n = n;
                         op.args.src = src;
                         op.args.dst = dst;
                         op.src = b.T("src");
                         op.dst = b.T("dst");
                         return runtime::Op(op);
                       }).ok());
        }
      }
    }
  }
}

TEST_F(ElementwiseTest, AccumulateMixedDtypes) {
  for (int64_t n : {int64_t{7}, int64_t{4099}}) {
    for (DType x : kAll) {
      for (DType y : kAll) {
        OpHarness h;
        h.Input("x", x, RandomValues(n, 2));
        h.InOut("y", y, RandomValues(n, 3), Tolerance::Exact());
        const std::string label = absl::StrCat("accumulate ", DTypeName(x),
                                               "+=", DTypeName(y), " n=", n);
        ASSERT_TRUE(h.Run(*ctx_, label, [&](const OpHarness::Binder& b) {
                       ops::Accumulate op;
                       op.args.n = n;
                       op.args.alpha = 0.37f;
                       op.x = b.T("x");
                       op.y = b.T("y");
                       return runtime::Op(op);
                     }).ok());
      }
    }
  }
}

TEST_F(ElementwiseTest, ScaleFillAdd) {
  const int64_t n = 10007;
  for (DType dtype : kAll) {
    {
      OpHarness h;
      h.InOut("x", dtype, RandomValues(n, 4), Tolerance::Exact());
      ASSERT_TRUE(h.Run(*ctx_, absl::StrCat("scale ", DTypeName(dtype)),
                        [&](const OpHarness::Binder& b) {
                          ops::Scale op;
                          op.args.n = n;
                          op.args.alpha = -1.7f;
                          op.x = b.T("x");
                          return runtime::Op(op);
                        })
                      .ok());
    }
    for (float value : {0.0f, 0.3f, -2.5f}) {
      OpHarness h;
      h.Output("x", dtype, n, Tolerance::Exact(), 1.0f, 1);
      ASSERT_TRUE(h.Run(*ctx_,
                        absl::StrCat("fill ", DTypeName(dtype), " ", value),
                        [&](const OpHarness::Binder& b) {
                          ops::Fill op;
                          op.args.n = n;
                          op.args.value = value;
                          op.x = b.T("x");
                          return runtime::Op(op);
                        })
                      .ok());
    }
    {
      OpHarness h;
      h.Input("a", dtype, RandomValues(n, 5));
      h.Input("b", dtype, RandomValues(n, 6));
      h.Output("out", dtype, n, Tolerance::Exact());
      ASSERT_TRUE(h.Run(*ctx_, absl::StrCat("add ", DTypeName(dtype)),
                        [&](const OpHarness::Binder& b) {
                          ops::Add op;
                          op.args.n = n;
                          op.a = b.T("a");
                          op.b = b.T("b");
                          op.out = b.T("out");
                          return runtime::Op(op);
                        })
                      .ok());
    }
    {
      // In place, as the residual backward does: out aliases a.
      OpHarness h;
      h.InOut("a", dtype, RandomValues(n, 7), Tolerance::Exact());
      h.Input("b", dtype, RandomValues(n, 8));
      ASSERT_TRUE(h.Run(*ctx_, absl::StrCat("add in place ", DTypeName(dtype)),
                        [&](const OpHarness::Binder& b) {
                          ops::Add op;
                          op.args.n = n;
                          op.a = b.T("a");
                          op.b = b.T("b");
                          op.out = b.T("a");
                          return runtime::Op(op);
                        })
                      .ok());
    }
  }
}

void ElementwiseTest::CheckGlu(kernels::GluActivation activation) {
  const bool gelu = activation == kernels::GluActivation::kGeluTanh;
  const char* name = gelu ? "geglu" : "swiglu";
  struct Case {
    DType gate, up, out;
    int64_t n;
  };
  const Case cases[] = {{DType::kF32, DType::kF32, DType::kF32, 1001},
                        {DType::kBF16, DType::kBF16, DType::kBF16, 1001},
                        {DType::kF16, DType::kF16, DType::kF16, 64},
                        {DType::kBF16, DType::kF32, DType::kF32, 333},
                        {DType::kBF16, DType::kBF16, DType::kBF16, 1 << 20}};
  for (const Case& c : cases) {
    const std::string dtypes = absl::StrCat(
        DTypeName(c.gate), "/", DTypeName(c.up), "/", DTypeName(c.out));
    {
      OpHarness h;
      h.Input("gate", c.gate, RandomValues(c.n, 9, -8.0f, 8.0f));
      h.Input("up", c.up, RandomValues(c.n, 10));
      h.Output("h", c.out, c.n, Tolerance::For(c.out));
      ASSERT_TRUE(h.Run(*ctx_, absl::StrCat(name, " fwd ", dtypes, " n=", c.n),
                        [&](const OpHarness::Binder& b) {
                          ops::SwigluForward op;
                          op.args.n = c.n;
                          op.args.activation = activation;
                          op.gate = b.T("gate");
                          op.up = b.T("up");
                          op.h = b.T("h");
                          return runtime::Op(op);
                        })
                      .ok());
    }
    {
      OpHarness h;
      h.Input("gate", c.gate, RandomValues(c.n, 11, -8.0f, 8.0f));
      h.Input("up", c.up, RandomValues(c.n, 12));
      h.Input("dh", c.out, RandomValues(c.n, 13));
      h.Output("d_gate", c.out, c.n, Tolerance::For(c.out));
      h.Output("d_up", c.out, c.n, Tolerance::For(c.out));
      ASSERT_TRUE(h.Run(*ctx_, absl::StrCat(name, " bwd ", dtypes, " n=", c.n),
                        [&](const OpHarness::Binder& b) {
                          ops::SwigluBackward op;
                          op.args.n = c.n;
                          op.args.activation = activation;
                          op.gate = b.T("gate");
                          op.up = b.T("up");
                          op.dh = b.T("dh");
                          op.d_gate = b.T("d_gate");
                          op.d_up = b.T("d_up");
                          return runtime::Op(op);
                        })
                      .ok());
    }
  }
}

TEST_F(ElementwiseTest, Swiglu) { CheckGlu(kernels::GluActivation::kSilu); }

TEST_F(ElementwiseTest, Geglu) { CheckGlu(kernels::GluActivation::kGeluTanh); }

TEST_F(ElementwiseTest, BiasAdd) {
  struct Case {
    DType bias, x;
    int64_t rows, cols;
  };
  const Case cases[] = {{DType::kF32, DType::kF32, 37, 24},
                        {DType::kBF16, DType::kBF16, 37, 13},
                        {DType::kBF16, DType::kBF16, 1, 1536},
                        {DType::kF32, DType::kBF16, 5, 40},
                        {DType::kBF16, DType::kBF16, 4096, 256}};
  for (const Case& c : cases) {
    OpHarness h;
    h.Input("bias", c.bias, RandomValues(c.cols, 14));
    h.InOut("x", c.x, RandomValues(c.rows * c.cols, 15), Tolerance::Exact());
    ASSERT_TRUE(h.Run(*ctx_,
                      absl::StrCat("bias_add ", DTypeName(c.bias), "/",
                                   DTypeName(c.x), " ", c.rows, "x", c.cols),
                      [&](const OpHarness::Binder& b) {
                        ops::BiasAdd op;
                        op.args.rows = c.rows;
                        op.args.cols = c.cols;
                        op.bias = b.T("bias");
                        op.x = b.T("x");
                        return runtime::Op(op);
                      })
                    .ok());
  }
}

TEST_F(ElementwiseTest, AdamWMatchesDeepSpeedMathExactly) {
  struct Case {
    int64_t n, step;
    float weight_decay;
    bool adamw_mode, bias_correction;
    float grad_scale;
  };
  const Case cases[] = {{1001, 1, 0.01f, true, true, 1.0f},
                        {1001, 10, 0.01f, false, true, 0.37f},
                        {100003, 3, 0.0f, true, true, 1.0f},
                        {17, 5, 0.1f, true, false, 2.5f}};
  for (const Case& c : cases) {
    OpHarness h;
    h.InOut("params", DType::kF32, RandomValues(c.n, 16), Tolerance::Exact());
    h.Input("grads", DType::kF32, RandomValues(c.n, 17, -0.1f, 0.1f));
    h.InOut("exp_avg", DType::kF32, RandomValues(c.n, 18, -0.01f, 0.01f),
            Tolerance::Exact());
    h.InOut("exp_avg_sq", DType::kF32, RandomValues(c.n, 19, 0.0f, 1e-3f),
            Tolerance::Exact());
    const std::string label =
        absl::StrCat("adamw n=", c.n, " step=", c.step, " wd=", c.weight_decay,
                     c.adamw_mode ? " adamw" : " l2",
                     c.bias_correction ? "" : " no-bias-correction",
                     " grad_scale=", c.grad_scale);
    ASSERT_TRUE(h.Run(*ctx_, label, [&](const OpHarness::Binder& b) {
                   ops::AdamW op;
                   op.args.n = c.n;
                   op.args.step = c.step;
                   op.args.lr = 1e-3f;
                   op.args.weight_decay = c.weight_decay;
                   op.args.adamw_mode = c.adamw_mode;
                   op.args.bias_correction = c.bias_correction;
                   op.args.grad_scale = c.grad_scale;
                   op.params = b.T("params");
                   op.grads = b.T("grads");
                   op.exp_avg = b.T("exp_avg");
                   op.exp_avg_sq = b.T("exp_avg_sq");
                   return runtime::Op(op);
                 }).ok());
  }
}

}  // namespace
}  // namespace testing
}  // namespace cuda
}  // namespace zero3
