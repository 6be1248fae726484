// Copyright 2026 The zero3 Authors.
//
// The estimate against what real runs use: each configuration is trained
// for three steps on the simulator in data mode (buffers hold bytes, every
// rank simulated), and rank 0's device, pinned and pageable peaks must be
// within 10% of the estimate.

#include "tools/preflight/memory_estimate.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <string>

#include "core/engine/engine.h"
#include "core/model/data.h"
#include "core/model/presets.h"
#include "core/util/status_macros.h"
#include "gtest/gtest.h"
#include "sim/profiles.h"
#include "sim/simulator.h"
#include "testing/status_matchers.h"
#include "tools/preflight/counting_runtime.h"

namespace zero3 {
namespace preflight {
namespace {

using ::zero3::testing::IsOk;

constexpr double kTolerance = 0.10;

struct Case {
  std::string name;
  int ranks = 2;
  zero::ZeroOptions options;
};

struct Peaks {
  int64_t device = 0;
  int64_t pinned = 0;
  int64_t pageable = 0;
};

// Rank 0's peaks over three data-mode steps.
Peaks Measure(const model::ModelSpec& spec, const Case& c,
              const sim::HardwareProfile& profile) {
  sim::SimOptions so;
  so.profile = profile;
  so.world_size = c.ranks;
  so.mode = sim::SimMode::kData;
  auto world = sim::SimWorld::Create(so).value();
  auto data = model::SyntheticBatches(spec.vocab_size(), 1);
  Peaks peaks;
  EXPECT_THAT(world->Run([&](runtime::Runtime& sim_rt) -> absl::Status {
    CountingRuntime rt(sim_rt);
    ZR_ASSIGN_OR_RETURN(
        auto engine, engine::Engine::Create(spec, c.options, data.get(), rt));
    for (int s = 0; s < 3; ++s) ZR_RETURN_IF_ERROR(engine->Step().status());
    if (rt.rank() == 0) {
      peaks.device = rt.device().memory_stats().peak_bytes_in_use;
      peaks.pinned = rt.pinned_memory().stats().peak_bytes;
      peaks.pageable = rt.pageable_peak_bytes();
    }
    return absl::OkStatus();
  }),
              IsOk());
  return peaks;
}

void ExpectNear(const std::string& what, int64_t estimate, int64_t measured) {
  const double error =
      std::abs(static_cast<double>(estimate) - static_cast<double>(measured)) /
      std::max<double>(1, measured);
  EXPECT_LE(error, kTolerance)
      << what << ": estimate " << estimate << ", measured " << measured;
}

std::vector<Case> Cases() {
  zero::ZeroOptions base;
  base.micro_batch = 2;
  base.seq = 16;
  base.param_persistence_threshold = 0;  // every parameter gathered
  std::vector<Case> cases;
  cases.push_back({"device optimizer", 2, base});
  Case offload{"optimizer offload", 2, base};
  offload.options.offload_optimizer = true;
  cases.push_back(offload);
  Case both{"parameter and optimizer offload, 4 ranks", 4, offload.options};
  both.options.offload_param = true;
  cases.push_back(both);
  Case bf16{"bf16, accumulation 2, pageable", 2, offload.options};
  bf16.options.dtype = kernels::DType::kBF16;
  bf16.options.accumulation = 2;
  bf16.options.optimizer_pin_memory = false;
  cases.push_back(bf16);
  Case one{"one rank, default persistence", 1, base};
  one.options.param_persistence_threshold = 100000;
  one.options.micro_batch = 4;
  one.options.seq = 32;
  cases.push_back(one);
  Case host{"cpu checkpointing", 2, offload.options};
  host.options.checkpoint_every = 1;
  host.options.checkpoint_to_host = true;
  cases.push_back(host);
  return cases;
}

TEST(MemoryEstimateTest, WithinTenPercentOfDataModePeaks) {
  const model::ModelSpec spec = model::LoadModelSpec("tiny").value();
  const sim::HardwareProfile profile = sim::LoadProfile("h200_sxm").value();
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    EstimateInput in;
    in.spec = spec;
    in.options = c.options;
    in.profile = profile;
    in.world_size = c.ranks;
    in.local_ranks = c.ranks;
    in.device_in_host_memory = true;
    const absl::StatusOr<MemoryEstimate> e = EstimateMemory(in);
    ASSERT_THAT(e.status(), IsOk());
    const Peaks measured = Measure(spec, c, profile);
    ASSERT_GT(measured.device, 0);
    std::cout << c.name << ": device " << e->device_bytes << " vs "
              << measured.device << ", pinned " << e->pinned_bytes << " vs "
              << measured.pinned << ", pageable " << e->pageable_bytes << " vs "
              << measured.pageable << " (estimate vs measured)\n";
    ExpectNear("device", e->device_bytes, measured.device);
    ExpectNear("pinned", e->pinned_bytes, measured.pinned);
    ExpectNear("pageable", e->pageable_bytes, measured.pageable);
    EXPECT_EQ(
        e->HostBytesPerNode(),
        c.ranks * (e->device_bytes + e->pinned_bytes + e->pageable_bytes));
  }
}

TEST(MemoryEstimateTest, FallbackMovesPinnedToPageable) {
  EstimateInput in;
  in.spec = model::LoadModelSpec("tiny").value();
  in.options.offload_optimizer = true;
  in.profile = sim::LoadProfile("h200_sxm").value();
  in.world_size = 2;
  const MemoryEstimate all = EstimateMemory(in).value();
  in.max_pinned_bytes = all.pinned_bytes / 2;
  in.pinned_fallback = true;
  const MemoryEstimate split = EstimateMemory(in).value();
  EXPECT_LE(split.pinned_bytes, in.max_pinned_bytes);
  EXPECT_GT(split.fallback_bytes, 0);
  EXPECT_EQ(split.pinned_bytes + split.pageable_bytes,
            all.pinned_bytes + all.pageable_bytes);
}

// cpu_checkpointing moves the kept layer inputs but two from device memory
// to pinned host memory, all of them.
TEST(MemoryEstimateTest, CpuCheckpointingCountsItsPinnedInputs) {
  EstimateInput in;
  in.spec = model::LoadModelSpec("qwen2.5-0.5b").value();
  in.options.micro_batch = 2;
  in.options.seq = 1024;
  in.options.dtype = kernels::DType::kBF16;
  in.options.offload_optimizer = true;
  in.options.checkpoint_every = 1;
  in.profile = sim::LoadProfile("h200_sxm").value();
  const MemoryEstimate device = EstimateMemory(in).value();
  in.options.checkpoint_to_host = true;
  const MemoryEstimate host = EstimateMemory(in).value();
  const int64_t layers = in.spec.num_layers();
  const int64_t input = 2 * 1024 * in.spec.hidden_size() * 2;
  EXPECT_EQ(host.pinned_bytes - device.pinned_bytes, layers * input);
  EXPECT_LE(host.device_bytes, device.device_bytes - (layers - 2) * input);
}

TEST(MemoryEstimateTest, SevenBillionParametersCostNothingToEstimate) {
  EstimateInput in;
  in.spec = model::LoadModelSpec("qwen2.5-7b").value();
  in.options.micro_batch = 4;
  in.options.seq = 64;
  in.options.offload_optimizer = true;
  in.profile = sim::LoadProfile("h200_sxm").value();
  in.world_size = 1;
  in.device_in_host_memory = true;
  const MemoryEstimate e = EstimateMemory(in).value();
  // 7.6e9 parameters: a 4-byte fp32 shard on the device and 12 bytes of
  // master and moments on the host, at least.
  EXPECT_GT(e.device_bytes, int64_t{28} << 30);
  EXPECT_GT(e.pageable_bytes, int64_t{80} << 30);
}

}  // namespace
}  // namespace preflight
}  // namespace zero3
