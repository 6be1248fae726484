// Copyright 2026 The zero3 Authors.
//
// memory_plan.h: `zero3 train`'s memory preflight.
//
// Before a run allocates anything, PlanMemory estimates what each rank will
// need (tools/preflight/memory_estimate.h), works out the pinned-memory
// budget (zero3.max_pinned_bytes, or by default half of the node's host
// memory shared by its ranks) and reads what is available: on the
// simulator the profile's device memory, on GPUs the free memory each rank
// reads once its device is up (CheckDeviceOnRank); host memory from
// /proc/meminfo and the cgroup. The ranks that share the node's host memory
// are every rank on the simulator, and on GPUs LOCAL_WORLD_SIZE (torchrun,
// zero3 launch), OMPI_COMM_WORLD_LOCAL_SIZE (Open MPI), MPI_LOCALNRANKS
// (MPICH, Intel MPI), SLURM_NTASKS_PER_NODE, or this node's group of
// SLURM_TASKS_PER_NODE (srun without --ntasks-per-node), else one.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_MEMORY_PLAN_H_
#define ZERO3_TOOLS_CLI_INTERNAL_MEMORY_PLAN_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/config/config.pb.h"
#include "core/model/model_spec.pb.h"
#include "core/runtime/device.h"
#include "core/zero/options.h"
#include "sim/profile.pb.h"
#include "tools/cli/internal/launcher_factory.h"
#include "tools/preflight/memory_check.h"
#include "tools/preflight/memory_estimate.h"

namespace zero3 {
namespace cli {
namespace internal {

struct PlanInput {
  model::ModelSpec spec;
  zero::ZeroOptions options;
  config::Config config;  // resolved: the zero3 section's pinned keys
  sim::HardwareProfile profile;
  bool gpu = false;       // --backend cuda
  bool data_mode = true;  // the simulator's --mode
  int64_t world_size = 1;
  EnvLookup env;  // for the local rank count on GPUs
};

struct MemoryPlan {
  preflight::MemoryEstimate estimate;
  preflight::Available available;
  preflight::RunShape shape;
  // What the backend is given: the per-rank pinned limit (0: none) and the
  // fallback.
  int64_t max_pinned_bytes = 0;
  bool pinned_fallback = false;

  // The device (where known before start), pinned and host checks.
  absl::Status Check() const;
  // The device check against the free memory of `device` (GPU runs, once
  // the device is up; a no-op on the simulator, checked before start).
  absl::Status CheckDeviceOnRank(const runtime::Device& device) const;
  // A line for before the start-up where a rank's host memory is 16 GiB or
  // more (allocating, filling and initializing it takes tens of seconds);
  // empty otherwise.
  std::string StartUpNote(bool from_checkpoint) const;
};

absl::StatusOr<MemoryPlan> PlanMemory(const PlanInput& input);

// Ranks on this node per the launcher's environment (see the file
// comment); 1 when none says.
int64_t LocalRanksOnNode(const EnvLookup& env);

}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_MEMORY_PLAN_H_
