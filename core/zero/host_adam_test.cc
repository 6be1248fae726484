// Copyright 2026 The zero3 Authors.

#include "core/zero/host_adam.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/kernels/dtype.h"
#include "core/kernels/reference.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace zero {
namespace {

// The threaded, scaled step equals the scalar reference, bit for bit,
// whatever the thread count.
TEST(HostAdamTest, MatchesReferenceForAnyThreadCount) {
  const int64_t n = (3 << 20) + 17;  // several threads' worth, uneven
  std::mt19937 rng(1);
  std::normal_distribution<float> dist;
  std::vector<float> p0(n), g(n), m0(n), v0(n);
  for (int64_t i = 0; i < n; ++i) {
    p0[i] = dist(rng);
    g[i] = dist(rng);
    m0[i] = 0.1f * dist(rng);
    v0[i] = std::abs(dist(rng));
  }
  kernels::AdamWArgs args;
  args.n = n;
  args.step = 3;
  args.lr = 1e-3f;
  args.weight_decay = 0.1f;
  args.grad_scale = 0.37f;
  std::vector<float> pr = p0, mr = m0, vr = v0;
  kernels::AdamWStep(args, pr.data(), g.data(), mr.data(), vr.data());
  for (int threads : {1, 3, 8}) {
    std::vector<float> p = p0, m = m0, v = v0;
    HostAdamWStep(args, p.data(), g.data(), m.data(), v.data(), threads);
    EXPECT_EQ(p, pr) << threads;
    EXPECT_EQ(m, mr) << threads;
    EXPECT_EQ(v, vr) << threads;
  }
}

// Gradients in bf16/fp16 widen exactly and the working copy rounds as
// kernels::Cast does: the fused step equals widen, reference step, cast.
TEST(HostAdamTest, LowPrecisionGradientsAndWorkingCopyMatchTheReference) {
  const int64_t n = (1 << 20) + 4099;  // several blocks and threads, uneven
  for (kernels::DType dtype : {kernels::DType::kBF16, kernels::DType::kF16}) {
    std::mt19937 rng(7);
    std::normal_distribution<float> dist;
    std::vector<float> p0(n), m0(n), v0(n), gwide(n);
    std::vector<uint16_t> g(n);
    for (int64_t i = 0; i < n; ++i) {
      p0[i] = dist(rng);
      m0[i] = 0.1f * dist(rng);
      v0[i] = std::abs(dist(rng));
      const float x = dist(rng);
      if (dtype == kernels::DType::kBF16) {
        g[i] = kernels::FloatToBF16(x);
        gwide[i] = kernels::BF16ToFloat(g[i]);
      } else {
        g[i] = kernels::FloatToF16(x);
        gwide[i] = kernels::F16ToFloat(g[i]);
      }
    }
    kernels::AdamWArgs args;
    args.n = n;
    args.step = 2;
    args.weight_decay = 0.01f;
    const float scale = 0.5f;
    std::vector<float> pr = p0, mr = m0, vr = v0;
    for (float& x : gwide) x *= scale;
    kernels::AdamWStep(args, pr.data(), gwide.data(), mr.data(), vr.data());
    std::vector<uint16_t> wr(n);
    kernels::CastArgs cast;
    cast.n = n;
    cast.src = kernels::DType::kF32;
    cast.dst = dtype;
    kernels::Cast(cast, pr.data(), wr.data());
    for (int threads : {1, 4}) {
      std::vector<float> p = p0, m = m0, v = v0;
      std::vector<uint16_t> w(n, 0xFFFF);
      HostAdamWArrays a;
      a.params = p.data();
      a.grads = g.data();
      a.grad_dtype = dtype;
      a.exp_avg = m.data();
      a.exp_avg_sq = v.data();
      a.working = w.data();
      a.working_dtype = dtype;
      kernels::AdamWArgs scaled = args;  // the reference had them pre-scaled
      scaled.grad_scale = scale;
      HostAdamWStep(scaled, a, threads);
      const std::string label =
          absl::StrCat(kernels::DTypeName(dtype), " x", threads);
      EXPECT_EQ(p, pr) << label;
      EXPECT_EQ(m, mr) << label;
      EXPECT_EQ(v, vr) << label;
      EXPECT_EQ(w, wr) << label;
    }
  }
}

// Out of place (inputs read, results to the outputs) gives the in-place
// bits, leaves the inputs untouched, for fp32 and bf16 gradients, with and
// without a working copy, and whatever the thread count.
TEST(HostAdamTest, OutOfPlaceEqualsInPlaceBitwise) {
  const int64_t n = (1 << 20) + 4099;
  std::mt19937 rng(11);
  std::normal_distribution<float> dist;
  std::vector<float> p0(n), m0(n), v0(n), g32(n);
  std::vector<uint16_t> g16(n);
  for (int64_t i = 0; i < n; ++i) {
    p0[i] = dist(rng);
    m0[i] = 0.1f * dist(rng);
    v0[i] = std::abs(dist(rng));
    g16[i] = kernels::FloatToBF16(dist(rng));
    g32[i] = dist(rng);
  }
  kernels::AdamWArgs args;
  args.n = n;
  args.step = 5;
  args.weight_decay = 0.02f;
  args.grad_scale = 0.25f;
  for (bool low : {false, true}) {
    for (int threads : {1, 3}) {
      const std::string label =
          absl::StrCat(low ? "bf16" : "fp32", " x", threads);
      std::vector<float> p = p0, m = m0, v = v0;
      std::vector<uint16_t> w(n), wo(n, 0xFFFF);
      HostAdamWArrays a;
      a.params = p.data();
      a.grads = low ? static_cast<const void*>(g16.data()) : g32.data();
      a.grad_dtype = low ? kernels::DType::kBF16 : kernels::DType::kF32;
      a.exp_avg = m.data();
      a.exp_avg_sq = v.data();
      if (low) {
        a.working = w.data();
        a.working_dtype = kernels::DType::kBF16;
      }
      HostAdamWStep(args, a, threads);
      std::vector<float> pi = p0, mi = m0, vi = v0, po(n), mo(n), vo(n);
      HostAdamWArrays b = a;
      b.params = pi.data();
      b.exp_avg = mi.data();
      b.exp_avg_sq = vi.data();
      b.params_out = po.data();
      b.exp_avg_out = mo.data();
      b.exp_avg_sq_out = vo.data();
      if (low) b.working = wo.data();
      HostAdamWStep(args, b, threads);
      EXPECT_EQ(po, p) << label;
      EXPECT_EQ(mo, m) << label;
      EXPECT_EQ(vo, v) << label;
      EXPECT_EQ(pi, p0) << label;
      EXPECT_EQ(mi, m0) << label;
      EXPECT_EQ(vi, v0) << label;
      if (low) {
        EXPECT_EQ(wo, w) << label;
      }
    }
  }
}

// The branch-free bf16 rounding agrees with kernels::FloatToBF16 on the
// values where rounding is delicate: ties, carries into the exponent,
// infinities, NaNs of both signs (including ones whose top payload bits are
// zero), denormals and signed zeros.
TEST(HostAdamTest, CastRoundsLikeTheReferenceOnEdgeCases) {
  std::vector<uint32_t> bits = {
      0x00000000, 0x80000000, 0x00000001, 0x00008000, 0x00018000, 0x0000FFFF,
      0x3F808000, 0x3F818000, 0x3F80FFFF, 0x7F7F8000, 0x7F7FFFFF, 0x7F800000,
      0xFF800000, 0x7F800001, 0x7FC00000, 0xFF800001, 0xFFFFFFFF, 0x7FFFFFFF,
      0x477FF000, 0x477FEFFF, 0x33000000, 0x33000001, 0x387FFFFF, 0xC77FF000};
  std::mt19937 rng(3);
  for (int i = 0; i < (1 << 20); ++i) bits.push_back(rng());
  std::vector<float> src(bits.size());
  std::memcpy(src.data(), bits.data(), bits.size() * 4);
  for (kernels::DType dtype : {kernels::DType::kBF16, kernels::DType::kF16}) {
    std::vector<uint16_t> want(src.size()), got(src.size());
    kernels::CastArgs cast;
    cast.n = static_cast<int64_t>(src.size());
    cast.src = kernels::DType::kF32;
    cast.dst = dtype;
    kernels::Cast(cast, src.data(), want.data());
    HostCastFromFloat(src.data(), dtype, got.data(), cast.n, 3);
    for (size_t i = 0; i < src.size(); ++i) {
      ASSERT_EQ(got[i], want[i])
          << kernels::DTypeName(dtype) << " of 0x" << std::hex << bits[i];
    }
  }
}

TEST(HostAdamTest, ZeroThreadsMeansTheCpusThisProcessMayUse) {
  EXPECT_GE(OptimizerThreads(0), 1);
  EXPECT_EQ(OptimizerThreads(5), 5);
}

}  // namespace
}  // namespace zero
}  // namespace zero3
