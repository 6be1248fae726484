// Copyright 2026 The zero3 Authors.

#include "backends/cuda/cuda_launcher.h"

#include <utility>

#include "backends/cuda/rank_env.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace cuda {

absl::StatusOr<std::unique_ptr<CudaLauncher>> CudaLauncher::Create(
    CudaLauncherOptions options) {
  if (options.ranks_in_process < 0) {
    return absl::InvalidArgumentError("need at least one rank");
  }
  int world_size = options.ranks_in_process;
  int first = 0;
  if (options.ranks_in_process == 0) {
    ZR_ASSIGN_OR_RETURN(RankEnvironment env,
                        ReadRankEnvironment(options.rank.env ? options.rank.env
                                                             : ProcessEnv()));
    world_size = env.world_size;
    first = env.rank;
  }
  const int local = options.ranks_in_process == 0 ? 1 : world_size;
  return std::unique_ptr<CudaLauncher>(
      new CudaLauncher(std::move(options), world_size, first, local));
}

CudaLauncher::CudaLauncher(CudaLauncherOptions options, int world_size,
                           int first_local_rank, int local_ranks)
    : options_(std::move(options)),
      world_size_(world_size),
      first_local_rank_(first_local_rank),
      local_ranks_(local_ranks) {}

absl::Status CudaLauncher::Run(const runtime::RankFunction& fn) {
  if (options_.ranks_in_process == 0) return RunCudaRank(options_.rank, fn);
  return RunCudaRanksInProcess(options_.ranks_in_process, options_.rank, fn);
}

absl::Status CudaLauncher::StartOpTiming(runtime::Runtime& rt) {
  return cuda::StartOpTiming(rt);
}

absl::StatusOr<std::vector<runtime::OpTiming>> CudaLauncher::TakeOpTimings(
    runtime::Runtime& rt) {
  return cuda::TakeOpTimings(rt);
}

}  // namespace cuda
}  // namespace zero3
