// Copyright 2026 The zero3 Authors.

#include "tools/preflight/memory_estimate.h"

#include <algorithm>
#include <memory>

#include "core/engine/engine.h"
#include "core/model/data.h"
#include "core/util/status_macros.h"
#include "sim/simulator.h"
#include "tools/preflight/counting_runtime.h"

namespace zero3 {
namespace preflight {
namespace {

// Step 1 records the module order; step 2 prefetches like all later steps.
constexpr int kSteps = 2;

}  // namespace

int64_t MemoryEstimate::HostBytesPerRank() const {
  return pinned_bytes + pageable_bytes +
         (device_in_host_memory ? device_bytes : 0);
}

int64_t MemoryEstimate::HostBytesPerNode() const {
  return HostBytesPerRank() * local_ranks;
}

absl::StatusOr<MemoryEstimate> EstimateMemory(const EstimateInput& input) {
  sim::SimOptions so;
  so.profile = input.profile;
  // The device's capacity must not stop the count: the check compares it.
  so.profile.mutable_gpu()->set_memory_gib(1e9);
  so.world_size = static_cast<int>(input.world_size);
  so.mode = sim::SimMode::kTiming;
  so.detect_races = false;
  so.symmetric = true;
  if (input.pinned_fallback) {
    so.max_pinned_bytes = input.max_pinned_bytes;
    so.pinned_fallback = true;
  }
  ZR_ASSIGN_OR_RETURN(auto world, sim::SimWorld::Create(so));
  auto data = model::SyntheticBatches(input.spec.vocab_size(), 0);
  MemoryEstimate e;
  e.local_ranks = input.local_ranks;
  e.device_in_host_memory = input.device_in_host_memory;
  ZR_RETURN_IF_ERROR(world->Run([&](runtime::Runtime& sim_rt) -> absl::Status {
    CountingRuntime rt(sim_rt);
    {
      ZR_ASSIGN_OR_RETURN(
          auto engine,
          engine::Engine::Create(input.spec, input.options, data.get(), rt));
      for (int s = 0; s < kSteps; ++s) {
        ZR_RETURN_IF_ERROR(engine->Step().status());
      }
      e.nvme_bytes = engine->nvme_bytes();
      e.param_nvme_bytes = engine->param_nvme_bytes();
    }
    e.device_bytes = rt.device().memory_stats().peak_bytes_in_use;
    const runtime::PinnedMemoryStats pinned = rt.pinned_memory().stats();
    e.pinned_bytes = pinned.peak_bytes;
    e.fallback_bytes = pinned.fallback_bytes;
    e.pageable_bytes = rt.pageable_peak_bytes();
    return absl::OkStatus();
  }));
  return e;
}

}  // namespace preflight
}  // namespace zero3
