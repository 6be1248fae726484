// Copyright 2026 The zero3 Authors.
//
// Activation checkpointing in the engine: the activation arena and the
// device-memory peak shrink, the recompute appears in backward (and costs
// virtual time), prefetch follows it, and values are bit-identical to the run
// without it.

#include <cstdio>
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
  size_t races = 0;
};

// Two steps on two simulated ranks, rank 0's figures.
// layers > 0 replaces the model's number of layers.
Measured Measure(const std::string& model, const zero::ZeroOptions& o,
                 sim::SimMode mode, int layers = 0) {
  model::ModelSpec spec = model::LoadModelSpec(model).value();
  if (layers > 0) spec.set_num_layers(layers);
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
  m.races = (*world)->races().size();
  return m;
}

// The device peak and the backward time of `before` and `after`.
void PrintChange(const Measured& before, const Measured& after) {
  std::printf("device peak %lld -> %lld bytes, bwd %lld -> %lld ns\n",
              static_cast<long long>(before.device_peak),
              static_cast<long long>(after.device_peak),
              static_cast<long long>(before.bwd_ns),
              static_cast<long long>(after.bwd_ns));
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

// cpu_checkpointing: the kept layer inputs go to host memory and back, the
// values stay bit-identical, and no race is reported (four layers: both
// device slots are reused in forward and backward).
TEST(CheckpointingTest, CpuCheckpointingIsBitIdentical) {
  for (int every : {1, 2}) {
    for (runtime::DType dtype : {runtime::DType::kF32, runtime::DType::kBF16}) {
      zero::ZeroOptions o = Options(every);
      o.dtype = dtype;
      o.accumulation = 2;
      const Measured device = Measure("tiny", o, sim::SimMode::kData, 4);
      o.checkpoint_to_host = true;
      const Measured host = Measure("tiny", o, sim::SimMode::kData, 4);
      EXPECT_EQ(host.losses, device.losses) << every;
      EXPECT_EQ(host.first_param, device.first_param) << every;
      EXPECT_FALSE(host.first_param.empty());
      EXPECT_EQ(host.races, 0u);
      // Every other layer: two kept inputs, as many as the slots.
      if (every == 1) {
        EXPECT_LT(host.activation_bytes, device.activation_bytes);
      } else {
        EXPECT_EQ(host.activation_bytes, device.activation_bytes);
      }
      EXPECT_TRUE(absl::StrContains(host.trace, "L0 input D2H"));
      EXPECT_TRUE(absl::StrContains(host.trace, "L0 input H2D"));
      EXPECT_FALSE(absl::StrContains(device.trace, "input D2H"));
    }
  }
}

// In timing mode on a real shape: the device holds two kept inputs instead
// of one per layer, so the arena and the device peak drop by the others,
// and the copies appear in the trace.
TEST(CheckpointingTest, CpuCheckpointingLowersTheDevicePeak) {
  zero::ZeroOptions o = Options(1);
  o.dtype = runtime::DType::kBF16;
  o.seq = 1024;
  o.offload_optimizer = true;
  const Measured device = Measure("qwen2.5-0.5b", o, sim::SimMode::kTiming);
  o.checkpoint_to_host = true;
  const Measured host = Measure("qwen2.5-0.5b", o, sim::SimMode::kTiming);
  const model::ModelSpec spec = model::LoadModelSpec("qwen2.5-0.5b").value();
  const int64_t input = o.micro_batch * o.seq * spec.hidden_size() * 2;
  EXPECT_EQ(device.activation_bytes - host.activation_bytes,
            (spec.num_layers() - 2) * input);
  EXPECT_LE(host.device_peak,
            device.device_peak - (spec.num_layers() - 2) * input);
  EXPECT_TRUE(absl::StrContains(host.trace, "L23 input D2H"));
  EXPECT_TRUE(absl::StrContains(host.trace, "L0 input H2D"));
  PrintChange(device, host);
}

// The chunked LM head in timing mode: the logits leave the arena and the
// device peak (less the chunk buffer and the fp32 weight-gradient sum, as far
// as they exceed the backward scratch they overlay), and backward pays for
// the head's recompute GEMM.
TEST(CheckpointingTest, ChunkedHeadLowersTheDevicePeak) {
  zero::ZeroOptions o = Options(1);
  o.dtype = runtime::DType::kBF16;
  o.micro_batch = 8;
  o.seq = 1024;
  o.offload_optimizer = true;
  const Measured whole = Measure("qwen2.5-0.5b", o, sim::SimMode::kTiming);
  o.lm_head_chunk_tokens = 1024;
  const Measured chunked = Measure("qwen2.5-0.5b", o, sim::SimMode::kTiming);
  const model::ModelSpec spec = model::LoadModelSpec("qwen2.5-0.5b").value();
  const int64_t logits = o.micro_batch * o.seq * spec.vocab_size() * 2;
  const int64_t added =
      1024 * spec.vocab_size() * 2 + spec.vocab_size() * spec.hidden_size() * 4;
  EXPECT_LE(chunked.activation_bytes, whole.activation_bytes - logits + added);
  EXPECT_LT(chunked.device_peak, whole.device_peak - logits / 2);
  EXPECT_GT(chunked.bwd_ns, whole.bwd_ns);
  EXPECT_TRUE(absl::StrContains(chunked.trace, "lm_head recompute chunk 7"));
  EXPECT_FALSE(absl::StrContains(chunked.trace, "lm_head recompute chunk 8"));
  EXPECT_FALSE(absl::StrContains(whole.trace, "lm_head recompute"));
  PrintChange(whole, chunked);
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
