// Copyright 2026 The zero3 Authors.
//
// rank_env.h: which rank this process is, read from the launcher's
// environment.
//
// The CUDA backend runs one process per GPU. Whatever started the processes
// says which one this is through environment variables; three conventions
// are understood, tried in this order:
//
//   1. RANK, WORLD_SIZE, LOCAL_RANK (torchrun, `zero3 launch`, and anything
//      that imitates them);
//   2. OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE,
//      OMPI_COMM_WORLD_LOCAL_RANK (Open MPI's mpirun);
//   3. SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID (srun).
//
// The first convention whose rank variable is set wins, so torchrun or
// mpirun started inside a Slurm allocation (where SLURM_PROCID describes the
// job step, not this process) are read correctly. A convention that is only
// partly set is an error naming the missing variables. With none set, the
// process is rank 0 of 1 on GPU 0.
//
// With more than one rank, rank 0 hands the NCCL unique id to the others
// either over TCP at MASTER_ADDR:MASTER_PORT (MASTER_PORT defaults to
// 29500, as in torchrun) or through a file on a shared file system named by
// ZERO3_RENDEZVOUS_FILE, which takes precedence. One of the two is required.
// ZERO3_RENDEZVOUS_TIMEOUT (seconds, default 300) bounds how long ranks
// wait for each other.
//
// All functions are pure given the lookup; thread-safe.

#ifndef ZERO3_BACKENDS_CUDA_RANK_ENV_H_
#define ZERO3_BACKENDS_CUDA_RANK_ENV_H_

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace zero3 {
namespace cuda {

// Looks up an environment variable; nullopt when unset. Set but empty is
// treated as unset (a launcher template that expands to nothing).
using EnvLookup =
    std::function<std::optional<std::string>(absl::string_view name)>;

// The process's environment (getenv).
EnvLookup ProcessEnv();

// The variables of `vars` as an environment (tests, and tools that build
// one).
EnvLookup MapEnv(std::map<std::string, std::string> vars);

struct RankEnvironment {
  int rank = 0;
  int world_size = 1;
  // Index of this process among those on its node: selects the GPU.
  int local_rank = 0;
  // Which convention supplied the values: "RANK/WORLD_SIZE/LOCAL_RANK",
  // "OMPI_COMM_WORLD_*", "SLURM_*", or "none" (a single process).
  std::string source = "none";

  // Rendezvous of rank 0 with the others (unused with one rank). Either
  // rendezvous_file is set, or master_addr and master_port are: MASTER_PORT
  // (default 29500), or ZERO3_RENDEZVOUS_PORT where set, or under torchrun
  // (TORCHELASTIC_RUN_ID set) MASTER_PORT + 1, since torchrun's agent
  // already listens on MASTER_PORT for its own store.
  std::string master_addr;
  int master_port = 0;
  std::string rendezvous_file;
  absl::Duration rendezvous_timeout = absl::Seconds(300);
  // The job's identity, the same on every rank where a launcher gives one:
  // ZERO3_JOB_ID, else SLURM_JOB_ID (with SLURM_STEP_ID), else
  // TORCHELASTIC_RUN_ID (with TORCHELASTIC_RESTART_COUNT), else Open MPI's
  // or PMIx's job; empty otherwise.
  std::string job;

  // "rank 1 of 2 (local rank 1; from RANK/WORLD_SIZE/LOCAL_RANK)".
  std::string Describe() const;
};

// Reads the rank environment through `env`. InvalidArgument, naming the
// variable and what was expected, for missing, partial, unparsable or
// inconsistent values.
absl::StatusOr<RankEnvironment> ReadRankEnvironment(const EnvLookup& env);

// The CUDA device for `local_rank` on a node where `device_count` devices
// are visible. Normally the device is the local rank. A launcher that binds
// one GPU to each task (srun --gpus-per-task=1, or CUDA_VISIBLE_DEVICES set
// per process) leaves each process exactly one visible device, which is
// then the one to use whatever the local rank. Otherwise a local rank
// beyond the visible devices is FailedPrecondition, saying how many are
// visible; `cuda_visible_devices` (the variable's value, or nullopt) is
// quoted in the message.
absl::StatusOr<int> ChooseDevice(
    int local_rank, int device_count,
    const std::optional<std::string>& cuda_visible_devices);

// A rank's share of the node's default pinned budget: `budget` (shared
// among `assumed` ranks per the launcher's variables) divided again among
// `learned` ranks where more run on the host (the rendezvous); `budget`
// unchanged where it is not the default (`is_default` false), or no more
// ranks run than assumed.
int64_t PinnedShare(int64_t budget, bool is_default, int64_t assumed,
                    int64_t learned);

}  // namespace cuda
}  // namespace zero3

#endif  // ZERO3_BACKENDS_CUDA_RANK_ENV_H_
