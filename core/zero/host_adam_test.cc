// Copyright 2026 The zero3 Authors.

#include "core/zero/host_adam.h"

#include <cstring>
#include <limits>
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

// A bf16 master, with bf16 or fp32 moments (bf16_master_weights_and_grads,
// bf16_optimizer_states): the reference step on the widened values, each
// result rounded to nearest even; the working copy is the new master's
// bits; in place and out of place alike, with bf16 or fp32 gradients, for
// any thread count.
TEST(HostAdamTest, Bf16StatesAreTheReferenceStepRounded) {
  const int64_t n = (1 << 18) + 2051;  // several blocks and threads, uneven
  auto bf16 = [](float x) { return kernels::FloatToBF16(x); };
  auto wide = [](uint16_t x) { return kernels::BF16ToFloat(x); };
  for (const bool bf16_moments : {true, false}) {
    for (const kernels::DType gdtype :
         {kernels::DType::kBF16, kernels::DType::kF32}) {
      std::mt19937 rng(11);
      std::normal_distribution<float> dist;
      std::vector<uint16_t> p0(n), m16(n), v16(n), g16(n);
      std::vector<float> m32(n), v32(n), g32(n);
      for (int64_t i = 0; i < n; ++i) {
        p0[i] = bf16(dist(rng));
        m16[i] = bf16(0.1f * dist(rng));
        v16[i] = bf16(std::abs(dist(rng)));
        m32[i] = bf16_moments ? wide(m16[i]) : 0.1f * dist(rng);
        v32[i] = bf16_moments ? wide(v16[i]) : std::abs(dist(rng));
        g16[i] = bf16(dist(rng));
        g32[i] = gdtype == kernels::DType::kBF16 ? wide(g16[i]) : dist(rng);
      }
      // Non-finite gradients too: NaN and inf reach every rounding path.
      const float nan = std::numeric_limits<float>::quiet_NaN();
      const float inf = std::numeric_limits<float>::infinity();
      for (const int64_t i : {int64_t{7}, int64_t{40}, n - 3}) {
        g16[i] = bf16(i == 40 ? -inf : nan);
        g32[i] = i == 40 ? -inf : nan;
      }
      kernels::AdamWArgs args;
      args.n = n;
      args.step = 4;
      args.lr = 1e-3f;
      args.weight_decay = 0.1f;
      args.grad_scale = 0.25f;
      // The reference on the widened values, then rounded.
      std::vector<float> pr(n), mr = m32, vr = v32, gs(n);
      for (int64_t i = 0; i < n; ++i) {
        pr[i] = wide(p0[i]);
        gs[i] = g32[i] * args.grad_scale;
      }
      kernels::AdamWArgs ref = args;
      ref.grad_scale = 1;
      kernels::AdamWStep(ref, pr.data(), gs.data(), mr.data(), vr.data());
      for (const bool out_of_place : {false, true}) {
        for (const int threads : {1, 5}) {
          const std::string at =
              absl::StrCat("moments ", bf16_moments ? "bf16" : "f32", " grads ",
                           kernels::DTypeName(gdtype),
                           out_of_place ? " out" : " in", " threads ", threads);
          std::vector<uint16_t> p = p0, pm = m16, pv = v16, w(n);
          std::vector<float> fm = m32, fv = v32;
          std::vector<uint16_t> po(n), mo16(n), vo16(n);
          std::vector<float> mo32(n), vo32(n);
          HostAdamWArrays x;
          x.params = p.data();
          x.master_dtype = kernels::DType::kBF16;
          x.grads = gdtype == kernels::DType::kBF16
                        ? static_cast<const void*>(g16.data())
                        : static_cast<const void*>(g32.data());
          x.grad_dtype = gdtype;
          x.moments_dtype =
              bf16_moments ? kernels::DType::kBF16 : kernels::DType::kF32;
          x.exp_avg = bf16_moments ? static_cast<void*>(pm.data())
                                   : static_cast<void*>(fm.data());
          x.exp_avg_sq = bf16_moments ? static_cast<void*>(pv.data())
                                      : static_cast<void*>(fv.data());
          if (out_of_place) {
            x.params_out = po.data();
            x.exp_avg_out = bf16_moments ? static_cast<void*>(mo16.data())
                                         : static_cast<void*>(mo32.data());
            x.exp_avg_sq_out = bf16_moments ? static_cast<void*>(vo16.data())
                                            : static_cast<void*>(vo32.data());
          }
          x.working = w.data();
          x.working_dtype = kernels::DType::kBF16;
          HostAdamWStep(args, x, threads);
          const std::vector<uint16_t>& gp = out_of_place ? po : p;
          int bad = 0;
          for (int64_t i = 0; i < n && bad < 5; ++i) {
            float gm, gv;
            if (bf16_moments) {
              gm = wide(out_of_place ? mo16[i] : pm[i]);
              gv = wide(out_of_place ? vo16[i] : pv[i]);
            } else {
              gm = out_of_place ? mo32[i] : fm[i];
              gv = out_of_place ? vo32[i] : fv[i];
            }
            const float wm = bf16_moments ? wide(bf16(mr[i])) : mr[i];
            const float wv = bf16_moments ? wide(bf16(vr[i])) : vr[i];
            auto same = [](float a, float b) {
              return std::memcmp(&a, &b, 4) == 0;
            };
            const bool ok = gp[i] == bf16(pr[i]) && w[i] == gp[i] &&
                            same(gm, wm) && same(gv, wv);
            if (!ok) {
              ++bad;
              ADD_FAILURE() << at << " element " << i;
            }
          }
          if (out_of_place) {
            EXPECT_EQ(p, p0) << at << ": the inputs are only read";
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace zero
}  // namespace zero3
