// Copyright 2026 The zero3 Authors.

#include "core/zero/host_adam.h"

#include <random>
#include <vector>

#include "core/kernels/reference.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace zero {
namespace {

// The threaded, scaled step equals the scalar reference on pre-scaled
// gradients, bit for bit, whatever the thread count.
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
  const float scale = 0.37f;
  std::vector<float> pr = p0, mr = m0, vr = v0, gs = g;
  for (float& x : gs) x *= scale;
  kernels::AdamWStep(args, pr.data(), gs.data(), mr.data(), vr.data());
  for (int threads : {1, 3, 8}) {
    std::vector<float> p = p0, m = m0, v = v0;
    HostAdamWStep(args, scale, p.data(), g.data(), m.data(), v.data(), threads);
    EXPECT_EQ(p, pr) << threads;
    EXPECT_EQ(m, mr) << threads;
    EXPECT_EQ(v, vr) << threads;
  }
}

}  // namespace
}  // namespace zero
}  // namespace zero3
