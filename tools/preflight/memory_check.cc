// Copyright 2026 The zero3 Authors.

#include "tools/preflight/memory_check.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/runtime/pinned_memory.h"

namespace zero3 {
namespace preflight {
namespace {

using runtime::FormatBytes;

std::string Fixes(const std::vector<std::string>& fixes) {
  return absl::StrCat("to fit: ", absl::StrJoin(fixes, "; "));
}

}  // namespace

absl::Status CheckDevice(const MemoryEstimate& e, const Available& a,
                         const RunShape& run) {
  if (a.device_free_bytes < 0 || e.device_bytes <= a.device_free_bytes) {
    return absl::OkStatus();
  }
  std::vector<std::string> fixes;
  if (!run.offload_param) {
    fixes.push_back(
        "offload the parameters (--set "
        "zero_optimization.offload_param.device=cpu)");
  }
  if (!run.offload_optimizer) {
    fixes.push_back(
        "offload the optimizer (--set "
        "zero_optimization.offload_optimizer.device=cpu)");
  }
  if (run.streams_all) {
    fixes.push_back(
        "zero3.offloaded_step \"auto\" (streams only the share that fits; "
        "the streamed elements' gradients stay on the device, 4 bytes each)");
  }
  if (run.streamed_slots > 2) {
    fixes.push_back(
        absl::StrCat("fewer device slots for the streamed optimizer state "
                     "(zero3.offloaded_step_buffers, ",
                     run.streamed_slots, " now; at least 2)"));
  }
  fixes.push_back("more ranks (each holds a smaller shard)");
  fixes.push_back(
      "a smaller micro-batch (train_micro_batch_size_per_gpu) or --seq");
  return absl::ResourceExhaustedError(absl::StrCat(
      "not enough device memory: each rank needs about ",
      FormatBytes(e.device_bytes), ", ", FormatBytes(a.device_free_bytes),
      " free (", a.device_source, "); ", Fixes(fixes),
      " (zero3 train --dry-run prints the estimate)"));
}

absl::Status CheckPinned(const MemoryEstimate& e, const Available& a) {
  if (a.pinned_budget_bytes <= 0 || a.pinned_fallback ||
      e.pinned_bytes <= a.pinned_budget_bytes) {
    return absl::OkStatus();
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      "not enough pinned host memory: each rank pins about ",
      FormatBytes(e.pinned_bytes), ", over the ",
      FormatBytes(a.pinned_budget_bytes),
      " per-rank budget of "
      "zero3.max_pinned_bytes",
      a.pinned_budget_is_default
          ? " (by default half of this node's host memory shared by its "
            "ranks)"
          : "",
      "; ",
      Fixes({"raise zero3.max_pinned_bytes (--max-pinned-bytes)",
             "zero3.pinned_fallback: pageable (what does not fit is "
             "pageable, copies from it are slower)",
             "pin_memory: false in zero_optimization.offload_optimizer / "
             "offload_param",
             "a smaller micro-batch (train_micro_batch_size_per_gpu)"})));
}

absl::Status CheckHost(const MemoryEstimate& e, const Available& a,
                       const RunShape& run) {
  const int64_t available = a.host.AvailableBytes();
  const int64_t need = e.HostBytesPerNode();
  if (!run.allocates || available < 0 || need <= available) {
    return absl::OkStatus();
  }
  std::vector<std::string> fixes;
  if (run.simulator_data_mode) {
    fixes.push_back(
        "--mode timing (costs every step without values, any "
        "model size)");
  }
  fixes.push_back(run.simulator_data_mode
                      ? "fewer ranks (--ranks)"
                      : "fewer ranks on this node (--nproc-per-node)");
  if (!run.simulator_data_mode && run.offload_param) {
    fixes.push_back(
        "keep the parameters on the device (offload_param "
        "device none)");
  }
  fixes.push_back(
      "a smaller micro-batch (train_micro_batch_size_per_gpu) or --seq");
  if (run.bf16_states_possible) {
    fixes.push_back(
        "bf16 master weights and optimizer states "
        "(bf16.bf16_master_weights_and_grads and bf16_optimizer_states true: "
        "6 bytes of host state per parameter instead of 12)");
  }
  if (run.speculative) {
    fixes.push_back(absl::StrCat(
        "offload_optimizer.super_offload false (its second host copy of the "
        "master and moments takes ",
        run.host_state_bytes, " bytes per host-share element)"));
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      "not enough host memory: this node's ", e.local_ranks,
      e.device_in_host_memory ? " simulated" : "", " rank",
      e.local_ranks == 1 ? "" : "s", " need about ", FormatBytes(need), " (",
      FormatBytes(e.HostBytesPerRank()), " each: pinned ",
      FormatBytes(e.pinned_bytes), ", pageable ", FormatBytes(e.pageable_bytes),
      e.device_in_host_memory
          ? absl::StrCat(", device ", FormatBytes(e.device_bytes),
                         " kept in host RAM by the simulator in data mode")
          : "",
      "), ", a.host.Describe(), "; ", Fixes(fixes),
      " (zero3 train --dry-run prints the estimate)"));
}

absl::Status CheckNvme(const MemoryEstimate& e, const Available& a,
                       const RunShape& run) {
  if (!run.allocates) return absl::OkStatus();
  struct Use {
    const char* what;
    const char* key;
    const std::string& path;
    int64_t bytes, free;
  };
  const Use uses[] = {
      {"the optimizer state", "zero_optimization.offload_optimizer.nvme_path",
       run.nvme_path, e.nvme_bytes, a.nvme_free_bytes},
      {"the parameters", "zero_optimization.offload_param.nvme_path",
       run.param_nvme_path, e.param_nvme_bytes, a.param_nvme_free_bytes}};
  const bool both = !run.nvme_path.empty() && !run.param_nvme_path.empty();
  for (const Use& u : uses) {
    if (u.path.empty()) continue;
    if (u.free < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(u.key, " '", u.path,
                       "' is not a directory: create it on the drive "
                       "to swap ",
                       u.what, " to, or set ", u.key, " to one"));
    }
    // Both swap files on one file system: each path's check counts both.
    const int64_t per_rank = both && a.nvme_paths_share_drive
                                 ? e.nvme_bytes + e.param_nvme_bytes
                                 : u.bytes;
    const int64_t need = per_rank * e.local_ranks;
    if (need <= u.free) continue;
    return absl::ResourceExhaustedError(absl::StrCat(
        per_rank == u.bytes ? u.what : "the optimizer state and the parameters",
        " on NVMe need ", FormatBytes(need), " under '", u.path, "' (",
        e.local_ranks, " rank", e.local_ranks == 1 ? "" : "s", " x ",
        FormatBytes(per_rank), "), which has ", FormatBytes(u.free),
        " free: free space there, set ", u.key,
        " to a larger drive, or add nodes (each rank's share shrinks with the "
        "data-parallel size)"));
  }
  return absl::OkStatus();
}

absl::Status CheckMemory(const MemoryEstimate& e, const Available& a,
                         const RunShape& run) {
  if (absl::Status s = CheckNvme(e, a, run); !s.ok()) return s;
  if (absl::Status s = CheckDevice(e, a, run); !s.ok()) return s;
  if (absl::Status s = CheckHost(e, a, run); !s.ok()) return s;
  return CheckPinned(e, a);
}

std::string MemlockNote(const MemoryEstimate& e, const Available& a) {
  if (a.memlock_bytes < 0 || a.memlock_bytes >= e.pinned_bytes) return "";
  return absl::StrCat(
      "RLIMIT_MEMLOCK is ", FormatBytes(a.memlock_bytes), ", below the ",
      FormatBytes(e.pinned_bytes),
      " a rank pins: CUDA's pinning (cudaHostAlloc) is not bound by it, "
      "mlock-based registration (RDMA) is; raise it with ulimit -l");
}

std::string FormatEstimate(const MemoryEstimate& e, const Available& a,
                           const RunShape& run) {
  const std::string node = absl::StrCat("per node (", e.local_ranks, ")");
  std::string out = absl::StrFormat(
      "memory estimate (rank 0's peaks over two simulated steps; every rank "
      "alike):\n  %-22s %12s %14s  %s\n",
      "", "per rank", node, "available");
  auto row = [&](const std::string& name, int64_t rank, int64_t per_node,
                 const std::string& available) {
    absl::StrAppendFormat(
        &out, "  %-22s %12s %14s  %s\n", name, FormatBytes(rank),
        per_node < 0 ? "-" : FormatBytes(per_node), available);
  };
  row(e.device_in_host_memory ? "device (in host RAM)" : "device",
      e.device_bytes, -1,
      a.device_free_bytes < 0 ? "checked on the GPU at start-up"
                              : absl::StrCat(FormatBytes(a.device_free_bytes),
                                             " free (", a.device_source, ")"));
  row("pinned host", e.pinned_bytes, e.pinned_bytes * e.local_ranks,
      a.pinned_budget_bytes <= 0
          ? "no budget"
          : absl::StrCat("budget ", FormatBytes(a.pinned_budget_bytes),
                         " per rank (zero3.max_pinned_bytes",
                         a.pinned_budget_is_default ? ", default" : "", ")"));
  row("pageable host", e.pageable_bytes, e.pageable_bytes * e.local_ranks,
      e.fallback_bytes > 0 ? absl::StrCat(FormatBytes(e.fallback_bytes),
                                          " of it fell back from pinned")
                           : "");
  row("host total", e.HostBytesPerRank(), e.HostBytesPerNode(),
      run.allocates ? a.host.Describe()
                    : "not allocated (timing mode: the profile's host)");
  auto nvme_row = [&](const std::string& name, int64_t bytes,
                      const std::string& path, int64_t free) {
    if (path.empty()) return;
    row(name, bytes, bytes * e.local_ranks,
        free < 0 ? absl::StrCat(path, ": not a directory")
                 : absl::StrCat(FormatBytes(free), " free under ", path));
  };
  nvme_row("NVMe (optimizer)", e.nvme_bytes, run.nvme_path, a.nvme_free_bytes);
  nvme_row("NVMe (parameters)", e.param_nvme_bytes, run.param_nvme_path,
           a.param_nvme_free_bytes);
  const std::string memlock = MemlockNote(e, a);
  if (!memlock.empty()) absl::StrAppend(&out, "note: ", memlock, "\n");
  return out;
}

}  // namespace preflight
}  // namespace zero3
