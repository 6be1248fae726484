// Copyright 2026 The zero3 Authors.
//
// Reductions, RMSNorm and rotary embedding against the CPU reference.

#include <cmath>
#include <cstdio>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/kernels/test_util.h"
#include "core/kernels/dtype.h"
#include "core/runtime/kernel_call.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace cuda {
namespace testing {
namespace {

using kernels::DType;
using kernels::DTypeName;
namespace ops = runtime::ops;

class NormTest : public KernelTest {};

TEST_F(NormTest, SumSquaresIsADoubleSum) {
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (int64_t n :
         {int64_t{0}, int64_t{1}, int64_t{1001}, (int64_t{1} << 22) + 7}) {
      for (bool accumulate : {false, true}) {
        OpHarness h;
        h.Input("x", dtype, RandomValues(n, 20, -2.0f, 2.0f), n % 2);
        // [hi, lo] of a previous partial sum.
        const float hi = 12345.678f;
        const float lo = 1.0e-4f;
        h.InOut("out", DType::kF32, {hi, lo}, Tolerance::Any());
        const std::string label =
            absl::StrCat("sum_squares ", DTypeName(dtype), " n=", n,
                         accumulate ? " accumulate" : "");
        ASSERT_TRUE(h.Run(*ctx_, label, [&](const OpHarness::Binder& b) {
                       ops::SumSquares op;
                       op.args.n = n;
                       op.x = b.T("x");
                       op.out = b.T("out");
                       op.accumulate = accumulate;
                       return runtime::Op(op);
                     }).ok());
        const std::vector<float> got = h.DeviceResult("out");
        const std::vector<float> ref = h.HostResult("out");
        const double got_total = static_cast<double>(got[0]) + got[1];
        const double ref_total = static_cast<double>(ref[0]) + ref[1];
        std::printf("%-44s double total rel err %.3e\n", label.c_str(),
                    ref_total == 0 ? std::fabs(got_total)
                                   : std::fabs(got_total - ref_total) /
                                         std::fabs(ref_total));
        // Both sum in double, in different orders: over 4M terms that moves
        // the last bits (measured 1.3e-12 on an H200); an fp32 sum would be
        // off by 1e-7.
        EXPECT_NEAR(got_total, ref_total, 1e-10 * std::fabs(ref_total))
            << label;
        // hi is the double total rounded to float; lo the remainder.
        EXPECT_EQ(got[0], static_cast<float>(got_total)) << label;
      }
    }
  }
}

TEST_F(NormTest, BiasBackwardAccumulatesColumnSums) {
  struct Case {
    DType dy, d_bias;
    int64_t rows, cols;
  };
  const Case cases[] = {{DType::kF32, DType::kF32, 37, 13},
                        {DType::kBF16, DType::kF32, 300, 24},
                        {DType::kBF16, DType::kBF16, 3000, 1536},
                        {DType::kF32, DType::kF32, 1, 7},
                        {DType::kF32, DType::kF32, 70000, 5}};
  for (const Case& c : cases) {
    OpHarness h;
    h.Input("dy", c.dy, RandomValues(c.rows * c.cols, 21));
    h.InOut("d_bias", c.d_bias, RandomValues(c.cols, 22),
            Tolerance::For(c.d_bias));
    ASSERT_TRUE(
        h.Run(*ctx_,
              absl::StrCat("bias_bwd ", DTypeName(c.dy), "/",
                           DTypeName(c.d_bias), " ", c.rows, "x", c.cols),
              [&](const OpHarness::Binder& b) {
                ops::BiasBackward op;
                op.args.rows = c.rows;
                op.args.cols = c.cols;
                op.dy = b.T("dy");
                op.d_bias = b.T("d_bias");
                return runtime::Op(op);
              })
            .ok());
  }
}

struct NormCase {
  DType x, weight, rstd;
  int64_t rows, dim;
  bool in_place;
  // RmsNormArgs::weight_offset: 1 scales by (1 + weight), Gemma's RMSNorm,
  // whose weights are then near 0.
  float weight_offset = 0.0f;
};

constexpr NormCase kNormCases[] = {
    {DType::kF32, DType::kF32, DType::kF32, 7, 13, false},
    {DType::kF32, DType::kF32, DType::kF32, 33, 64, true},
    {DType::kBF16, DType::kBF16, DType::kF32, 300, 1536, false},
    {DType::kBF16, DType::kBF16, DType::kF32, 5, 100, true},
    {DType::kBF16, DType::kF32, DType::kBF16, 17, 40, false},
    {DType::kF16, DType::kF16, DType::kF32, 9, 256, false},
    {DType::kBF16, DType::kBF16, DType::kF32, 2048, 1536, false},
    {DType::kF32, DType::kF32, DType::kF32, 3, 20000, false},
    {DType::kF32, DType::kF32, DType::kF32, 7, 13, false, 1.0f},
    {DType::kF32, DType::kF32, DType::kF32, 33, 64, true, 1.0f},
    {DType::kBF16, DType::kBF16, DType::kF32, 300, 1536, false, 1.0f},
    {DType::kBF16, DType::kF32, DType::kBF16, 17, 40, false, 1.0f},
    {DType::kF16, DType::kF16, DType::kF32, 9, 256, true, 1.0f},
    {DType::kF32, DType::kF32, DType::kF32, 3, 20000, false, 1.0f},
};

// Weights around 1 for plain RMSNorm, around 0 for (1 + weight).
std::vector<float> NormWeights(const NormCase& c, uint32_t seed) {
  const float center = c.weight_offset == 0.0f ? 1.0f : 0.0f;
  return RandomValues(c.dim, seed, center - 0.5f, center + 0.5f);
}

std::string NormLabel(const char* what, const NormCase& c) {
  return absl::StrCat(
      what, " ", DTypeName(c.x), "/", DTypeName(c.weight), "/",
      DTypeName(c.rstd), " ", c.rows, "x", c.dim, c.in_place ? " in place" : "",
      c.weight_offset != 0.0f ? absl::StrCat(" weight_offset=", c.weight_offset)
                              : "");
}

TEST_F(NormTest, RmsNormForward) {
  for (const NormCase& c : kNormCases) {
    OpHarness h;
    const int64_t n = c.rows * c.dim;
    if (c.in_place) {
      h.InOut("x", c.x, RandomValues(n, 23, -3.0f, 3.0f), Tolerance::For(c.x));
    } else {
      h.Input("x", c.x, RandomValues(n, 23, -3.0f, 3.0f));
      h.Output("y", c.x, n, Tolerance::For(c.x));
    }
    h.Input("weight", c.weight, NormWeights(c, 24));
    h.Output("rstd", c.rstd, c.rows, Tolerance::For(c.rstd));
    ASSERT_TRUE(h.Run(*ctx_, NormLabel("rmsnorm fwd", c),
                      [&](const OpHarness::Binder& b) {
                        ops::RmsNormForward op;
                        op.args.rows = c.rows;
                        op.args.dim = c.dim;
                        op.args.eps = 1e-6f;
                        op.args.weight_offset = c.weight_offset;
                        op.x = b.T("x");
                        op.weight = b.T("weight");
                        op.y = b.T(c.in_place ? "x" : "y");
                        op.rstd = b.T("rstd");
                        return runtime::Op(op);
                      })
                    .ok());
  }
}

TEST_F(NormTest, RmsNormBackward) {
  for (const NormCase& c : kNormCases) {
    OpHarness h;
    const int64_t n = c.rows * c.dim;
    h.Input("x", c.x, RandomValues(n, 25, -3.0f, 3.0f));
    h.Input("weight", c.weight, NormWeights(c, 26));
    h.Input("rstd", c.rstd, RandomValues(c.rows, 27, 0.5f, 2.0f));
    if (c.in_place) {
      h.InOut("dy", c.x, RandomValues(n, 28), Tolerance::For(c.x));
    } else {
      h.Input("dy", c.x, RandomValues(n, 28));
      h.Output("dx", c.x, n, Tolerance::For(c.x));
    }
    // The weight gradient accumulates: start from a previous micro-batch.
    h.InOut("d_weight", c.weight, RandomValues(c.dim, 29),
            Tolerance::For(c.weight));
    ASSERT_TRUE(h.Run(*ctx_, NormLabel("rmsnorm bwd", c),
                      [&](const OpHarness::Binder& b) {
                        ops::RmsNormBackward op;
                        op.args.rows = c.rows;
                        op.args.dim = c.dim;
                        op.args.eps = 1e-6f;
                        op.args.weight_offset = c.weight_offset;
                        op.x = b.T("x");
                        op.weight = b.T("weight");
                        op.rstd = b.T("rstd");
                        op.dy = b.T("dy");
                        op.dx = b.T(c.in_place ? "dy" : "dx");
                        op.d_weight = b.T("d_weight");
                        return runtime::Op(op);
                      })
                    .ok());
  }
}

TEST_F(NormTest, Rotary) {
  struct Case {
    DType in, out;
    int64_t batch, seq, heads, head_dim;
    float theta;
    bool in_place;
    // > 0: packed documents, positions restarting every `doc` rows.
    int64_t doc = 0;
    // A frequency table (as the scaled RoPE types make one), an attention
    // scaling and a partial rotation (rotary_dim < head_dim).
    bool table = false;
    int64_t rotary_dim = 0;
  };
  const Case cases[] = {
      {DType::kF32, DType::kF32, 2, 37, 3, 16, 10000.0f, false},
      {DType::kF32, DType::kF32, 1, 2048, 2, 128, 1e6f, true},
      {DType::kBF16, DType::kBF16, 2, 100, 12, 128, 1e6f, true},
      {DType::kBF16, DType::kF32, 1, 9, 2, 6, 5e5f, false},
      {DType::kF16, DType::kF16, 3, 50, 2, 64, 1e4f, false},
      {DType::kF32, DType::kF32, 2, 37, 3, 16, 10000.0f, false, 7},
      {DType::kBF16, DType::kBF16, 2, 100, 12, 128, 1e6f, true, 33},
      {DType::kF32, DType::kF32, 2, 37, 3, 16, 10000.0f, false, 0, true, 8},
      {DType::kBF16, DType::kBF16, 1, 300, 4, 96, 1e4f, true, 0, true, 64},
      {DType::kBF16, DType::kBF16, 2, 100, 2, 128, 5e5f, false, 40, true},
  };
  for (const Case& c : cases) {
    for (bool backward : {false, true}) {
      OpHarness h;
      const int64_t n = c.batch * c.seq * c.heads * c.head_dim;
      if (c.in_place) {
        h.InOut("x", c.in, RandomValues(n, 30), Tolerance::For(c.in));
      } else {
        h.Input("x", c.in, RandomValues(n, 30));
        h.Output("y", c.out, n, Tolerance::For(c.out));
      }
      if (c.doc > 0) {
        std::vector<int32_t> positions(c.batch * c.seq);
        for (size_t i = 0; i < positions.size(); ++i) {
          positions[i] = static_cast<int32_t>((i % c.seq) % c.doc);
        }
        h.Ids("positions", positions);
      }
      const std::string label = absl::StrCat(
          backward ? "rotary bwd " : "rotary fwd ", DTypeName(c.in), "/",
          DTypeName(c.out), " b=", c.batch, " s=", c.seq, " h=", c.heads,
          " d=", c.head_dim, c.in_place ? " in place" : "",
          c.doc > 0 ? absl::StrCat(" packed every ", c.doc) : "",
          c.table ? " table" : "",
          c.rotary_dim > 0 ? absl::StrCat(" rotary_dim=", c.rotary_dim) : "");
      ASSERT_TRUE(h.Run(*ctx_, label, [&](const OpHarness::Binder& b) {
                     kernels::RotaryArgs args;
                     args.batch = c.batch;
                     args.seq = c.seq;
                     args.heads = c.heads;
                     args.head_dim = c.head_dim;
                     args.theta = c.theta;
                     args.rotary_dim = c.rotary_dim;
                     if (c.table) {
                       // Frequencies as llama3/yarn leave them: the low
                       // ones divided, and an attention scaling.
                       args.has_inv_freq = true;
                       args.attention_scaling = 1.125f;
                       const int64_t pairs = args.RotaryDim() / 2;
                       for (int64_t i = 0; i < pairs; ++i) {
                         const float f = std::pow(
                             c.theta, -2.0f * static_cast<float>(i) /
                                          static_cast<float>(args.RotaryDim()));
                         args.inv_freq[i] = i < pairs / 2 ? f : f / 8.0f;
                       }
                     }
                     const runtime::BufferSlice positions =
                         c.doc > 0 ? b.Ids("positions")
                                   : runtime::BufferSlice();
                     const runtime::TensorRef in = b.T("x");
                     const runtime::TensorRef out = b.T(c.in_place ? "x" : "y");
                     if (backward) {
                       ops::RotaryBackward op;
                       op.args = args;
                       op.dy = in;
                       op.dx = out;
                       op.positions = positions;
                       return runtime::Op(op);
                     }
                     ops::RotaryForward op;
                     op.args = args;
                     op.x = in;
                     op.y = out;
                     op.positions = positions;
                     return runtime::Op(op);
                   }).ok());
    }
  }
}

}  // namespace
}  // namespace testing
}  // namespace cuda
}  // namespace zero3
