// Copyright 2026 The zero3 Authors.
//
// memory_estimate.h: the memory a training run will need, before it runs.
//
// The estimate is the engine's own allocations: rank 0 of the run's
// configuration is simulated in timing mode (nothing is allocated, nothing
// computed; every rank of a ZeRO-3 group allocates alike, padded shards
// included) for two steps - the first records the module order, the second
// prefetches as every later step does - and its peaks are read: device
// memory (Device::memory_stats), pinned host memory (PinnedMemoryTracker)
// and pageable host memory (CountingRuntime). It takes a fraction of a
// second for any model size and any number of ranks.
//
// Per node, host memory is the local ranks' pinned and pageable memory and,
// on the simulator in data mode, their device memory too: simulated ranks
// keep their device memory in this machine's RAM.
//
// Not counted: the CUDA context and library workspaces (the GPU's free
// memory is read after they exist), the caching allocator's rounding, and
// the temporary buffers of saving or resuming a checkpoint and of
// --check-reference's reference trainer.

#ifndef ZERO3_TOOLS_PREFLIGHT_MEMORY_ESTIMATE_H_
#define ZERO3_TOOLS_PREFLIGHT_MEMORY_ESTIMATE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/model/model_spec.pb.h"
#include "core/zero/options.h"
#include "sim/profile.pb.h"

namespace zero3 {
namespace preflight {

struct EstimateInput {
  model::ModelSpec spec;
  zero::ZeroOptions options;
  sim::HardwareProfile profile;  // for the device's capacity
  int64_t world_size = 1;
  // Ranks that share this node's host memory.
  int64_t local_ranks = 1;
  // The simulator in data mode: device memory lives in host RAM.
  bool device_in_host_memory = false;
  // The pinned budget per rank (0: none) and whether allocations over it
  // become pageable (zero3.pinned_fallback: pageable); with the fallback
  // the estimate splits pinned and pageable memory as the run will.
  int64_t max_pinned_bytes = 0;
  bool pinned_fallback = false;
};

struct MemoryEstimate {
  // Rank 0's peaks; every rank's are the same.
  int64_t device_bytes = 0;
  int64_t pinned_bytes = 0;
  int64_t pageable_bytes = 0;
  // Of the pinned memory asked for, how much falls back to pageable (in
  // pageable_bytes); 0 without the fallback.
  int64_t fallback_bytes = 0;
  // With the optimizer state on NVMe: one rank's swap file; with the
  // parameters on NVMe, its other one.
  int64_t nvme_bytes = 0;
  int64_t param_nvme_bytes = 0;
  int64_t local_ranks = 1;
  bool device_in_host_memory = false;

  // Host memory of one rank and of the node's ranks.
  int64_t HostBytesPerRank() const;
  int64_t HostBytesPerNode() const;
};

// Simulates rank 0 of `input` (see the file comment). Errors are the
// engine's for a configuration it cannot run.
absl::StatusOr<MemoryEstimate> EstimateMemory(const EstimateInput& input);

}  // namespace preflight
}  // namespace zero3

#endif  // ZERO3_TOOLS_PREFLIGHT_MEMORY_ESTIMATE_H_
