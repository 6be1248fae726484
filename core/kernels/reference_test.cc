// Copyright 2026 The zero3 Authors.

#include "core/kernels/reference.h"

#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/kernels/dtype.h"
#include "core/kernels/kernel_test_util.h"
#include "core/kernels/op_args.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace kernels {
namespace {

using ::zero3::kernels::testing::ConvertVector;
using ::zero3::kernels::testing::MaxRelativeError;
using ::zero3::kernels::testing::NumericGradient;
using ::zero3::kernels::testing::RandomVector;
using ::zero3::kernels::testing::WeightedSum;

// Tolerances. Finite differences in double with h = 1e-5 are accurate to
// about 1e-9 relative on these O(1) functions; float against double to a few
// float ulps times the reduction length.
constexpr double kGradTolerance = 1e-6;
constexpr double kFloatTolerance = 1e-5;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

template <typename T>
double Loss(const std::vector<T>& out, const std::vector<double>& weights) {
  return WeightedSum(absl::MakeConstSpan(out), absl::MakeConstSpan(weights));
}

// ===========================================================================
// Matmul

// C = alpha * op(A) op(B) + beta * C by the textbook triple loop.
std::vector<double> NaiveMatmul(const MatmulArgs& args,
                                const std::vector<double>& a,
                                const std::vector<double>& b,
                                const std::vector<double>& c) {
  std::vector<double> result(args.m * args.n);
  for (int64_t i = 0; i < args.m; ++i) {
    for (int64_t j = 0; j < args.n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < args.k; ++p) {
        const double a_ip =
            args.trans_a ? a[p * args.m + i] : a[i * args.k + p];
        const double b_pj =
            args.trans_b ? b[j * args.k + p] : b[p * args.n + j];
        sum += a_ip * b_pj;
      }
      result[i * args.n + j] =
          args.alpha * sum +
          (args.beta == 0 ? 0.0 : args.beta * c[i * args.n + j]);
    }
  }
  return result;
}

TEST(MatmulTest, AllTransposeCombinationsMatchNaive) {
  for (bool trans_a : {false, true}) {
    for (bool trans_b : {false, true}) {
      MatmulArgs args;
      args.trans_a = trans_a;
      args.trans_b = trans_b;
      args.m = 5;
      args.n = 7;
      args.k = 3;
      args.alpha = 0.75f;
      args.beta = -0.5f;
      const auto a = RandomVector(args.m * args.k, 1);
      const auto b = RandomVector(args.k * args.n, 2);
      const auto c0 = RandomVector(args.m * args.n, 3);
      std::vector<double> c = c0;
      Matmul(args, a.data(), b.data(), c.data());
      EXPECT_LT(MaxRelativeError(c, NaiveMatmul(args, a, b, c0)), 1e-14)
          << "trans_a=" << trans_a << " trans_b=" << trans_b;

      std::vector<float> cf = ConvertVector<float>(c0);
      const auto af = ConvertVector<float>(a);
      const auto bf = ConvertVector<float>(b);
      Matmul(args, af.data(), bf.data(), cf.data());
      EXPECT_LT(MaxRelativeError(cf, c), kFloatTolerance);
    }
  }
}

TEST(MatmulTest, BetaZeroIgnoresNaNInOutput) {
  for (bool trans_b : {false, true}) {
    MatmulArgs args;
    args.trans_b = trans_b;
    args.m = 3;
    args.n = 4;
    args.k = 2;
    const auto a = RandomVector(args.m * args.k, 4);
    const auto b = RandomVector(args.k * args.n, 5);
    std::vector<double> c(args.m * args.n, kNaN);
    Matmul(args, a.data(), b.data(), c.data());
    for (double value : c) EXPECT_FALSE(std::isnan(value));
    EXPECT_LT(MaxRelativeError(c, NaiveMatmul(args, a, b, c)), 1e-14);
  }
}

TEST(MatmulTest, BetaOneAccumulates) {
  MatmulArgs args;
  args.m = 4;
  args.n = 3;
  args.k = 6;
  const auto a = RandomVector(args.m * args.k, 6);
  const auto b = RandomVector(args.k * args.n, 7);
  std::vector<double> once(args.m * args.n);
  Matmul(args, a.data(), b.data(), once.data());
  args.beta = 1.0f;
  std::vector<double> twice = once;
  Matmul(args, a.data(), b.data(), twice.data());
  for (size_t i = 0; i < once.size(); ++i) {
    EXPECT_NEAR(twice[i], 2 * once[i], 1e-14);
  }
}

TEST(MatmulTest, EmptyReductionScalesC) {
  MatmulArgs args;
  args.m = 2;
  args.n = 2;
  args.k = 0;
  args.beta = 0.5f;
  std::vector<double> c = {2, 4, 6, 8};
  Matmul<double>(args, nullptr, nullptr, c.data());
  EXPECT_THAT(c, ::testing::ElementsAre(1, 2, 3, 4));
}

// A linear layer y = x W^T + b and its backward through the three GEMMs of
// op_args.h and the bias kernels, against finite differences.
TEST(MatmulTest, LinearLayerGradientsMatchFiniteDifferences) {
  const int64_t rows = 5, in = 7, out = 4;
  auto x = RandomVector(rows * in, 10);
  auto w = RandomVector(out * in, 11);
  auto bias = RandomVector(out, 12);
  const auto r = RandomVector(rows * out, 13);
  BiasArgs bias_args;
  bias_args.rows = rows;
  bias_args.cols = out;
  auto forward = [&]() {
    std::vector<double> y(rows * out, kNaN);
    Matmul(LinearForwardArgs(rows, in, out), x.data(), w.data(), y.data());
    BiasAdd(bias_args, bias.data(), y.data());
    return Loss(y, r);
  };
  std::vector<double> dx(rows * in, kNaN);
  std::vector<double> dw(out * in, 0.25);  // accumulates onto 0.25
  std::vector<double> db(out, -0.5);       // accumulates onto -0.5
  Matmul(LinearBackwardInputArgs(rows, in, out), r.data(), w.data(), dx.data());
  Matmul(LinearBackwardWeightArgs(rows, in, out), r.data(), x.data(),
         dw.data());
  BiasBackward(bias_args, r.data(), db.data());
  for (double& v : dw) v -= 0.25;
  for (double& v : db) v += 0.5;
  EXPECT_LT(MaxRelativeError(dx, NumericGradient(forward, &x)), kGradTolerance);
  EXPECT_LT(MaxRelativeError(dw, NumericGradient(forward, &w)), kGradTolerance);
  EXPECT_LT(MaxRelativeError(db, NumericGradient(forward, &bias)),
            kGradTolerance);
}

TEST(MatmulTest, ModelSizedGemmFloatMatchesDouble) {
  // The shape the simulator's data mode runs most: 64 tokens through a
  // 256 x 256 projection, in each layout a linear layer uses.
  const int64_t rows = 64, dim = 256;
  const auto x = RandomVector(rows * dim, 14);
  const auto w = RandomVector(dim * dim, 15);
  const auto xf = ConvertVector<float>(x);
  const auto wf = ConvertVector<float>(w);
  for (const MatmulArgs& args :
       {LinearForwardArgs(rows, dim, dim),
        LinearBackwardInputArgs(rows, dim, dim),
        LinearBackwardWeightArgs(rows, dim, dim, 0.0f)}) {
    const int64_t c_size = args.m * args.n;
    std::vector<double> c(c_size);
    std::vector<float> cf(c_size);
    // For the weight gradient the operands are [rows, dim] and [rows, dim].
    const bool weight_grad = args.trans_a;
    Matmul(args, x.data(), weight_grad ? x.data() : w.data(), c.data());
    Matmul(args, xf.data(), weight_grad ? xf.data() : wf.data(), cf.data());
    EXPECT_LT(MaxRelativeError(cf, c), kFloatTolerance);
  }
}

TEST(MatmulDeathTest, NegativeShapeIsABug) {
  MatmulArgs args;
  args.m = -1;
  EXPECT_DEATH_IF_SUPPORTED(Matmul<float>(args, nullptr, nullptr, nullptr),
                            "m must be non-negative");
}

// ===========================================================================
// Embedding

TEST(EmbeddingTest, ForwardCopiesRows) {
  EmbeddingArgs args;
  args.num_tokens = 4;
  args.vocab_size = 3;
  args.dim = 2;
  const std::vector<int32_t> tokens = {2, 0, 2, 1};
  const std::vector<float> table = {0, 1, 10, 11, 20, 21};
  std::vector<float> out(8);
  EmbeddingForward(args, tokens.data(), table.data(), out.data());
  EXPECT_THAT(out, ::testing::ElementsAre(20, 21, 0, 1, 20, 21, 10, 11));
}

TEST(EmbeddingTest, BackwardAccumulatesRepeatedTokens) {
  EmbeddingArgs args;
  args.num_tokens = 4;
  args.vocab_size = 3;
  args.dim = 2;
  const std::vector<int32_t> tokens = {2, 0, 2, 2};
  const std::vector<double> d_out = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<double> d_table = {100, 100, 100, 100, 100, 100};
  EmbeddingBackward(args, tokens.data(), d_out.data(), d_table.data());
  // Token 1 never appears; token 2 appears three times.
  EXPECT_THAT(d_table, ::testing::ElementsAre(103, 104, 100, 100, 113, 116));
}

TEST(EmbeddingTest, BackwardMatchesFiniteDifferences) {
  EmbeddingArgs args;
  args.num_tokens = 10;
  args.vocab_size = 11;
  args.dim = 7;
  const std::vector<int32_t> tokens = {3, 0, 10, 3, 5, 5, 5, 1, 9, 3};
  auto table = RandomVector(args.vocab_size * args.dim, 20);
  const auto r = RandomVector(args.num_tokens * args.dim, 21);
  auto forward = [&]() {
    std::vector<double> out(args.num_tokens * args.dim);
    EmbeddingForward(args, tokens.data(), table.data(), out.data());
    return Loss(out, r);
  };
  std::vector<double> d_table(table.size(), 0.0);
  EmbeddingBackward(args, tokens.data(), r.data(), d_table.data());
  EXPECT_LT(MaxRelativeError(d_table, NumericGradient(forward, &table)),
            kGradTolerance);
}

TEST(EmbeddingDeathTest, TokenOutOfRangeIsABug) {
  EmbeddingArgs args;
  args.num_tokens = 1;
  args.vocab_size = 3;
  args.dim = 1;
  const int32_t token = 3;
  float table[3] = {};
  float out[1];
  EXPECT_DEATH_IF_SUPPORTED(EmbeddingForward(args, &token, table, out),
                            "token 3 at 0 outside \\[0, 3\\)");
  const int32_t negative = -1;
  EXPECT_DEATH_IF_SUPPORTED(EmbeddingBackward(args, &negative, out, table),
                            "outside");
}

// ===========================================================================
// Bias

TEST(BiasTest, AddAndColumnSums) {
  BiasArgs args;
  args.rows = 2;
  args.cols = 3;
  std::vector<double> x = {1, 2, 3, 4, 5, 6};
  const std::vector<double> bias = {10, 20, 30};
  BiasAdd(args, bias.data(), x.data());
  EXPECT_THAT(x, ::testing::ElementsAre(11, 22, 33, 14, 25, 36));
  std::vector<double> d_bias = {1, 1, 1};
  BiasBackward(args, x.data(), d_bias.data());
  EXPECT_THAT(d_bias, ::testing::ElementsAre(26, 48, 70));
}

// ===========================================================================
// RMSNorm

TEST(RmsNormTest, ForwardByHand) {
  RmsNormArgs args;
  args.rows = 2;
  args.dim = 4;
  args.eps = 0.5f;
  const std::vector<double> x = {1, 2, 3, 4, 0, 0, 0, 0};
  const std::vector<double> w = {1, 2, 0.5, -1};
  std::vector<double> y(8), rstd(2);
  RmsNormForward(args, x.data(), w.data(), y.data(), rstd.data());
  // Row 0: mean(x^2) = 30 / 4 = 7.5; rstd = 1 / sqrt(8). Row 1: 1/sqrt(0.5).
  const double r0 = 1 / std::sqrt(8.0);
  EXPECT_DOUBLE_EQ(rstd[0], r0);
  EXPECT_DOUBLE_EQ(rstd[1], 1 / std::sqrt(0.5));
  EXPECT_DOUBLE_EQ(y[0], 1 * r0 * 1);
  EXPECT_DOUBLE_EQ(y[1], 2 * r0 * 2);
  EXPECT_DOUBLE_EQ(y[2], 3 * r0 * 0.5);
  EXPECT_DOUBLE_EQ(y[3], 4 * r0 * -1);
  for (int i = 4; i < 8; ++i) EXPECT_EQ(y[i], 0);
}

TEST(RmsNormTest, BackwardMatchesFiniteDifferences) {
  RmsNormArgs args;
  args.rows = 5;
  args.dim = 7;
  args.eps = 1e-6f;
  auto x = RandomVector(args.rows * args.dim, 30);
  auto w = RandomVector(args.dim, 31, 0.5, 1.5);
  const auto r = RandomVector(args.rows * args.dim, 32);
  auto forward = [&]() {
    std::vector<double> y(x.size()), rstd(args.rows);
    RmsNormForward(args, x.data(), w.data(), y.data(), rstd.data());
    return Loss(y, r);
  };
  std::vector<double> y(x.size()), rstd(args.rows);
  RmsNormForward(args, x.data(), w.data(), y.data(), rstd.data());
  std::vector<double> dx(x.size(), kNaN);
  std::vector<double> dw(args.dim, 1.0);  // accumulates onto 1
  RmsNormBackward(args, x.data(), w.data(), rstd.data(), r.data(), dx.data(),
                  dw.data());
  for (double& v : dw) v -= 1.0;
  EXPECT_LT(MaxRelativeError(dx, NumericGradient(forward, &x)), kGradTolerance);
  EXPECT_LT(MaxRelativeError(dw, NumericGradient(forward, &w)), kGradTolerance);
}

// Gemma's RMSNorm scales by (1 + weight): the same as weight + 1 without
// the offset, and its gradients are those of that function.
TEST(RmsNormTest, UnitOffsetScalesByOnePlusWeight) {
  RmsNormArgs args;
  args.rows = 5;
  args.dim = 7;
  args.weight_offset = 1.0f;
  auto x = RandomVector(args.rows * args.dim, 33);
  auto w = RandomVector(args.dim, 34, -0.5, 0.5);
  const auto r = RandomVector(args.rows * args.dim, 35);
  std::vector<double> y(x.size()), rstd(args.rows);
  RmsNormForward(args, x.data(), w.data(), y.data(), rstd.data());
  RmsNormArgs plain = args;
  plain.weight_offset = 0;
  std::vector<double> w1 = w, y1(x.size()), rstd1(args.rows);
  for (double& v : w1) v += 1;
  RmsNormForward(plain, x.data(), w1.data(), y1.data(), rstd1.data());
  EXPECT_LT(MaxRelativeError(y, y1), 1e-15);
  auto forward = [&]() {
    std::vector<double> yy(x.size()), rr(args.rows);
    RmsNormForward(args, x.data(), w.data(), yy.data(), rr.data());
    return Loss(yy, r);
  };
  std::vector<double> dx(x.size(), kNaN), dw(args.dim, 0.0);
  RmsNormBackward(args, x.data(), w.data(), rstd.data(), r.data(), dx.data(),
                  dw.data());
  EXPECT_LT(MaxRelativeError(dx, NumericGradient(forward, &x)), kGradTolerance);
  EXPECT_LT(MaxRelativeError(dw, NumericGradient(forward, &w)), kGradTolerance);
}

TEST(RmsNormTest, InPlaceMatchesOutOfPlace) {
  RmsNormArgs args;
  args.rows = 3;
  args.dim = 5;
  const auto x = RandomVector(args.rows * args.dim, 33);
  const auto w = RandomVector(args.dim, 34);
  const auto dy = RandomVector(args.rows * args.dim, 35);
  std::vector<double> y(x.size()), rstd(args.rows);
  RmsNormForward(args, x.data(), w.data(), y.data(), rstd.data());
  std::vector<double> in_place = x;
  RmsNormForward(args, in_place.data(), w.data(), in_place.data(), rstd.data());
  EXPECT_EQ(in_place, y);
  std::vector<double> dx(x.size()), dw(args.dim), dw2(args.dim);
  RmsNormBackward(args, x.data(), w.data(), rstd.data(), dy.data(), dx.data(),
                  dw.data());
  std::vector<double> dx_in_place = dy;
  RmsNormBackward(args, x.data(), w.data(), rstd.data(), dx_in_place.data(),
                  dx_in_place.data(), dw2.data());
  EXPECT_EQ(dx_in_place, dx);
  EXPECT_EQ(dw2, dw);
}

TEST(RmsNormTest, FloatMatchesDouble) {
  RmsNormArgs args;
  args.rows = 5;
  args.dim = 64;
  const auto x = RandomVector(args.rows * args.dim, 36);
  const auto w = RandomVector(args.dim, 37);
  const auto dy = RandomVector(args.rows * args.dim, 38);
  std::vector<double> y(x.size()), rstd(args.rows), dx(x.size()), dw(args.dim);
  RmsNormForward(args, x.data(), w.data(), y.data(), rstd.data());
  RmsNormBackward(args, x.data(), w.data(), rstd.data(), dy.data(), dx.data(),
                  dw.data());
  const auto xf = ConvertVector<float>(x), wf = ConvertVector<float>(w),
             dyf = ConvertVector<float>(dy);
  std::vector<float> yf(x.size()), rstdf(args.rows), dxf(x.size()),
      dwf(args.dim);
  RmsNormForward(args, xf.data(), wf.data(), yf.data(), rstdf.data());
  RmsNormBackward(args, xf.data(), wf.data(), rstdf.data(), dyf.data(),
                  dxf.data(), dwf.data());
  EXPECT_LT(MaxRelativeError(yf, y), kFloatTolerance);
  EXPECT_LT(MaxRelativeError(rstdf, rstd), kFloatTolerance);
  EXPECT_LT(MaxRelativeError(dxf, dx), kFloatTolerance);
  EXPECT_LT(MaxRelativeError(dwf, dw), kFloatTolerance);
}

// ===========================================================================
// Rotary

RotaryArgs SmallRotary() {
  RotaryArgs args;
  args.batch = 2;
  args.seq = 5;
  args.heads = 3;
  args.head_dim = 6;
  args.theta = 1e6f;
  return args;
}

TEST(RotaryTest, ForwardMatchesComplexRotation) {
  // rotate_half pairs element i with i + head_dim/2 and multiplies the
  // complex number (x[i], x[i + half]) by exp(i * p * theta^(-2i/D)); the
  // position restarts at 0 in every batch.
  const RotaryArgs args = SmallRotary();
  const int64_t half = args.head_dim / 2;
  const auto x =
      RandomVector(args.batch * args.seq * args.heads * args.head_dim, 40);
  std::vector<double> y(x.size());
  RotaryForward(args, x.data(), y.data());
  for (int64_t b = 0; b < args.batch; ++b) {
    for (int64_t s = 0; s < args.seq; ++s) {
      for (int64_t h = 0; h < args.heads; ++h) {
        const int64_t base =
            ((b * args.seq + s) * args.heads + h) * args.head_dim;
        for (int64_t i = 0; i < half; ++i) {
          const double freq = 1.0 / std::pow(1e6, (2.0 * i) / args.head_dim);
          const std::complex<double> z(x[base + i], x[base + i + half]);
          const std::complex<double> rotated = z * std::polar(1.0, s * freq);
          EXPECT_NEAR(y[base + i], rotated.real(), 1e-15);
          EXPECT_NEAR(y[base + i + half], rotated.imag(), 1e-15);
        }
      }
    }
  }
  // Position 0 is the identity.
  for (int64_t i = 0; i < args.heads * args.head_dim; ++i) {
    EXPECT_EQ(y[i], x[i]);
  }
}

TEST(RotaryTest, BackwardInvertsForward) {
  const RotaryArgs args = SmallRotary();
  const auto x =
      RandomVector(args.batch * args.seq * args.heads * args.head_dim, 41);
  std::vector<double> y(x.size()), back(x.size());
  RotaryForward(args, x.data(), y.data());
  RotaryBackward(args, y.data(), back.data());
  EXPECT_LT(MaxRelativeError(back, x), 1e-15);
  // In place, in float.
  std::vector<float> xf = ConvertVector<float>(x);
  RotaryForward(args, xf.data(), xf.data());
  RotaryBackward(args, xf.data(), xf.data());
  EXPECT_LT(MaxRelativeError(xf, x), 1e-6);
}

TEST(RotaryTest, BackwardMatchesFiniteDifferences) {
  RotaryArgs args = SmallRotary();
  args.theta = 10000.0f;
  auto x = RandomVector(args.batch * args.seq * args.heads * args.head_dim, 42);
  const auto r = RandomVector(x.size(), 43);
  auto forward = [&]() {
    std::vector<double> y(x.size());
    RotaryForward(args, x.data(), y.data());
    return Loss(y, r);
  };
  std::vector<double> dx(x.size());
  RotaryBackward(args, r.data(), dx.data());
  EXPECT_LT(MaxRelativeError(dx, NumericGradient(forward, &x)), kGradTolerance);
}

TEST(RotaryTest, FloatMatchesDouble) {
  const RotaryArgs args = SmallRotary();
  const auto x =
      RandomVector(args.batch * args.seq * args.heads * args.head_dim, 44);
  std::vector<double> y(x.size());
  RotaryForward(args, x.data(), y.data());
  const auto xf = ConvertVector<float>(x);
  std::vector<float> yf(x.size());
  RotaryForward(args, xf.data(), yf.data());
  EXPECT_LT(MaxRelativeError(yf, y), kFloatTolerance);
}

TEST(RotaryDeathTest, OddHeadDimIsABug) {
  RotaryArgs args = SmallRotary();
  args.head_dim = 5;
  EXPECT_DEATH_IF_SUPPORTED(RotaryForward<float>(args, nullptr, nullptr),
                            "head_dim must be even");
}

// ===========================================================================
// Attention

AttentionArgs SmallAttention(bool causal) {
  AttentionArgs args;
  args.batch = 2;
  args.seq = 5;
  args.num_heads = 4;
  args.num_kv_heads = 2;
  args.head_dim = 6;
  args.causal = causal;
  return args;
}

struct AttentionInputs {
  std::vector<double> q, k, v;
};

AttentionInputs RandomAttentionInputs(const AttentionArgs& args,
                                      uint32_t seed) {
  const int64_t tokens = args.batch * args.seq;
  return {RandomVector(tokens * args.num_heads * args.head_dim, seed),
          RandomVector(tokens * args.num_kv_heads * args.head_dim, seed + 1),
          RandomVector(tokens * args.num_kv_heads * args.head_dim, seed + 2)};
}

// Attention the explicit way: repeat the kv heads, build the full
// [seq, seq] score matrix per (batch, head), mask, softmax, multiply by V.
void NaiveAttention(const AttentionArgs& args, const AttentionInputs& in,
                    std::vector<double>* out, std::vector<double>* lse) {
  const int64_t S = args.seq, Hq = args.num_heads, Hkv = args.num_kv_heads,
                D = args.head_dim;
  out->assign(args.batch * S * Hq * D, 0.0);
  lse->assign(args.batch * Hq * S, 0.0);
  for (int64_t b = 0; b < args.batch; ++b) {
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t g = h * Hkv / Hq;
      std::vector<std::vector<double>> p(S, std::vector<double>(S, 0.0));
      for (int64_t i = 0; i < S; ++i) {
        double sum = 0;
        for (int64_t j = 0; j < S; ++j) {
          if (args.causal && j > i) continue;
          if (args.window > 0 && j <= i - args.window) continue;
          double s = 0;
          for (int64_t d = 0; d < D; ++d) {
            s += in.q[((b * S + i) * Hq + h) * D + d] *
                 in.k[((b * S + j) * Hkv + g) * D + d];
          }
          s *= args.scale > 0 ? args.scale : 1 / std::sqrt(double(D));
          if (args.softcap > 0) s = args.softcap * std::tanh(s / args.softcap);
          p[i][j] = std::exp(s);
          sum += p[i][j];
        }
        (*lse)[(b * Hq + h) * S + i] = std::log(sum);
        for (int64_t j = 0; j < S; ++j) p[i][j] /= sum;
      }
      for (int64_t i = 0; i < S; ++i) {
        for (int64_t d = 0; d < D; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < S; ++j) {
            acc += p[i][j] * in.v[((b * S + j) * Hkv + g) * D + d];
          }
          (*out)[((b * S + i) * Hq + h) * D + d] = acc;
        }
      }
    }
  }
}

// Forward equals the explicit softmax (NaiveAttention), and backward is the
// forward's gradient (finite differences, loss weights from `seed`).
// Returns the forward's output.
std::vector<double> ExpectExplicitSoftmaxAndItsGradient(
    const AttentionArgs& args, AttentionInputs in, uint32_t seed) {
  const int64_t lse_size = args.batch * args.num_heads * args.seq;
  std::vector<double> out(in.q.size()), lse(lse_size);
  AttentionForward(args, in.q.data(), in.k.data(), in.v.data(), out.data(),
                   lse.data());
  std::vector<double> want_out, want_lse;
  NaiveAttention(args, in, &want_out, &want_lse);
  EXPECT_LT(MaxRelativeError(out, want_out), 1e-14);
  EXPECT_LT(MaxRelativeError(lse, want_lse), 1e-14);
  const auto r = RandomVector(in.q.size(), seed);
  auto forward = [&]() {
    std::vector<double> o(in.q.size()), l(lse_size);
    AttentionForward(args, in.q.data(), in.k.data(), in.v.data(), o.data(),
                     l.data());
    return Loss(o, r);
  };
  std::vector<double> dq(in.q.size(), kNaN), dk(in.k.size(), kNaN),
      dv(in.v.size(), kNaN);
  AttentionBackward(args, in.q.data(), in.k.data(), in.v.data(), out.data(),
                    lse.data(), r.data(), dq.data(), dk.data(), dv.data());
  EXPECT_LT(MaxRelativeError(dq, NumericGradient(forward, &in.q)),
            kGradTolerance);
  EXPECT_LT(MaxRelativeError(dk, NumericGradient(forward, &in.k)),
            kGradTolerance);
  EXPECT_LT(MaxRelativeError(dv, NumericGradient(forward, &in.v)),
            kGradTolerance);
  return out;
}

class AttentionTest : public ::testing::TestWithParam<bool> {};

TEST_P(AttentionTest, ForwardMatchesExplicitSoftmax) {
  const AttentionArgs args = SmallAttention(GetParam());
  const AttentionInputs in = RandomAttentionInputs(args, 50);
  std::vector<double> out(in.q.size()),
      lse(args.batch * args.num_heads * args.seq);
  AttentionForward(args, in.q.data(), in.k.data(), in.v.data(), out.data(),
                   lse.data());
  std::vector<double> expected_out, expected_lse;
  NaiveAttention(args, in, &expected_out, &expected_lse);
  EXPECT_LT(MaxRelativeError(out, expected_out), 1e-14);
  EXPECT_LT(MaxRelativeError(lse, expected_lse), 1e-14);
}

TEST_P(AttentionTest, BackwardMatchesFiniteDifferences) {
  const AttentionArgs args = SmallAttention(GetParam());
  ExpectExplicitSoftmaxAndItsGradient(args, RandomAttentionInputs(args, 51),
                                      54);
}

// A sliding window of 2: each query sees itself and the key before it, as
// the explicit softmax masks them; backward is the forward's gradient.
TEST(WindowedAttentionTest, MatchesTheExplicitSoftmaxAndItsGradient) {
  AttentionArgs args = SmallAttention(true);
  args.window = 2;
  ExpectExplicitSoftmaxAndItsGradient(args, RandomAttentionInputs(args, 70),
                                      71);
}

// Gemma 2's attention: a scale of its own, scores capped by tanh, with and
// without a window: the explicit softmax of the capped scores, and backward
// is the forward's gradient. The cap binds: the inputs give scores past it.
TEST(SoftcappedAttentionTest, MatchesTheExplicitSoftmaxAndItsGradient) {
  for (const int64_t window : {int64_t{0}, int64_t{3}}) {
    AttentionArgs args = SmallAttention(true);
    args.window = window;
    args.scale = 0.7f;
    args.softcap = 1.5f;
    AttentionInputs in = RandomAttentionInputs(args, 90);
    for (double& x : in.q) x *= 2;
    const std::vector<double> out =
        ExpectExplicitSoftmaxAndItsGradient(args, in, 91);
    AttentionArgs uncapped = args;
    uncapped.softcap = 0;
    std::vector<double> out_uncapped(in.q.size()),
        lse(args.batch * args.num_heads * args.seq);
    AttentionForward(uncapped, in.q.data(), in.k.data(), in.v.data(),
                     out_uncapped.data(), lse.data());
    EXPECT_GT(MaxRelativeError(out_uncapped, out), 1e-2) << "cap never binds";
  }
}

// Packed documents: batch 0 holds two (3 and 2 tokens), batch 1 one (5):
// each document's rows equal attention over that document alone, and the
// backward pass is the forward's gradient.
const std::vector<int32_t>& PackedPositions() {
  static const auto* p = new std::vector<int32_t>{0, 1, 2, 0, 1, 0, 1, 2, 3, 4};
  return *p;
}

TEST(PackedAttentionTest, DocumentsAttendOnlyWithinThemselves) {
  const AttentionArgs args = SmallAttention(true);
  const AttentionInputs in = RandomAttentionInputs(args, 60);
  const int64_t Hq = args.num_heads, Hkv = args.num_kv_heads, D = args.head_dim,
                S = args.seq;
  std::vector<double> out(in.q.size()), lse(args.batch * Hq * S);
  AttentionForward(args, in.q.data(), in.k.data(), in.v.data(), out.data(),
                   lse.data(), PackedPositions().data());
  struct Doc {
    int64_t b, start, len;
  };
  for (const Doc& doc : {Doc{0, 0, 3}, Doc{0, 3, 2}, Doc{1, 0, 5}}) {
    AttentionArgs one = args;
    one.batch = 1;
    one.seq = doc.len;
    AttentionInputs part;
    auto rows = [&](const std::vector<double>& from, int64_t heads) {
      const int64_t first = (doc.b * S + doc.start) * heads * D;
      return std::vector<double>(from.begin() + first,
                                 from.begin() + first + doc.len * heads * D);
    };
    part.q = rows(in.q, Hq);
    part.k = rows(in.k, Hkv);
    part.v = rows(in.v, Hkv);
    std::vector<double> want_out, want_lse;
    NaiveAttention(one, part, &want_out, &want_lse);
    EXPECT_LT(MaxRelativeError(rows(out, Hq), want_out), 1e-14)
        << "document at " << doc.b << ":" << doc.start;
    for (int64_t h = 0; h < Hq; ++h) {
      for (int64_t i = 0; i < doc.len; ++i) {
        EXPECT_NEAR(lse[(doc.b * Hq + h) * S + doc.start + i],
                    want_lse[h * doc.len + i], 1e-12);
      }
    }
  }
}

TEST(PackedAttentionTest, BackwardMatchesFiniteDifferences) {
  const AttentionArgs args = SmallAttention(true);
  AttentionInputs in = RandomAttentionInputs(args, 61);
  const auto r = RandomVector(in.q.size(), 64);
  const int64_t lse_size = args.batch * args.num_heads * args.seq;
  const int32_t* positions = PackedPositions().data();
  auto forward = [&]() {
    std::vector<double> out(in.q.size()), lse(lse_size);
    AttentionForward(args, in.q.data(), in.k.data(), in.v.data(), out.data(),
                     lse.data(), positions);
    return Loss(out, r);
  };
  std::vector<double> out(in.q.size()), lse(lse_size);
  AttentionForward(args, in.q.data(), in.k.data(), in.v.data(), out.data(),
                   lse.data(), positions);
  std::vector<double> dq(in.q.size(), kNaN), dk(in.k.size(), kNaN),
      dv(in.v.size(), kNaN);
  AttentionBackward(args, in.q.data(), in.k.data(), in.v.data(), out.data(),
                    lse.data(), r.data(), dq.data(), dk.data(), dv.data(),
                    positions);
  EXPECT_LT(MaxRelativeError(dq, NumericGradient(forward, &in.q)),
            kGradTolerance);
  EXPECT_LT(MaxRelativeError(dk, NumericGradient(forward, &in.k)),
            kGradTolerance);
  EXPECT_LT(MaxRelativeError(dv, NumericGradient(forward, &in.v)),
            kGradTolerance);
}

// Positions restart with each document: its rows rotate as if alone.
TEST(PackedRotaryTest, EachDocumentRotatesFromPositionZero) {
  RotaryArgs args = SmallRotary();
  args.batch = 2;
  args.seq = 5;
  const int64_t width = args.heads * args.head_dim;
  const auto x = RandomVector(args.batch * args.seq * width, 62);
  std::vector<double> y(x.size());
  RotaryForward(args, x.data(), y.data(), PackedPositions().data());
  // The second document of batch 0 (rows 3-4) alone, at positions 0-1.
  RotaryArgs alone = args;
  alone.batch = 1;
  alone.seq = 2;
  const std::vector<double> part(x.begin() + 3 * width, x.begin() + 5 * width);
  std::vector<double> want(part.size());
  RotaryForward(alone, part.data(), want.data());
  EXPECT_EQ(std::vector<double>(y.begin() + 3 * width, y.begin() + 5 * width),
            want);
  std::vector<double> back(x.size());
  RotaryBackward(args, y.data(), back.data(), PackedPositions().data());
  EXPECT_LT(MaxRelativeError(back, x), 1e-14);
}

TEST_P(AttentionTest, FloatMatchesDouble) {
  const AttentionArgs args = SmallAttention(GetParam());
  const AttentionInputs in = RandomAttentionInputs(args, 55);
  const auto d_out = RandomVector(in.q.size(), 58);
  const int64_t lse_size = args.batch * args.num_heads * args.seq;
  std::vector<double> out(in.q.size()), lse(lse_size), dq(in.q.size()),
      dk(in.k.size()), dv(in.v.size());
  AttentionForward(args, in.q.data(), in.k.data(), in.v.data(), out.data(),
                   lse.data());
  AttentionBackward(args, in.q.data(), in.k.data(), in.v.data(), out.data(),
                    lse.data(), d_out.data(), dq.data(), dk.data(), dv.data());
  const auto qf = ConvertVector<float>(in.q), kf = ConvertVector<float>(in.k),
             vf = ConvertVector<float>(in.v),
             d_outf = ConvertVector<float>(d_out);
  std::vector<float> outf(in.q.size()), lsef(lse_size), dqf(in.q.size()),
      dkf(in.k.size()), dvf(in.v.size());
  AttentionForward(args, qf.data(), kf.data(), vf.data(), outf.data(),
                   lsef.data());
  AttentionBackward(args, qf.data(), kf.data(), vf.data(), outf.data(),
                    lsef.data(), d_outf.data(), dqf.data(), dkf.data(),
                    dvf.data());
  EXPECT_LT(MaxRelativeError(outf, out), kFloatTolerance);
  EXPECT_LT(MaxRelativeError(lsef, lse), kFloatTolerance);
  EXPECT_LT(MaxRelativeError(dqf, dq), kFloatTolerance);
  EXPECT_LT(MaxRelativeError(dkf, dk), kFloatTolerance);
  EXPECT_LT(MaxRelativeError(dvf, dv), kFloatTolerance);
}

INSTANTIATE_TEST_SUITE_P(CausalAndFull, AttentionTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Causal" : "Full";
                         });

TEST(AttentionHeadsTest, MultiHeadAndMultiQueryMatchNaive) {
  for (int64_t kv_heads : {1, 2, 4}) {
    AttentionArgs args = SmallAttention(true);
    args.num_kv_heads = kv_heads;
    AttentionInputs in = RandomAttentionInputs(args, 60);
    std::vector<double> out(in.q.size()),
        lse(args.batch * args.num_heads * args.seq);
    AttentionForward(args, in.q.data(), in.k.data(), in.v.data(), out.data(),
                     lse.data());
    std::vector<double> expected_out, expected_lse;
    NaiveAttention(args, in, &expected_out, &expected_lse);
    EXPECT_LT(MaxRelativeError(out, expected_out), 1e-14) << kv_heads;
    const auto r = RandomVector(in.q.size(), 61);
    auto forward = [&]() {
      std::vector<double> o(in.q.size()), l(lse.size());
      AttentionForward(args, in.q.data(), in.k.data(), in.v.data(), o.data(),
                       l.data());
      return Loss(o, r);
    };
    std::vector<double> dq(in.q.size()), dk(in.k.size()), dv(in.v.size());
    AttentionBackward(args, in.q.data(), in.k.data(), in.v.data(), out.data(),
                      lse.data(), r.data(), dq.data(), dk.data(), dv.data());
    EXPECT_LT(MaxRelativeError(dk, NumericGradient(forward, &in.k)),
              kGradTolerance)
        << kv_heads;
  }
}

TEST(AttentionHeadsTest, FirstCausalRowCopiesFirstValue) {
  // Query 0 sees only key 0: its output is v[0] of its kv head and its lse is
  // its single score.
  const AttentionArgs args = SmallAttention(true);
  const AttentionInputs in = RandomAttentionInputs(args, 62);
  std::vector<double> out(in.q.size()),
      lse(args.batch * args.num_heads * args.seq);
  AttentionForward(args, in.q.data(), in.k.data(), in.v.data(), out.data(),
                   lse.data());
  const int64_t D = args.head_dim;
  for (int64_t h = 0; h < args.num_heads; ++h) {
    const int64_t g = h / 2;
    for (int64_t d = 0; d < D; ++d) {
      EXPECT_DOUBLE_EQ(out[h * D + d], in.v[g * D + d]);
    }
  }
}

TEST(AttentionHeadsTest, LargeScoresStayFinite) {
  // Scores around 1e4 would overflow exp() without the max subtraction.
  AttentionArgs args = SmallAttention(true);
  AttentionInputs in = RandomAttentionInputs(args, 63);
  for (double& value : in.q) value *= 300;
  for (double& value : in.k) value *= 300;
  auto qf = ConvertVector<float>(in.q), kf = ConvertVector<float>(in.k),
       vf = ConvertVector<float>(in.v);
  std::vector<float> out(in.q.size()),
      lse(args.batch * args.num_heads * args.seq);
  AttentionForward(args, qf.data(), kf.data(), vf.data(), out.data(),
                   lse.data());
  std::vector<float> dq(in.q.size()), dk(in.k.size()), dv(in.v.size());
  AttentionBackward(args, qf.data(), kf.data(), vf.data(), out.data(),
                    lse.data(), out.data(), dq.data(), dk.data(), dv.data());
  ReduceArgs reduce;
  reduce.n = static_cast<int64_t>(out.size());
  EXPECT_TRUE(AllFinite(reduce, out.data()));
  EXPECT_TRUE(AllFinite(reduce, dq.data()));
  reduce.n = static_cast<int64_t>(dk.size());
  EXPECT_TRUE(AllFinite(reduce, dk.data()));
  EXPECT_TRUE(AllFinite(reduce, dv.data()));
  reduce.n = static_cast<int64_t>(lse.size());
  EXPECT_TRUE(AllFinite(reduce, lse.data()));
}

TEST(AttentionDeathTest, HeadsNotAMultipleOfKvHeadsIsABug) {
  AttentionArgs args = SmallAttention(true);
  args.num_kv_heads = 3;
  EXPECT_DEATH_IF_SUPPORTED(AttentionForward<float>(args, nullptr, nullptr,
                                                    nullptr, nullptr, nullptr),
                            "num_heads must be a multiple of num_kv_heads");
}

// ===========================================================================
// SwiGLU

TEST(SwigluTest, ForwardByHand) {
  SwigluArgs args;
  args.n = 3;
  const std::vector<double> gate = {0, 2, -1};
  const std::vector<double> up = {5, 3, -2};
  std::vector<double> h(3);
  SwigluForward(args, gate.data(), up.data(), h.data());
  EXPECT_DOUBLE_EQ(h[0], 0);
  EXPECT_DOUBLE_EQ(h[1], 2 / (1 + std::exp(-2.0)) * 3);
  EXPECT_DOUBLE_EQ(h[2], -1 / (1 + std::exp(1.0)) * -2);
}

// The gated activation's backward is its forward's gradient (finite
// differences of the loss with weights `r`); returns d_gate.
std::vector<double> ExpectGluGradients(const SwigluArgs& args,
                                       std::vector<double> gate,
                                       std::vector<double> up,
                                       const std::vector<double>& r) {
  auto forward = [&]() {
    std::vector<double> h(args.n);
    SwigluForward(args, gate.data(), up.data(), h.data());
    return Loss(h, r);
  };
  std::vector<double> d_gate(args.n, kNaN), d_up(args.n, kNaN);
  SwigluBackward(args, gate.data(), up.data(), r.data(), d_gate.data(),
                 d_up.data());
  EXPECT_LT(MaxRelativeError(d_gate, NumericGradient(forward, &gate)),
            kGradTolerance);
  EXPECT_LT(MaxRelativeError(d_up, NumericGradient(forward, &up)),
            kGradTolerance);
  return d_gate;
}

TEST(SwigluTest, BackwardMatchesFiniteDifferences) {
  SwigluArgs args;
  args.n = 35;
  ExpectGluGradients(args, RandomVector(args.n, 70, -4, 4),
                     RandomVector(args.n, 71), RandomVector(args.n, 72));
}

TEST(SwigluTest, ExtremeGatesStayFinite) {
  SwigluArgs args;
  args.n = 4;
  const std::vector<float> gate = {-1000, 1000, -100, 100};
  const std::vector<float> up = {1, 1, 1, 1};
  const std::vector<float> dh = {1, 1, 1, 1};
  std::vector<float> h(4), d_gate(4), d_up(4);
  SwigluForward(args, gate.data(), up.data(), h.data());
  SwigluBackward(args, gate.data(), up.data(), dh.data(), d_gate.data(),
                 d_up.data());
  EXPECT_THAT(h, ::testing::ElementsAre(-0.0f, 1000,
                                        ::testing::FloatNear(0, 1e-30), 100));
  EXPECT_THAT(d_gate,
              ::testing::ElementsAre(0, 1, ::testing::FloatNear(0, 1e-30), 1));
}

TEST(SwigluTest, FloatMatchesDouble) {
  SwigluArgs args;
  args.n = 50;
  const auto gate = RandomVector(args.n, 73, -6, 6);
  const auto up = RandomVector(args.n, 74);
  const auto dh = RandomVector(args.n, 75);
  std::vector<double> h(args.n), dg(args.n), du(args.n);
  SwigluForward(args, gate.data(), up.data(), h.data());
  SwigluBackward(args, gate.data(), up.data(), dh.data(), dg.data(), du.data());
  const auto gf = ConvertVector<float>(gate), uf = ConvertVector<float>(up),
             dhf = ConvertVector<float>(dh);
  std::vector<float> hf(args.n), dgf(args.n), duf(args.n);
  SwigluForward(args, gf.data(), uf.data(), hf.data());
  SwigluBackward(args, gf.data(), uf.data(), dhf.data(), dgf.data(),
                 duf.data());
  EXPECT_LT(MaxRelativeError(hf, h), kFloatTolerance);
  EXPECT_LT(MaxRelativeError(dgf, dg), kFloatTolerance);
  EXPECT_LT(MaxRelativeError(duf, du), kFloatTolerance);
}

// GeGLU (Gemma): gelu_pytorch_tanh(gate) * up, PyTorch's formula written
// out, its gradient by finite differences, float against double, and
// extreme gates finite.
TEST(GegluTest, ForwardByHandAndBackwardMatchesFiniteDifferences) {
  SwigluArgs args;
  args.activation = GluActivation::kGeluTanh;
  args.n = 35;
  auto gate = RandomVector(args.n, 76, -5, 5);
  auto up = RandomVector(args.n, 77);
  const auto r = RandomVector(args.n, 78);
  std::vector<double> h(args.n);
  SwigluForward(args, gate.data(), up.data(), h.data());
  for (int64_t i = 0; i < args.n; ++i) {
    const double g = gate[i];
    const double gelu =
        0.5 * g *
        (1 + std::tanh(std::sqrt(2 / M_PI) * (g + 0.044715 * g * g * g)));
    EXPECT_NEAR(h[i], gelu * up[i], 1e-14) << i;
  }
  const std::vector<double> d_gate = ExpectGluGradients(args, gate, up, r);
  const auto gf = ConvertVector<float>(gate), uf = ConvertVector<float>(up),
             rf = ConvertVector<float>(r);
  std::vector<float> hf(args.n), dgf(args.n), duf(args.n);
  SwigluForward(args, gf.data(), uf.data(), hf.data());
  SwigluBackward(args, gf.data(), uf.data(), rf.data(), dgf.data(), duf.data());
  EXPECT_LT(MaxRelativeError(hf, h), kFloatTolerance);
  EXPECT_LT(MaxRelativeError(dgf, d_gate), kFloatTolerance);
  const std::vector<float> extreme = {-1000, 1000, -100, 100};
  const std::vector<float> ones = {1, 1, 1, 1};
  std::vector<float> he(4), dge(4), due(4);
  args.n = 4;
  SwigluForward(args, extreme.data(), ones.data(), he.data());
  SwigluBackward(args, extreme.data(), ones.data(), ones.data(), dge.data(),
                 due.data());
  EXPECT_THAT(he, ::testing::ElementsAre(-0.0f, 1000, -0.0f, 100));
  EXPECT_THAT(dge, ::testing::ElementsAre(0, 1, 0, 1));
}

// ===========================================================================
// Cross-entropy

CrossEntropyArgs SmallCrossEntropy() {
  CrossEntropyArgs args;
  args.num_tokens = 6;
  args.vocab_size = 11;
  return args;
}

TEST(CrossEntropyTest, ForwardMatchesNaiveLogSoftmaxAndSkipsIgnored) {
  const CrossEntropyArgs args = SmallCrossEntropy();
  const auto logits =
      RandomVector(args.num_tokens * args.vocab_size, 80, -3, 3);
  const std::vector<int32_t> targets = {3, -1, 0, 10, -1, 7};
  std::vector<double> lse(args.num_tokens);
  const double loss =
      CrossEntropyForward(args, logits.data(), targets.data(), lse.data());
  double expected = 0;
  for (int64_t t = 0; t < args.num_tokens; ++t) {
    double sum = 0;
    for (int64_t v = 0; v < args.vocab_size; ++v) {
      sum += std::exp(logits[t * args.vocab_size + v]);
    }
    EXPECT_NEAR(lse[t], std::log(sum), 1e-14);
    if (targets[t] >= 0) {
      expected +=
          -std::log(std::exp(logits[t * args.vocab_size + targets[t]]) / sum);
    }
  }
  EXPECT_NEAR(loss, expected / 4, 1e-14);  // 4 counted rows
}

TEST(CrossEntropyTest, BackwardMatchesFiniteDifferencesWithScale) {
  CrossEntropyArgs args = SmallCrossEntropy();
  args.grad_scale = 8.0f;  // e.g. loss scale 32 and 4 accumulation steps
  auto logits = RandomVector(args.num_tokens * args.vocab_size, 81, -3, 3);
  const std::vector<int32_t> targets = {3, -1, 0, 10, -1, 7};
  auto forward = [&]() {
    std::vector<double> lse(args.num_tokens);
    return args.grad_scale *
           CrossEntropyForward(args, logits.data(), targets.data(), lse.data());
  };
  std::vector<double> lse(args.num_tokens);
  CrossEntropyForward(args, logits.data(), targets.data(), lse.data());
  std::vector<double> d_logits(logits.size(), kNaN);
  CrossEntropyBackward(args, logits.data(), targets.data(), lse.data(),
                       d_logits.data());
  EXPECT_LT(MaxRelativeError(d_logits, NumericGradient(forward, &logits)),
            kGradTolerance);
  // Ignored rows get exactly zero gradient; counted rows sum to zero.
  for (int64_t t = 0; t < args.num_tokens; ++t) {
    double row_sum = 0;
    for (int64_t v = 0; v < args.vocab_size; ++v) {
      const double g = d_logits[t * args.vocab_size + v];
      if (targets[t] < 0) {
        EXPECT_EQ(g, 0);
      }
      row_sum += g;
    }
    EXPECT_NEAR(row_sum, 0, 1e-15);
  }
}

// A loss divisor replaces the count: the sum of the counted rows over it,
// forward and (by finite differences) backward.
TEST(CrossEntropyTest, LossDivisorDividesTheSumOfCountedRows) {
  CrossEntropyArgs args = SmallCrossEntropy();
  const auto logits =
      RandomVector(args.num_tokens * args.vocab_size, 83, -3, 3);
  const std::vector<int32_t> targets = {3, -1, 0, 10, -1, 7};
  std::vector<double> lse(args.num_tokens);
  const double mean =
      CrossEntropyForward(args, logits.data(), targets.data(), lse.data());
  args.loss_divisor = 10.0;  // e.g. this rank's share of a global batch
  args.grad_scale = 2.0f;
  auto local = logits;
  auto forward = [&]() {
    std::vector<double> l(args.num_tokens);
    return args.grad_scale *
           CrossEntropyForward(args, local.data(), targets.data(), l.data());
  };
  EXPECT_NEAR(forward() / args.grad_scale, mean * 4 / 10, 1e-14);
  std::vector<double> d_logits(logits.size(), kNaN);
  CrossEntropyBackward(args, local.data(), targets.data(), lse.data(),
                       d_logits.data());
  EXPECT_LT(MaxRelativeError(d_logits, NumericGradient(forward, &local)),
            kGradTolerance);
}

TEST(CrossEntropyTest, AllIgnoredGivesZeroLossAndGradient) {
  CrossEntropyArgs args = SmallCrossEntropy();
  args.num_tokens = 2;
  args.ignore_index = -100;  // Hugging Face's convention also works
  const auto logits = RandomVector(2 * args.vocab_size, 82);
  const std::vector<int32_t> targets = {-100, -100};
  std::vector<double> lse(2), d_logits(logits.size(), kNaN);
  EXPECT_EQ(
      CrossEntropyForward(args, logits.data(), targets.data(), lse.data()),
      0.0);
  CrossEntropyBackward(args, logits.data(), targets.data(), lse.data(),
                       d_logits.data());
  for (double g : d_logits) EXPECT_EQ(g, 0);
}

// Gemma 2's final_logit_softcapping: the loss of the capped logits, and the
// gradient written is that of the raw logits (finite differences).
TEST(CrossEntropyTest, SoftcapCapsLogitsAndGradientIsTheRawLogits) {
  CrossEntropyArgs args = SmallCrossEntropy();
  args.logit_softcap = 2.0f;
  auto logits = RandomVector(args.num_tokens * args.vocab_size, 84, -6, 6);
  const std::vector<int32_t> targets = {3, -1, 0, 10, -1, 7};
  std::vector<double> capped = logits;
  for (double& x : capped) x = 2.0 * std::tanh(x / 2.0);
  CrossEntropyArgs plain = args;
  plain.logit_softcap = 0;
  std::vector<double> lse(args.num_tokens), lse_plain(args.num_tokens);
  const double loss =
      CrossEntropyForward(args, logits.data(), targets.data(), lse.data());
  EXPECT_NEAR(loss,
              CrossEntropyForward(plain, capped.data(), targets.data(),
                                  lse_plain.data()),
              1e-14);
  EXPECT_GT(
      std::abs(loss - CrossEntropyForward(plain, logits.data(), targets.data(),
                                          lse_plain.data())),
      1e-3);
  auto forward = [&]() {
    std::vector<double> l(args.num_tokens);
    return CrossEntropyForward(args, logits.data(), targets.data(), l.data());
  };
  std::vector<double> d_logits(logits.size(), kNaN);
  CrossEntropyBackward(args, logits.data(), targets.data(), lse.data(),
                       d_logits.data());
  EXPECT_LT(MaxRelativeError(d_logits, NumericGradient(forward, &logits)),
            kGradTolerance);
}

TEST(CrossEntropyTest, UniformLogitsGiveLogVocab) {
  CrossEntropyArgs args = SmallCrossEntropy();
  const std::vector<float> logits(args.num_tokens * args.vocab_size, 1e4f);
  const std::vector<int32_t> targets = {0, 1, 2, 3, 4, 5};
  std::vector<float> lse(args.num_tokens);
  // Large equal logits: naive exp() would overflow; the answer is log(11).
  EXPECT_NEAR(
      CrossEntropyForward(args, logits.data(), targets.data(), lse.data()),
      std::log(11.0), 1e-12);
}

TEST(CrossEntropyTest, FloatMatchesDouble) {
  const CrossEntropyArgs args = SmallCrossEntropy();
  const auto logits =
      RandomVector(args.num_tokens * args.vocab_size, 83, -5, 5);
  const std::vector<int32_t> targets = {1, 2, -1, 4, 5, 0};
  std::vector<double> lse(args.num_tokens), d(logits.size());
  const double loss =
      CrossEntropyForward(args, logits.data(), targets.data(), lse.data());
  CrossEntropyBackward(args, logits.data(), targets.data(), lse.data(),
                       d.data());
  const auto logitsf = ConvertVector<float>(logits);
  std::vector<float> lsef(args.num_tokens), df(logits.size());
  const double lossf =
      CrossEntropyForward(args, logitsf.data(), targets.data(), lsef.data());
  CrossEntropyBackward(args, logitsf.data(), targets.data(), lsef.data(),
                       df.data());
  EXPECT_NEAR(lossf, loss, kFloatTolerance * loss);
  EXPECT_LT(MaxRelativeError(df, d), kFloatTolerance);
}

// The batch in chunks of 4 and 2 rows: the same lse and gradient rows, and
// the mean of the chunks' row terms is the whole forward's loss, bit for bit.
TEST(CrossEntropyTest, ChunksMatchTheWholeBatch) {
  const CrossEntropyArgs args = SmallCrossEntropy();
  const int64_t V = args.vocab_size;
  const auto logits = RandomVector(args.num_tokens * V, 84, -4, 4);
  const std::vector<int32_t> targets = {3, -1, 0, 10, -1, 7};
  std::vector<double> lse(args.num_tokens), d(logits.size());
  const double loss =
      CrossEntropyForward(args, logits.data(), targets.data(), lse.data());
  CrossEntropyBackward(args, logits.data(), targets.data(), lse.data(),
                       d.data());
  std::vector<double> lse_c(args.num_tokens), d_c(logits.size());
  std::vector<double> row_loss(args.num_tokens, kNaN);
  for (const auto& [first, rows] :
       {std::pair<int64_t, int64_t>{0, 4}, std::pair<int64_t, int64_t>{4, 2}}) {
    CrossEntropyArgs chunk = args;
    chunk.num_tokens = rows;
    chunk.batch_tokens = args.num_tokens;
    chunk.row_offset = first;
    CrossEntropyRowLosses(chunk, logits.data() + first * V, targets.data(),
                          lse_c.data() + first, row_loss.data() + first);
    CrossEntropyBackward(chunk, logits.data() + first * V, targets.data(),
                         lse_c.data() + first, d_c.data() + first * V);
  }
  EXPECT_EQ(row_loss[1], 0.0);  // ignored
  EXPECT_EQ(lse_c, lse);
  EXPECT_EQ(d_c, d);  // the count is the batch's, not the chunk's
  EXPECT_EQ(CrossEntropyMean(args, targets.data(), row_loss.data()), loss);
}

TEST(CrossEntropyDeathTest, TargetOutOfRangeIsABug) {
  CrossEntropyArgs args = SmallCrossEntropy();
  args.num_tokens = 1;
  const std::vector<float> logits(args.vocab_size);
  const int32_t target = 11;
  float lse;
  EXPECT_DEATH_IF_SUPPORTED(
      CrossEntropyForward(args, logits.data(), &target, &lse),
      "target 11 of row 0 outside \\[0, 11\\)");
}

// ===========================================================================
// Elementwise

TEST(ElementwiseTest, AccumulateScaleFillAdd) {
  std::vector<double> x = {1, 2, 3};
  std::vector<double> y = {10, 20, 30};
  AccumulateArgs accumulate;
  accumulate.n = 3;
  accumulate.alpha = -2.0f;
  Accumulate(accumulate, x.data(), y.data());
  EXPECT_THAT(y, ::testing::ElementsAre(8, 16, 24));
  ScaleArgs scale;
  scale.n = 3;
  scale.alpha = 0.5f;
  Scale(scale, y.data());
  EXPECT_THAT(y, ::testing::ElementsAre(4, 8, 12));
  AddArgs add;
  add.n = 3;
  Add(add, x.data(), y.data(), y.data());  // out aliases b
  EXPECT_THAT(y, ::testing::ElementsAre(5, 10, 15));
  FillArgs fill;
  fill.n = 2;
  fill.value = 7.0f;
  Fill(fill, y.data());
  EXPECT_THAT(y, ::testing::ElementsAre(7, 7, 15));
}

TEST(ElementwiseTest, CastBetweenEveryPairOfDTypes) {
  const std::vector<float> values = {0.0f, 1.0f,   -2.5f,    3.14159265f, 1e-6f,
                                     7e4f, -1e-8f, 65504.0f, 1.0f / 3};
  const int64_t n = static_cast<int64_t>(values.size());
  for (DType src : {DType::kF32, DType::kBF16, DType::kF16}) {
    // Source buffer holds the values rounded to src.
    std::vector<uint8_t> src_buf(n * DTypeSize(src));
    for (int64_t i = 0; i < n; ++i) {
      StoreFromFloat(src, values[i], src_buf.data(), i);
    }
    for (DType dst : {DType::kF32, DType::kBF16, DType::kF16}) {
      std::vector<uint8_t> dst_buf(n * DTypeSize(dst));
      CastArgs args;
      args.n = n;
      args.src = src;
      args.dst = dst;
      Cast(args, src_buf.data(), dst_buf.data());
      for (int64_t i = 0; i < n; ++i) {
        const float from = LoadAsFloat(src, src_buf.data(), i);
        float expected = from;
        if (dst == DType::kBF16) expected = BF16ToFloat(FloatToBF16(from));
        if (dst == DType::kF16) expected = F16ToFloat(FloatToF16(from));
        EXPECT_EQ(LoadAsFloat(dst, dst_buf.data(), i), expected)
            << DTypeName(src) << "->" << DTypeName(dst) << " #" << i;
      }
    }
  }
}

TEST(ElementwiseTest, CastNarrowsWithRoundToNearestEven) {
  // 1 + 2^-8 is the tie between bf16's 1 and 1 + 2^-7: it goes to 1 (even).
  const float values[2] = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f};
  uint16_t out[2];
  CastArgs args;
  args.n = 2;
  args.src = DType::kF32;
  args.dst = DType::kBF16;
  Cast(args, values, out);
  EXPECT_EQ(BF16ToFloat(out[0]), 1.0f);
  EXPECT_EQ(BF16ToFloat(out[1]), 1.0f + 0x1p-6f);
}

TEST(ElementwiseTest, StorageVariantsComputeInFloatAndRound) {
  // A bf16 gradient accumulated into an fp32 partition, then unscaled.
  const std::vector<uint16_t> grad = {FloatToBF16(1.5f), FloatToBF16(-0.25f)};
  std::vector<float> partition = {1.0f, 1.0f};
  AccumulateArgs accumulate;
  accumulate.n = 2;
  accumulate.alpha = 2.0f;
  Accumulate(accumulate, DType::kBF16, grad.data(), DType::kF32,
             partition.data());
  EXPECT_THAT(partition, ::testing::ElementsAre(4.0f, 0.5f));

  // Into fp16 storage: 2048 + 1 is not representable and rounds to even.
  std::vector<uint16_t> half = {FloatToF16(2048.0f)};
  const float one = 1.0f;
  accumulate.n = 1;
  accumulate.alpha = 1.0f;
  Accumulate(accumulate, DType::kF32, &one, DType::kF16, half.data());
  EXPECT_EQ(F16ToFloat(half[0]), 2048.0f);

  std::vector<uint16_t> bf = {FloatToBF16(3.0f), FloatToBF16(-5.0f)};
  ScaleArgs scale;
  scale.n = 2;
  scale.alpha = 0.5f;
  Scale(scale, DType::kBF16, bf.data());
  EXPECT_EQ(BF16ToFloat(bf[0]), 1.5f);
  EXPECT_EQ(BF16ToFloat(bf[1]), -2.5f);

  AddArgs add;
  add.n = 2;
  Add(add, DType::kBF16, bf.data(), bf.data(), bf.data());
  EXPECT_EQ(BF16ToFloat(bf[0]), 3.0f);
  EXPECT_EQ(BF16ToFloat(bf[1]), -5.0f);

  FillArgs fill;
  fill.n = 2;
  fill.value = 0.1f;
  std::vector<uint16_t> filled(2, 0xFFFF);
  Fill(fill, DType::kF16, filled.data());
  EXPECT_EQ(filled[0], FloatToF16(0.1f));
  EXPECT_EQ(filled[1], FloatToF16(0.1f));
}

// ===========================================================================
// Reductions

TEST(ReductionTest, SumSquares) {
  const std::vector<float> x = {1, -2, 3, 0.5f};
  ReduceArgs args;
  args.n = 4;
  EXPECT_EQ(SumSquares(args, x.data()), 14.25);
  EXPECT_EQ(SumSquares(args, DType::kF32, x.data()), 14.25);
  std::vector<uint16_t> bf(4), f16(4);
  FloatToBF16(x, absl::MakeSpan(bf));
  FloatToF16(x, absl::MakeSpan(f16));
  EXPECT_EQ(SumSquares(args, DType::kBF16, bf.data()), 14.25);
  EXPECT_EQ(SumSquares(args, DType::kF16, f16.data()), 14.25);
  // Double accumulation: squares of 1e20 overflow float but not double.
  const std::vector<float> big = {1e20f, 1e20f};
  args.n = 2;
  const double big_sq = static_cast<double>(big[0]) * big[0];
  EXPECT_EQ(SumSquares(args, big.data()), 2 * big_sq);
  EXPECT_GT(2 * big_sq, std::numeric_limits<float>::max());
  args.n = 0;
  EXPECT_EQ(SumSquares(args, x.data()), 0.0);
}

TEST(ReductionTest, AllFiniteFindsInfAndNaNInEveryDType) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  ReduceArgs args;
  args.n = 3;
  for (float bad : {inf, -inf, nan}) {
    const std::vector<float> x = {1, bad, 2};
    EXPECT_FALSE(AllFinite(args, x.data()));
    const std::vector<double> xd = {1, bad, 2};
    EXPECT_FALSE(AllFinite(args, xd.data()));
    for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
      std::vector<uint8_t> buf(3 * DTypeSize(dtype));
      for (int i = 0; i < 3; ++i) StoreFromFloat(dtype, x[i], buf.data(), i);
      EXPECT_FALSE(AllFinite(args, dtype, buf.data())) << DTypeName(dtype);
    }
  }
  const std::vector<float> ok = {1, -3e38f, 2};
  EXPECT_TRUE(AllFinite(args, ok.data()));
  EXPECT_TRUE(AllFinite(args, DType::kF32, ok.data()));
  // 1e5 is finite in float but overflows fp16 storage: the fp16 buffer then
  // holds inf, which is what the overflow check must catch.
  std::vector<uint16_t> half(1);
  StoreFromFloat(DType::kF16, 1e5f, half.data(), 0);
  args.n = 1;
  EXPECT_FALSE(AllFinite(args, DType::kF16, half.data()));
  args.n = 0;
  EXPECT_TRUE(AllFinite<float>(args, nullptr));
}

// ===========================================================================
// AdamW

TEST(AdamWTest, TwoStepsByHand) {
  // p = 1, lr = 0.1, betas (0.9, 0.999), eps = 1e-8, wd = 0.01, AdamW.
  // Step 1, g = 0.5:
  //   m = 0.1 * 0.5 = 0.05, v = 0.001 * 0.25 = 0.00025
  //   bc1 = 0.1, bc2s = 1 / sqrt(0.001)
  //   denom = sqrt(0.00025) / sqrt(0.001) + 1e-8 = 0.5 + 1e-8
  //   p = 1 - 0.1 * 0.01 * 1 = 0.999
  //   p = 0.999 - (0.1 / 0.1) * 0.05 / (0.5 + 1e-8) = 0.899000002
  // Step 2, g = -0.25:
  //   m = 0.9 * 0.05 + 0.1 * -0.25 = 0.02
  //   v = 0.999 * 0.00025 + 0.001 * 0.0625 = 0.00031225
  //   bc1 = 1 - 0.81 = 0.19, bc2s = 1 / sqrt(1 - 0.998001) = 1 / sqrt(0.001999)
  //   denom = sqrt(0.00031225 / 0.001999) + 1e-8 = 0.39522539
  //   p = 0.899000002 * (1 - 0.1 * 0.01) = 0.898101002
  //   p = 0.898101002 - (0.1 / 0.19) * 0.02 / 0.39522539 = 0.87146730
  // The kernel works in float, where 1 - 0.9f is off by 2.4e-7 relative and
  // 1 - 0.999f by 1.3e-5 (cancellation, as in DeepSpeed): hence the
  // tolerances.
  float p = 1.0f, m = 0.0f, v = 0.0f;
  AdamWArgs args;
  args.n = 1;
  args.lr = 0.1f;
  args.weight_decay = 0.01f;
  float g = 0.5f;
  args.step = 1;
  AdamWStep(args, &p, &g, &m, &v);
  EXPECT_NEAR(m, 0.05, 0.05 * 1e-6);
  EXPECT_NEAR(v, 0.00025, 0.00025 * 2e-5);
  EXPECT_NEAR(p, 0.899000002, 2e-7);
  g = -0.25f;
  args.step = 2;
  AdamWStep(args, &p, &g, &m, &v);
  EXPECT_NEAR(m, 0.02, 0.02 * 1e-6);
  EXPECT_NEAR(v, 0.00031225, 0.00031225 * 2e-5);
  EXPECT_NEAR(p, 0.87146730, 3e-7);
  EXPECT_EQ(g, -0.25f) << "gradients are read only";
}

// PyTorch's torch.optim.AdamW / Adam (L2) formulas, in double.
struct TorchAdam {
  double lr, beta1, beta2, eps, weight_decay;
  bool bias_correction, decoupled;
  void Step(int64_t t, std::vector<double>* p, std::vector<double> g,
            std::vector<double>* m, std::vector<double>* v) const {
    const double bc1 = bias_correction ? 1 - std::pow(beta1, t) : 1;
    const double bc2 = bias_correction ? 1 - std::pow(beta2, t) : 1;
    for (size_t i = 0; i < p->size(); ++i) {
      if (decoupled) {
        (*p)[i] *= 1 - lr * weight_decay;
      } else {
        g[i] += weight_decay * (*p)[i];
      }
      (*m)[i] = beta1 * (*m)[i] + (1 - beta1) * g[i];
      (*v)[i] = beta2 * (*v)[i] + (1 - beta2) * g[i] * g[i];
      const double denom = std::sqrt((*v)[i]) / std::sqrt(bc2) + eps;
      (*p)[i] -= lr / bc1 * (*m)[i] / denom;
    }
  }
};

TEST(AdamWTest, MatchesTorchFormulaOverManySteps) {
  struct Mode {
    bool adamw_mode;
    bool bias_correction;
    float weight_decay;
  };
  for (const Mode& mode : {Mode{true, true, 0.1f}, Mode{false, true, 0.1f},
                           Mode{true, false, 0.05f}, Mode{true, true, 0.0f}}) {
    const int64_t n = 37;  // not a multiple of any vector width
    AdamWArgs args;
    args.n = n;
    args.lr = 1e-2f;
    args.beta1 = 0.8f;
    args.beta2 = 0.95f;
    args.eps = 1e-6f;
    args.weight_decay = mode.weight_decay;
    args.bias_correction = mode.bias_correction;
    args.adamw_mode = mode.adamw_mode;
    const TorchAdam torch{
        args.lr,           args.beta1,           args.beta2,     args.eps,
        args.weight_decay, mode.bias_correction, mode.adamw_mode};
    std::vector<double> p = RandomVector(n, 90), m(n, 0.0), v(n, 0.0);
    std::vector<float> pf = ConvertVector<float>(p), mf(n, 0.0f), vf(n, 0.0f);
    for (int64_t t = 1; t <= 10; ++t) {
      // Gradients exactly representable in float, so both see the same g.
      const std::vector<float> gf =
          ConvertVector<float>(RandomVector(n, 100 + static_cast<uint32_t>(t)));
      torch.Step(t, &p, ConvertVector<double>(gf), &m, &v);
      args.step = t;
      AdamWStep(args, pf.data(), gf.data(), mf.data(), vf.data());
    }
    EXPECT_LT(MaxRelativeError(pf, p), 1e-5)
        << "adamw=" << mode.adamw_mode << " bc=" << mode.bias_correction;
    EXPECT_LT(MaxRelativeError(mf, m), 1e-5);
    EXPECT_LT(MaxRelativeError(vf, v), 1e-5);
  }
}

TEST(AdamWTest, GradScaleEqualsPreScaledGradients) {
  const int64_t n = 257;
  std::vector<float> p(n), g(n), m(n), v(n);
  for (int64_t i = 0; i < n; ++i) {
    p[i] = 0.01f * static_cast<float>(i % 17) - 0.05f;
    g[i] = 0.003f * static_cast<float>(i % 29) - 0.04f;
    m[i] = 0.001f * static_cast<float>(i % 7);
    v[i] = 1e-5f * static_cast<float>(i % 5);
  }
  AdamWArgs args;
  args.n = n;
  args.step = 4;
  args.weight_decay = 0.01f;
  std::vector<float> p1 = p, m1 = m, v1 = v, g1 = g;
  for (float& x : g1) x *= 0.37f;
  AdamWStep(args, p1.data(), g1.data(), m1.data(), v1.data());
  args.grad_scale = 0.37f;
  std::vector<float> p2 = p, m2 = m, v2 = v;
  AdamWStep(args, p2.data(), g.data(), m2.data(), v2.data());
  EXPECT_EQ(p1, p2);
  EXPECT_EQ(m1, m2);
  EXPECT_EQ(v1, v2);
  EXPECT_NE(p1, p);
}

TEST(AdamWTest, L2AndDecoupledDecayDiffer) {
  AdamWArgs args;
  args.n = 1;
  args.lr = 0.1f;
  args.weight_decay = 0.5f;
  float p_w = 2.0f, p_l2 = 2.0f, m_w = 0, v_w = 0, m_l2 = 0, v_l2 = 0;
  const float g = 0.0f;
  AdamWStep(args, &p_w, &g, &m_w, &v_w);
  args.adamw_mode = false;
  AdamWStep(args, &p_l2, &g, &m_l2, &v_l2);
  // Decoupled: only the decay moves p, by lr*wd*p = 0.1; the moments stay 0.
  EXPECT_FLOAT_EQ(p_w, 1.9f);
  EXPECT_EQ(m_w, 0.0f);
  // L2: g becomes wd*p = 1, the moments see it, and the first Adam step has
  // magnitude lr (m/bc1 = g and sqrt(v)*bc2s = |g|).
  EXPECT_FLOAT_EQ(m_l2, 0.1f);
  EXPECT_NEAR(p_l2, 1.9f, 1e-6);
}

TEST(AdamWDeathTest, StepZeroIsABug) {
  AdamWArgs args;
  args.step = 0;
  EXPECT_DEATH_IF_SUPPORTED(AdamWStep(args, nullptr, nullptr, nullptr, nullptr),
                            "AdamW steps count from 1");
}

// ===========================================================================
// Composition: a one-layer Qwen2-style model (embedding, RMSNorm, q/k/v
// projections with bias, rotary, grouped-query causal attention, output
// projection, residuals, SwiGLU MLP, final norm, untied LM head,
// cross-entropy) built from the kernels above, with its backward written the
// way the model layer will write it: activation gradients overwrite,
// parameter gradients accumulate, a sum of two input gradients uses beta = 1.
// Every parameter's gradient must match finite differences of the loss.

struct TinyModel {
  static constexpr int64_t kBatch = 2, kSeq = 5, kTokens = kBatch * kSeq;
  static constexpr int64_t kVocab = 11, kHidden = 8, kHeads = 2, kKvHeads = 1,
                           kHeadDim = 4, kFfn = 12;
  static constexpr int64_t kKvDim = kKvHeads * kHeadDim;

  std::vector<int32_t> tokens = {1, 5, 5, 0, 10, 3, 3, 3, 7, 2};
  std::vector<int32_t> targets = {5, 5, 0, 10, -1, 3, 3, 7, 2, 9};

  // Parameters, in a fixed order.
  std::vector<std::vector<double>> params;
  enum Param {
    kEmbed,
    kNorm1,
    kWq,
    kBq,
    kWk,
    kBk,
    kWv,
    kBv,
    kWo,
    kNorm2,
    kWgate,
    kWup,
    kWdown,
    kNormF,
    kLmHead,
    kNumParams
  };
  static constexpr const char* kParamNames[kNumParams] = {
      "embed", "norm1", "wq",   "bq", "wk",   "bk",    "wv",     "bv",
      "wo",    "norm2", "gate", "up", "down", "normf", "lm_head"};

  TinyModel() {
    const int64_t sizes[kNumParams] = {
        kVocab * kHidden,  kHidden, kHidden * kHidden, kHidden,
        kKvDim * kHidden,  kKvDim,  kKvDim * kHidden,  kKvDim,
        kHidden * kHidden, kHidden, kFfn * kHidden,    kFfn * kHidden,
        kHidden * kFfn,    kHidden, kVocab * kHidden};
    for (int i = 0; i < kNumParams; ++i) {
      const bool norm = i == kNorm1 || i == kNorm2 || i == kNormF;
      params.push_back(norm ? RandomVector(sizes[i], 200 + i, 0.5, 1.5)
                            : RandomVector(sizes[i], 200 + i, -0.5, 0.5));
    }
  }

  const double* P(Param p) const { return params[p].data(); }

  static RmsNormArgs Norm() {
    RmsNormArgs args;
    args.rows = kTokens;
    args.dim = kHidden;
    return args;
  }
  static RotaryArgs Rope(int64_t heads) {
    RotaryArgs args;
    args.batch = kBatch;
    args.seq = kSeq;
    args.heads = heads;
    args.head_dim = kHeadDim;
    args.theta = 1e6f;
    return args;
  }
  static AttentionArgs Attn() {
    AttentionArgs args;
    args.batch = kBatch;
    args.seq = kSeq;
    args.num_heads = kHeads;
    args.num_kv_heads = kKvHeads;
    args.head_dim = kHeadDim;
    return args;
  }
  static BiasArgs Bias(int64_t cols) {
    BiasArgs args;
    args.rows = kTokens;
    args.cols = cols;
    return args;
  }
  static CrossEntropyArgs Loss() {
    CrossEntropyArgs args;
    args.num_tokens = kTokens;
    args.vocab_size = kVocab;
    return args;
  }

  // Activations saved by the forward pass for the backward pass.
  struct Saved {
    std::vector<double> x0, h1, rstd1, q, k, v, attn, lse, x1, h2, rstd2, gate,
        up, act, x2, h3, rstd3, logits, lse_ce;
  };

  double Forward(Saved* s) const {
    const int64_t T = kTokens, H = kHidden;
    EmbeddingArgs embed;
    embed.num_tokens = T;
    embed.vocab_size = kVocab;
    embed.dim = H;
    s->x0.resize(T * H);
    EmbeddingForward(embed, tokens.data(), P(kEmbed), s->x0.data());

    s->h1.resize(T * H);
    s->rstd1.resize(T);
    RmsNormForward(Norm(), s->x0.data(), P(kNorm1), s->h1.data(),
                   s->rstd1.data());
    s->q.resize(T * H);
    s->k.resize(T * kKvDim);
    s->v.resize(T * kKvDim);
    Matmul(LinearForwardArgs(T, H, H), s->h1.data(), P(kWq), s->q.data());
    Matmul(LinearForwardArgs(T, H, kKvDim), s->h1.data(), P(kWk), s->k.data());
    Matmul(LinearForwardArgs(T, H, kKvDim), s->h1.data(), P(kWv), s->v.data());
    BiasAdd(Bias(H), P(kBq), s->q.data());
    BiasAdd(Bias(kKvDim), P(kBk), s->k.data());
    BiasAdd(Bias(kKvDim), P(kBv), s->v.data());
    RotaryForward(Rope(kHeads), s->q.data(), s->q.data());
    RotaryForward(Rope(kKvHeads), s->k.data(), s->k.data());
    s->attn.resize(T * H);
    s->lse.resize(kBatch * kHeads * kSeq);
    AttentionForward(Attn(), s->q.data(), s->k.data(), s->v.data(),
                     s->attn.data(), s->lse.data());
    std::vector<double> o(T * H);
    Matmul(LinearForwardArgs(T, H, H), s->attn.data(), P(kWo), o.data());
    AddArgs add;
    add.n = T * H;
    s->x1.resize(T * H);
    Add(add, s->x0.data(), o.data(), s->x1.data());

    s->h2.resize(T * H);
    s->rstd2.resize(T);
    RmsNormForward(Norm(), s->x1.data(), P(kNorm2), s->h2.data(),
                   s->rstd2.data());
    s->gate.resize(T * kFfn);
    s->up.resize(T * kFfn);
    s->act.resize(T * kFfn);
    Matmul(LinearForwardArgs(T, H, kFfn), s->h2.data(), P(kWgate),
           s->gate.data());
    Matmul(LinearForwardArgs(T, H, kFfn), s->h2.data(), P(kWup), s->up.data());
    SwigluArgs swiglu;
    swiglu.n = T * kFfn;
    SwigluForward(swiglu, s->gate.data(), s->up.data(), s->act.data());
    std::vector<double> mlp(T * H);
    Matmul(LinearForwardArgs(T, kFfn, H), s->act.data(), P(kWdown), mlp.data());
    s->x2.resize(T * H);
    Add(add, s->x1.data(), mlp.data(), s->x2.data());

    s->h3.resize(T * H);
    s->rstd3.resize(T);
    RmsNormForward(Norm(), s->x2.data(), P(kNormF), s->h3.data(),
                   s->rstd3.data());
    s->logits.resize(T * kVocab);
    Matmul(LinearForwardArgs(T, H, kVocab), s->h3.data(), P(kLmHead),
           s->logits.data());
    s->lse_ce.resize(T);
    return CrossEntropyForward(Loss(), s->logits.data(), targets.data(),
                               s->lse_ce.data());
  }

  // Gradients of the loss with respect to every parameter.
  std::vector<std::vector<double>> Backward(const Saved& s) const {
    const int64_t T = kTokens, H = kHidden;
    std::vector<std::vector<double>> grads;
    for (const auto& p : params) grads.emplace_back(p.size(), 0.0);
    auto G = [&](Param p) { return grads[p].data(); };

    std::vector<double> d_logits(T * kVocab);
    CrossEntropyBackward(Loss(), s.logits.data(), targets.data(),
                         s.lse_ce.data(), d_logits.data());
    std::vector<double> dh(T * H);
    Matmul(LinearBackwardInputArgs(T, H, kVocab), d_logits.data(), P(kLmHead),
           dh.data());
    Matmul(LinearBackwardWeightArgs(T, H, kVocab), d_logits.data(), s.h3.data(),
           G(kLmHead));
    // The residual stream's gradient: dx2, then dx1, then dx0.
    std::vector<double> dx(T * H);
    RmsNormBackward(Norm(), s.x2.data(), P(kNormF), s.rstd3.data(), dh.data(),
                    dx.data(), G(kNormF));

    // MLP branch: mlp = act * Wdown^T reads dx2.
    std::vector<double> d_act(T * kFfn), d_gate(T * kFfn), d_up(T * kFfn);
    Matmul(LinearBackwardInputArgs(T, kFfn, H), dx.data(), P(kWdown),
           d_act.data());
    Matmul(LinearBackwardWeightArgs(T, kFfn, H), dx.data(), s.act.data(),
           G(kWdown));
    SwigluArgs swiglu;
    swiglu.n = T * kFfn;
    SwigluBackward(swiglu, s.gate.data(), s.up.data(), d_act.data(),
                   d_gate.data(), d_up.data());
    Matmul(LinearBackwardInputArgs(T, H, kFfn), d_gate.data(), P(kWgate),
           dh.data());
    Matmul(LinearBackwardInputArgs(T, H, kFfn, /*beta=*/1.0f), d_up.data(),
           P(kWup), dh.data());
    Matmul(LinearBackwardWeightArgs(T, H, kFfn), d_gate.data(), s.h2.data(),
           G(kWgate));
    Matmul(LinearBackwardWeightArgs(T, H, kFfn), d_up.data(), s.h2.data(),
           G(kWup));
    std::vector<double> d_branch(T * H);
    RmsNormBackward(Norm(), s.x1.data(), P(kNorm2), s.rstd2.data(), dh.data(),
                    d_branch.data(), G(kNorm2));
    AccumulateArgs accumulate;
    accumulate.n = T * H;
    Accumulate(accumulate, d_branch.data(), dx.data());  // dx is now dx1

    // Attention branch: o = attn * Wo^T reads dx1.
    std::vector<double> d_attn(T * H);
    Matmul(LinearBackwardInputArgs(T, H, H), dx.data(), P(kWo), d_attn.data());
    Matmul(LinearBackwardWeightArgs(T, H, H), dx.data(), s.attn.data(), G(kWo));
    std::vector<double> dq(T * H), dk(T * kKvDim), dv(T * kKvDim);
    AttentionBackward(Attn(), s.q.data(), s.k.data(), s.v.data(), s.attn.data(),
                      s.lse.data(), d_attn.data(), dq.data(), dk.data(),
                      dv.data());
    RotaryBackward(Rope(kHeads), dq.data(), dq.data());
    RotaryBackward(Rope(kKvHeads), dk.data(), dk.data());
    BiasBackward(Bias(H), dq.data(), G(kBq));
    BiasBackward(Bias(kKvDim), dk.data(), G(kBk));
    BiasBackward(Bias(kKvDim), dv.data(), G(kBv));
    Matmul(LinearBackwardInputArgs(T, H, H), dq.data(), P(kWq), dh.data());
    Matmul(LinearBackwardInputArgs(T, H, kKvDim, 1.0f), dk.data(), P(kWk),
           dh.data());
    Matmul(LinearBackwardInputArgs(T, H, kKvDim, 1.0f), dv.data(), P(kWv),
           dh.data());
    Matmul(LinearBackwardWeightArgs(T, H, H), dq.data(), s.h1.data(), G(kWq));
    Matmul(LinearBackwardWeightArgs(T, H, kKvDim), dk.data(), s.h1.data(),
           G(kWk));
    Matmul(LinearBackwardWeightArgs(T, H, kKvDim), dv.data(), s.h1.data(),
           G(kWv));
    RmsNormBackward(Norm(), s.x0.data(), P(kNorm1), s.rstd1.data(), dh.data(),
                    d_branch.data(), G(kNorm1));
    Accumulate(accumulate, d_branch.data(), dx.data());  // dx is now dx0

    EmbeddingArgs embed;
    embed.num_tokens = T;
    embed.vocab_size = kVocab;
    embed.dim = H;
    EmbeddingBackward(embed, tokens.data(), dx.data(), G(kEmbed));
    return grads;
  }
};

TEST(CompositionTest, OneLayerModelGradientsMatchFiniteDifferences) {
  TinyModel model;
  TinyModel::Saved saved;
  const double loss = model.Forward(&saved);
  EXPECT_GT(loss, 0);
  const std::vector<std::vector<double>> grads = model.Backward(saved);
  for (int p = 0; p < TinyModel::kNumParams; ++p) {
    auto forward = [&]() {
      TinyModel::Saved scratch;
      return model.Forward(&scratch);
    };
    EXPECT_LT(
        MaxRelativeError(grads[p], NumericGradient(forward, &model.params[p])),
        kGradTolerance)
        << TinyModel::kParamNames[p];
  }
}

}  // namespace
}  // namespace kernels
}  // namespace zero3
