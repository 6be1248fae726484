// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/memory_plan.h"

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/config/modes.h"
#include "core/kernels/dtype.h"
#include "core/runtime/host_memory.h"
#include "core/runtime/pinned_memory.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace cli {
namespace internal {

namespace {

// Slurm's SLURM_TASKS_PER_NODE ("2(x3),1": two tasks on each of three
// nodes, then one) at node `node` (SLURM_NODEID), or the first node's
// count when the node is unknown; 0 when unreadable.
int64_t SlurmTasksOnNode(const std::string& layout, int64_t node) {
  int64_t seen = 0, first = 0;
  for (absl::string_view group : absl::StrSplit(layout, ',')) {
    const size_t paren = group.find('(');
    int64_t tasks = 0, nodes = 1;
    if (!absl::SimpleAtoi(group.substr(0, paren), &tasks) || tasks < 1) {
      return 0;
    }
    if (paren != absl::string_view::npos) {
      absl::string_view times = group.substr(paren);
      if (!absl::ConsumePrefix(&times, "(x") ||
          !absl::ConsumeSuffix(&times, ")") ||
          !absl::SimpleAtoi(times, &nodes) || nodes < 1) {
        return 0;
      }
    }
    if (first == 0) first = tasks;
    if (node >= seen && node < seen + nodes) return tasks;
    seen += nodes;
  }
  return first;
}

}  // namespace

int64_t LocalRanksOnNode(const EnvLookup& env) {
  for (const char* name : {"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE",
                           "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"}) {
    const std::optional<std::string> v = env(name);
    int64_t n = 0;
    // Slurm writes "4(x2)": the leading count is ours.
    if (v.has_value() && absl::SimpleAtoi(v->substr(0, v->find('(')), &n) &&
        n > 0) {
      return n;
    }
  }
  // srun without --ntasks-per-node: the tasks of each node.
  if (const std::optional<std::string> layout = env("SLURM_TASKS_PER_NODE")) {
    int64_t node = -1;
    if (const std::optional<std::string> id = env("SLURM_NODEID")) {
      if (!absl::SimpleAtoi(*id, &node)) node = -1;
    }
    const int64_t n = SlurmTasksOnNode(*layout, node);
    if (n > 0) return n;
  }
  return 1;
}

std::string MemoryPlan::StartUpNote(bool from_checkpoint) const {
  constexpr int64_t kLongHostBytes = int64_t{16} << 30;
  if (estimate.HostBytesPerRank() < kLongHostBytes) return "";
  return absl::StrCat(
      "start-up: allocating ", runtime::FormatBytes(estimate.pinned_bytes),
      " of pinned and ", runtime::FormatBytes(estimate.pageable_bytes),
      " of pageable host memory per rank, then initializing "
      "the parameters",
      from_checkpoint ? " from the checkpoint" : "", "\n");
}

absl::StatusOr<MemoryPlan> PlanMemory(const PlanInput& in) {
  MemoryPlan plan;
  const bool simulated_data = !in.gpu && in.data_mode;
  const int64_t local = in.gpu ? LocalRanksOnNode(in.env) : in.world_size;
  preflight::Available& a = plan.available;
  a.host = runtime::ReadHostMemory();
  a.memlock_bytes = runtime::MemlockLimitBytes();
  const config::Zero3& z = in.config.zero3();
  a.pinned_fallback = config::ModesOf(in.config).pinned_fallback ==
                      config::PinnedFallback::kPageable;
  a.pinned_budget_is_default = z.max_pinned_bytes() == 0;
  if (!a.pinned_budget_is_default) {
    a.pinned_budget_bytes = z.max_pinned_bytes();
  } else if (in.gpu || in.data_mode) {
    // Timing mode's host is the profile's node, not this machine: no
    // default budget there.
    a.pinned_budget_bytes = runtime::DefaultPinnedBudget(
        a.host, static_cast<int>(std::min<int64_t>(local, 1 << 30)));
  }
  if (!in.gpu) {
    a.device_free_bytes =
        static_cast<int64_t>(in.profile.gpu().memory_gib() * (1ull << 30));
    a.device_source = absl::StrCat(in.profile.name(), ", simulated");
  }
  plan.shape.nvme_path = in.options.nvme_path;
  plan.shape.param_nvme_path = in.options.param_nvme_path;
  dev_t devices[2] = {0, 1};
  auto free_under = [&](const std::string& path, int which) -> int64_t {
    struct statvfs vfs;
    struct stat st;
    if (path.empty() || stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
        statvfs(path.c_str(), &vfs) != 0) {
      return -1;
    }
    devices[which] = st.st_dev;
    return static_cast<int64_t>(vfs.f_bavail) * vfs.f_frsize;
  };
  a.nvme_free_bytes = free_under(in.options.nvme_path, 0);
  a.param_nvme_free_bytes = free_under(in.options.param_nvme_path, 1);
  a.nvme_paths_share_drive = devices[0] == devices[1];
  plan.max_pinned_bytes = a.pinned_budget_bytes;
  plan.pinned_fallback = a.pinned_fallback;
  plan.shape.allocates = in.gpu || in.data_mode;
  plan.shape.simulator_data_mode = simulated_data;
  plan.shape.offload_param = in.options.offload_param;
  plan.shape.offload_optimizer = in.options.offload_optimizer;
  plan.shape.speculative = zero::HostStepPlanOf(in.options).speculative;
  if (in.options.device_step_share > 0) {
    plan.shape.streamed_slots = in.options.streamed_slots;
    plan.shape.streams_all = in.options.device_step_share >= 1;
  }
  plan.shape.host_state_bytes =
      kernels::DTypeSize(in.options.host_master_dtype) +
      2 * kernels::DTypeSize(in.options.host_moments_dtype);
  // What the rules allow bf16 states with (core/config/deepspeed_rules.cc).
  plan.shape.bf16_states_possible =
      in.options.offload_optimizer && !in.options.offload_param &&
      in.options.dtype == runtime::DType::kBF16 &&
      in.options.host_master_dtype == runtime::DType::kF32 &&
      !in.options.per_param_fp32_grads && in.options.offload_ratio >= 1 &&
      !in.options.auto_offload_ratio;

  preflight::EstimateInput e;
  e.spec = in.spec;
  e.options = in.options;
  e.profile = in.profile;
  e.world_size = in.world_size;
  e.local_ranks = local;
  e.device_in_host_memory = simulated_data;
  e.max_pinned_bytes = plan.max_pinned_bytes;
  e.pinned_fallback = plan.pinned_fallback;
  ZR_ASSIGN_OR_RETURN(plan.estimate, preflight::EstimateMemory(e));
  return plan;
}

absl::Status MemoryPlan::Check() const {
  return preflight::CheckMemory(estimate, available, shape);
}

absl::Status MemoryPlan::CheckDeviceOnRank(
    const runtime::Device& device) const {
  if (available.device_free_bytes >= 0) return absl::OkStatus();
  preflight::Available a = available;
  a.device_free_bytes = device.free_memory_bytes();
  a.device_source = absl::StrCat(device.name(), ", free now");
  return preflight::CheckDevice(estimate, a, shape);
}

}  // namespace internal
}  // namespace cli
}  // namespace zero3
