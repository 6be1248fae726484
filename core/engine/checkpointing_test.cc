// Copyright 2026 The zero3 Authors.
//
// Activation checkpointing in the engine: the activation arena and the
// device-memory peak shrink, the recompute appears in backward (and costs
// virtual time), prefetch follows it, and values are bit-identical to the run
// without it.

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "core/engine/engine.h"
#include "core/model/presets.h"
#include "core/util/check.h"
#include "core/util/status_macros.h"
#include "gtest/gtest.h"
#include "sim/profiles.h"
#include "sim/simulator.h"
#include "sim/testing/test_profile.h"

namespace zero3 {
namespace engine {
namespace {

struct Measured {
  int64_t activation_bytes = 0;
  int64_t device_peak = 0;
  int64_t bwd_ns = 0;
  std::vector<double> losses;
  std::vector<float> first_param;  // rank 0's master of parameter 1
  std::string trace;
};

// Two steps on two simulated ranks, rank 0's figures.
Measured Measure(const std::string& model, const zero::ZeroOptions& o,
                 sim::SimMode mode) {
  const model::ModelSpec spec = model::LoadModelSpec(model).value();
  sim::SimOptions so;
  so.profile = mode == sim::SimMode::kTiming
                   ? sim::LoadProfile("h200_sxm").value()
                   : sim::TestProfile();
  so.world_size = 2;
  so.mode = mode;
  so.trace = true;
  auto world = sim::SimWorld::Create(so);
  ZR_CHECK_OK(world.status());
  auto data = model::SyntheticBatches(spec.vocab_size(), 3);
  Measured m;
  ZR_CHECK_OK((*world)->Run([&](runtime::Runtime& rt) -> absl::Status {
    ZR_ASSIGN_OR_RETURN(auto e, Engine::Create(spec, o, data.get(), rt));
    for (int s = 0; s < 2; ++s) {
      ZR_ASSIGN_OR_RETURN(StepStats stats, e->Step());
      if (rt.rank() == 0) {
        m.bwd_ns = stats.bwd_ns;
        m.losses.push_back(stats.loss);
      }
    }
    if (rt.rank() != 0) return absl::OkStatus();
    m.activation_bytes = e->model().activation_bytes();
    m.device_peak = rt.device().memory_stats().peak_bytes_in_use;
    if (rt.computes_values()) {
      ZR_ASSIGN_OR_RETURN(m.first_param, e->MasterParam(1));
    }
    return absl::OkStatus();
  }));
  m.trace = (*world)->trace().ToJson();
  return m;
}

zero::ZeroOptions Options(int every) {
  zero::ZeroOptions o;
  o.micro_batch = 2;
  o.seq = 8;
  o.lr = 1e-2;
  o.seed = 9;
  o.checkpoint_every = every;
  return o;
}

TEST(CheckpointingTest, ArenaShrinksAndValuesAreBitIdentical) {
  const Measured off = Measure("tiny", Options(0), sim::SimMode::kData);
  const Measured all = Measure("tiny", Options(1), sim::SimMode::kData);
  const Measured half = Measure("tiny", Options(2), sim::SimMode::kData);
  zero::ZeroOptions mlp_options = Options(1);
  mlp_options.checkpoint_mlp_only = true;
  const Measured mlp = Measure("tiny", mlp_options, sim::SimMode::kData);
  // tiny has two layers: every layer shares one set of slots; every other
  // layer keeps layer 1's own.
  EXPECT_LT(all.activation_bytes, off.activation_bytes);
  EXPECT_EQ(half.activation_bytes, off.activation_bytes);
  EXPECT_LT(all.activation_bytes, mlp.activation_bytes);
  EXPECT_LT(mlp.activation_bytes, off.activation_bytes);
  EXPECT_EQ(mlp.losses, off.losses);
  EXPECT_EQ(mlp.first_param, off.first_param);
  EXPECT_EQ(all.losses, off.losses);
  EXPECT_EQ(half.losses, off.losses);
  EXPECT_EQ(all.first_param, off.first_param);
  EXPECT_FALSE(all.first_param.empty());
  EXPECT_TRUE(absl::StrContains(all.trace, "L0 recompute"));
  EXPECT_TRUE(absl::StrContains(all.trace, "L1 recompute"));
  // Selective: the MLP is recomputed, attention is not.
  EXPECT_TRUE(absl::StrContains(mlp.trace, "L1 recompute gate_proj fwd"));
  EXPECT_FALSE(absl::StrContains(mlp.trace, "L1 recompute attention fwd"));
  EXPECT_TRUE(absl::StrContains(half.trace, "L0 recompute"));
  EXPECT_FALSE(absl::StrContains(half.trace, "L1 recompute"));
  EXPECT_FALSE(absl::StrContains(off.trace, "recompute"));
}

// In timing mode on a real shape: the arena and the device peak shrink by
// most of the activations, and backward pays for the recompute.
TEST(CheckpointingTest, TimingModeShowsMemorySavedAndRecomputeCost) {
  zero::ZeroOptions o = Options(0);
  o.dtype = runtime::DType::kBF16;
  o.seq = 1024;
  o.offload_optimizer = true;
  const Measured off = Measure("qwen2.5-0.5b", o, sim::SimMode::kTiming);
  o.checkpoint_every = 1;
  const Measured on = Measure("qwen2.5-0.5b", o, sim::SimMode::kTiming);
  o.checkpoint_every = 4;
  const Measured quarter = Measure("qwen2.5-0.5b", o, sim::SimMode::kTiming);
  EXPECT_LT(on.activation_bytes, off.activation_bytes / 3);
  EXPECT_LT(on.activation_bytes, quarter.activation_bytes);
  EXPECT_LT(quarter.activation_bytes, off.activation_bytes);
  EXPECT_LT(on.device_peak, off.device_peak);
  EXPECT_GT(on.bwd_ns, off.bwd_ns);
  EXPECT_GT(on.bwd_ns, quarter.bwd_ns);
  o.checkpoint_every = 1;
  o.checkpoint_mlp_only = true;
  const Measured mlp = Measure("qwen2.5-0.5b", o, sim::SimMode::kTiming);
  EXPECT_LT(on.activation_bytes, mlp.activation_bytes);
  EXPECT_LT(mlp.activation_bytes, off.activation_bytes / 2);
  EXPECT_LT(mlp.bwd_ns, on.bwd_ns);
  EXPECT_GT(mlp.bwd_ns, off.bwd_ns);
}

// The coordinator's trace holds the recompute's visits, the same every step,
// so from the second step on it prefetches through them: backward is shorter
// with prefetch than without.
TEST(CheckpointingTest, PrefetchFollowsTheRecompute) {
  zero::ZeroOptions o = Options(1);
  o.dtype = runtime::DType::kBF16;
  o.seq = 1024;
  o.offload_optimizer = true;
  const Measured prefetch = Measure("qwen2.5-0.5b", o, sim::SimMode::kTiming);
  o.prefetch_bucket_size = 0;
  const Measured none = Measure("qwen2.5-0.5b", o, sim::SimMode::kTiming);
  EXPECT_LT(prefetch.bwd_ns, none.bwd_ns);
}

}  // namespace
}  // namespace engine
}  // namespace zero3
