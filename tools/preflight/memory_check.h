// Copyright 2026 The zero3 Authors.
//
// memory_check.h: a memory estimate against what the machine has.
//
// Each check compares one resource - device memory per rank, pinned host
// memory per rank against its budget (zero3.max_pinned_bytes), host memory
// of the node's ranks against what the host and its cgroup leave - and,
// when the estimate does not fit, returns ResourceExhausted with the
// estimate, what is available and the changes that make the run fit.
// FormatEstimate prints the estimate as `zero3 train --dry-run` shows it.

#ifndef ZERO3_TOOLS_PREFLIGHT_MEMORY_CHECK_H_
#define ZERO3_TOOLS_PREFLIGHT_MEMORY_CHECK_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "core/runtime/host_memory.h"
#include "tools/preflight/memory_estimate.h"

namespace zero3 {
namespace preflight {

struct Available {
  // Free device memory of one rank's device, and where the figure comes
  // from ("h200_sxm, simulated"); -1 when only the GPU can say (checked
  // once it is up).
  int64_t device_free_bytes = -1;
  std::string device_source;
  runtime::HostMemoryInfo host;
  // Pinned memory one rank may hold; 0 for no limit.
  int64_t pinned_budget_bytes = 0;
  bool pinned_budget_is_default = true;
  bool pinned_fallback = false;
  // RLIMIT_MEMLOCK in bytes, -1 unlimited.
  int64_t memlock_bytes = -1;
  // With the optimizer state on NVMe: the free space of the file system
  // holding nvme_path (-1: not a directory, or not read).
  int64_t nvme_free_bytes = -1;
  // With the parameters on NVMe: likewise for offload_param.nvme_path, and
  // whether both paths are on one file system (their files share it).
  int64_t param_nvme_free_bytes = -1;
  bool nvme_paths_share_drive = false;
};

// What the run is, for the fixes a message suggests.
struct RunShape {
  // False on the simulator in timing mode: nothing is allocated, the host
  // is the profile's and not this machine (no host check).
  bool allocates = true;
  bool simulator_data_mode = false;
  bool offload_param = false;
  bool offload_optimizer = false;
  // The speculative host step (the host step plan's speculative): a second host
  // master and moments, host_state_bytes per host-share element.
  bool speculative = false;
  // Bytes of master and moments per host-share element: 12 in fp32, 6 with
  // bf16 master weights and optimizer states.
  int host_state_bytes = 12;
  // A bf16 model whose host state is fp32: bf16 states would halve it.
  bool bf16_states_possible = false;
  // zero3.offloaded_step streaming state through the device: its slots
  // (offloaded_step_buffers; 0 when nothing streams), and whether all of
  // the offloaded state streams ("device").
  int streamed_slots = 0;
  bool streams_all = false;
  // offload_optimizer.nvme_path with the state on NVMe; empty without.
  std::string nvme_path;
  // offload_param.nvme_path with the parameters on NVMe; empty without.
  std::string param_nvme_path;
};

absl::Status CheckDevice(const MemoryEstimate& e, const Available& a,
                         const RunShape& run);
absl::Status CheckPinned(const MemoryEstimate& e, const Available& a);
absl::Status CheckHost(const MemoryEstimate& e, const Available& a,
                       const RunShape& run);
// With the optimizer state or the parameters on NVMe: each nvme_path is a
// directory (InvalidArgument otherwise) whose file system has room for the
// node's ranks' swap files, both kinds where the two share it
// (ResourceExhausted naming the need, the free space and the fixes).
absl::Status CheckNvme(const MemoryEstimate& e, const Available& a,
                       const RunShape& run);
// The four checks, first failure first: NVMe, device, host, pinned.
absl::Status CheckMemory(const MemoryEstimate& e, const Available& a,
                         const RunShape& run);

// A table: each resource per rank, per node and what is available; a line
// on RLIMIT_MEMLOCK where it is below the pinned estimate.
std::string FormatEstimate(const MemoryEstimate& e, const Available& a,
                           const RunShape& run);

// One line when RLIMIT_MEMLOCK is below the pinned estimate, else empty.
std::string MemlockNote(const MemoryEstimate& e, const Available& a);

}  // namespace preflight
}  // namespace zero3

#endif  // ZERO3_TOOLS_PREFLIGHT_MEMORY_CHECK_H_
