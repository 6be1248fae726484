// Copyright 2026 The zero3 Authors.

#include "backends/cuda/rank_env.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace cuda {
namespace {

// One launcher's names for rank, world size and local rank.
struct Convention {
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* name;
};

constexpr Convention kConventions[] = {
    {"RANK", "WORLD_SIZE", "LOCAL_RANK", "RANK/WORLD_SIZE/LOCAL_RANK"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_*"},
    {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_*"},
};

constexpr int kDefaultMasterPort = 29500;

std::optional<std::string> Get(const EnvLookup& env, absl::string_view name) {
  std::optional<std::string> value = env(name);
  if (value.has_value() && value->empty()) return std::nullopt;
  return value;
}

// Parses a non-negative integer variable.
absl::StatusOr<int> ParseCount(absl::string_view name,
                               absl::string_view value) {
  int parsed = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(value), &parsed) ||
      parsed < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, "='", value, "' is not a non-negative integer"));
  }
  return parsed;
}

// A TCP port from variable `name`, if set.
absl::StatusOr<std::optional<int>> Port(const EnvLookup& env,
                                        const char* name) {
  const std::optional<std::string> text = Get(env, name);
  if (!text.has_value()) return std::optional<int>();
  absl::StatusOr<int> p = ParseCount(name, *text);
  if (!p.ok()) return p.status();
  if (*p < 1 || *p > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, "=", *text, " is not a TCP port (1-65535)"));
  }
  return std::optional<int>(*p);
}

// The job's identity from the launcher's variables (RankEnvironment::job).
std::string JobIdentity(const EnvLookup& env) {
  if (std::optional<std::string> id = Get(env, "ZERO3_JOB_ID")) return *id;
  if (std::optional<std::string> id = Get(env, "SLURM_JOB_ID")) {
    const std::optional<std::string> step = Get(env, "SLURM_STEP_ID");
    return absl::StrCat("slurm:", *id, step ? "." + *step : "");
  }
  // torchrun restarts a failed job under the same run id: the restart
  // count tells the attempts apart.
  if (std::optional<std::string> id = Get(env, "TORCHELASTIC_RUN_ID")) {
    const std::optional<std::string> restart =
        Get(env, "TORCHELASTIC_RESTART_COUNT");
    return absl::StrCat("torchrun:", *id, restart ? "." + *restart : "");
  }
  for (const char* name : {"OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE"}) {
    if (std::optional<std::string> id = Get(env, name)) {
      return absl::StrCat(name, ":", *id);
    }
  }
  return "";
}

}  // namespace

EnvLookup ProcessEnv() {
  return [](absl::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

EnvLookup MapEnv(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](
             absl::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::string RankEnvironment::Describe() const {
  return absl::StrCat("rank ", rank, " of ", world_size, " (local rank ",
                      local_rank, "; from ", source, ")");
}

absl::StatusOr<RankEnvironment> ReadRankEnvironment(const EnvLookup& env) {
  RankEnvironment result;
  for (const Convention& c : kConventions) {
    const std::optional<std::string> rank = Get(env, c.rank);
    if (!rank.has_value()) continue;
    const std::optional<std::string> size = Get(env, c.size);
    std::optional<std::string> local = Get(env, c.local_rank);
    std::vector<std::string> missing;
    if (!size.has_value()) missing.push_back(c.size);
    if (!local.has_value()) missing.push_back(c.local_rank);
    if (!missing.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          c.rank, "=", *rank, " is set but ", absl::StrJoin(missing, " and "),
          missing.size() == 1 ? " is" : " are", " not; a launcher sets all of ",
          c.rank, ", ", c.size, " and ", c.local_rank,
          " (the local rank selects this process's GPU)"));
    }
    absl::StatusOr<int> r = ParseCount(c.rank, *rank);
    if (!r.ok()) return r.status();
    absl::StatusOr<int> n = ParseCount(c.size, *size);
    if (!n.ok()) return n.status();
    absl::StatusOr<int> l = ParseCount(c.local_rank, *local);
    if (!l.ok()) return l.status();
    if (*n < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(c.size, "=", *size, ": must be at least 1"));
    }
    if (*r >= *n) {
      return absl::InvalidArgumentError(
          absl::StrCat(c.rank, "=", *r, " is not below ", c.size, "=", *n));
    }
    result.rank = *r;
    result.world_size = *n;
    result.local_rank = *l;
    result.source = c.name;
    break;
  }

  if (std::optional<std::string> t = Get(env, "ZERO3_RENDEZVOUS_TIMEOUT")) {
    double seconds = 0;
    if (!absl::SimpleAtod(*t, &seconds) || !(seconds > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("ZERO3_RENDEZVOUS_TIMEOUT='", *t,
                       "' is not a positive number of "
                       "seconds"));
    }
    result.rendezvous_timeout = absl::Seconds(seconds);
  }
  if (result.world_size == 1) return result;
  result.job = JobIdentity(env);

  if (std::optional<std::string> file = Get(env, "ZERO3_RENDEZVOUS_FILE")) {
    result.rendezvous_file = *file;
    return result;
  }
  const std::optional<std::string> addr = Get(env, "MASTER_ADDR");
  if (!addr.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        result.Describe(),
        ": with more than one rank, set MASTER_ADDR (and MASTER_PORT, default ",
        kDefaultMasterPort,
        ") to the host of rank 0, or ZERO3_RENDEZVOUS_FILE to a path on a "
        "file system all ranks share; rank 0 hands the NCCL id to the others "
        "through it"));
  }
  result.master_addr = *addr;
  result.master_port = kDefaultMasterPort;
  ZR_ASSIGN_OR_RETURN(std::optional<int> master, Port(env, "MASTER_PORT"));
  if (master.has_value()) result.master_port = *master;
  // torchrun's agent on rank 0's node already listens on MASTER_PORT (its
  // store): the rendezvous takes the next port there, or the one given.
  ZR_ASSIGN_OR_RETURN(std::optional<int> own,
                      Port(env, "ZERO3_RENDEZVOUS_PORT"));
  if (own.has_value()) {
    result.master_port = *own;
  } else if (Get(env, "TORCHELASTIC_RUN_ID").has_value()) {
    if (result.master_port == 65535) {
      return absl::InvalidArgumentError(
          "under torchrun the rendezvous takes MASTER_PORT + 1 (torchrun's "
          "store holds MASTER_PORT), and MASTER_PORT is 65535: set "
          "ZERO3_RENDEZVOUS_PORT to a free port");
    }
    ++result.master_port;
  }
  return result;
}

absl::StatusOr<int> ChooseDevice(
    int local_rank, int device_count,
    const std::optional<std::string>& cuda_visible_devices) {
  const std::string visible =
      cuda_visible_devices.has_value()
          ? absl::StrCat("CUDA_VISIBLE_DEVICES='", *cuda_visible_devices, "'")
          : std::string("CUDA_VISIBLE_DEVICES unset");
  if (device_count <= 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("no CUDA device is visible to this process (", visible,
                     "); run on a GPU node, or use --backend sim"));
  }
  if (local_rank < device_count) return local_rank;
  if (device_count == 1 && cuda_visible_devices.has_value()) {
    // The launcher bound one GPU to this process.
    return 0;
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "local rank ", local_rank, " needs GPU ", local_rank, " but ",
      device_count, device_count == 1 ? " GPU is" : " GPUs are",
      " visible on this node (", visible, "); start at most ", device_count,
      device_count == 1 ? " process" : " processes",
      " per node (zero3 launch --nproc-per-node, srun "
      "--ntasks-per-node, mpirun -npernode)"));
}

int64_t PinnedShare(int64_t budget, bool is_default, int64_t assumed,
                    int64_t learned) {
  assumed = std::max<int64_t>(assumed, 1);
  if (!is_default || learned <= assumed) return budget;
  return budget / learned * assumed;
}

}  // namespace cuda
}  // namespace zero3
