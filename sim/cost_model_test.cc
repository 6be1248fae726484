// Copyright 2026 The zero3 Authors.

#include "sim/cost_model.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/testing/test_profile.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace sim {
namespace {

using ::testing::HasSubstr;
using ::zero3::testing::StatusIs;

KernelWork Gemm(int64_t m, int64_t n, int64_t k) {
  KernelWork w;
  w.compute_class = ComputeClass::kMatmul;
  w.m = m;
  w.n = n;
  w.k = k;
  w.trans_b = true;
  w.flops = 2.0 * m * n * k;
  return w;
}

TEST(CostModelTest, MeasuredGemmsAreUsedAndInterpolated) {
  HardwareProfile p = TestProfile();
  auto add = [&](int64_t m, int64_t n, int64_t k, double us) {
    GemmPoint* g = p.mutable_gpu()->add_gemm_table();
    g->set_m(m);
    g->set_n(n);
    g->set_k(k);
    g->set_trans_b(true);
    g->set_us(us);
  };
  add(1000, 64, 64, 10);
  add(3000, 64, 64, 20);
  add(1000, 64, 256, 40);
  ASSERT_OK_AND_ASSIGN(CostModel c, CostModel::Create(p));
  EXPECT_EQ(c.KernelNanos(Gemm(1000, 64, 64)), 10000);   // measured
  EXPECT_EQ(c.KernelNanos(Gemm(2000, 64, 64)), 15000);   // between in m
  EXPECT_EQ(c.KernelNanos(Gemm(6000, 64, 64)), 40000);   // scaled beyond
  EXPECT_EQ(c.KernelNanos(Gemm(1000, 64, 128)), 20000);  // between in k
  // No measured neighbour: the efficiency curve (1 TFLOP/s at efficiency 1).
  EXPECT_EQ(c.KernelNanos(Gemm(10, 10, 10)), 2);
}

TEST(CostModelTest, AttentionBackwardHasItsOwnEfficiency) {
  HardwareProfile p = TestProfile();
  p.mutable_gpu()->set_attention_efficiency(0.5);
  ASSERT_OK_AND_ASSIGN(CostModel a, CostModel::Create(p));
  KernelWork w;
  w.compute_class = ComputeClass::kAttention;
  w.flops = 1e6;  // 1 TFLOP/s peak: 1 us at efficiency 1
  EXPECT_EQ(a.KernelNanos(w), 2000);
  w.backward = true;
  EXPECT_EQ(a.KernelNanos(w), 2000);  // falls back to the forward figure
  p.mutable_gpu()->set_attention_backward_efficiency(0.25);
  ASSERT_OK_AND_ASSIGN(CostModel b, CostModel::Create(p));
  EXPECT_EQ(b.KernelNanos(w), 4000);
}

TEST(CostModelTest, RingCollectiveFormula) {
  ASSERT_OK_AND_ASSIGN(CostModel c, CostModel::Create(TestProfile()));
  // 4 ranks, 4000 bytes at 1 GB/s bus bandwidth: 3 steps x 1 us + 3/4 x 4 us.
  EXPECT_EQ(c.CollectiveNanos(CollectiveKind::kAllGather, 4000, 4, false),
            6000);
  // All-reduce: 6 steps, twice the data.
  EXPECT_EQ(c.CollectiveNanos(CollectiveKind::kAllReduce, 4000, 4, false),
            12000);
  EXPECT_EQ(c.CollectiveNanos(CollectiveKind::kAllGather, 4000, 1, false), 0);
}

TEST(CostModelTest, MissingFiguresAreNamed) {
  HardwareProfile p = TestProfile();
  p.mutable_host_link()->clear_pinned_d2h_gbps();
  EXPECT_THAT(CostModel::Create(p).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("host_link.pinned_d2h_gbps")));
}

}  // namespace
}  // namespace sim
}  // namespace zero3
