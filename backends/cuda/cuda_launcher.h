// Copyright 2026 The zero3 Authors.
//
// cuda_launcher.h: runtime::Launcher on GPUs (cuda_rank.h).
//
// Either this process is one rank of a job whose processes a launcher
// started (torchrun, `zero3 launch`, srun, mpirun: rank_env.h), running it
// on its GPU through RunCudaRank; or it runs ranks_in_process ranks itself,
// rank r on GPU r, through RunCudaRanksInProcess. Operations can be timed
// (StartOpTiming, TakeOpTimings); Report has nothing to add.
//
// Builds everywhere: without the CUDA toolkit in the build, Run returns
// Unimplemented (and so do the op timing calls).

#ifndef ZERO3_BACKENDS_CUDA_CUDA_LAUNCHER_H_
#define ZERO3_BACKENDS_CUDA_CUDA_LAUNCHER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/cuda/cuda_rank.h"
#include "core/runtime/launcher.h"
#include "core/runtime/op_timing.h"
#include "core/runtime/runtime.h"

namespace zero3 {
namespace cuda {

struct CudaLauncherOptions {
  CudaRankOptions rank;
  // 0: this process is the one rank the rank environment names. N > 0: N
  // ranks in this process, on GPUs 0..N-1; the rank environment is ignored.
  int ranks_in_process = 0;
};

class CudaLauncher : public runtime::Launcher {
 public:
  // Reads the rank environment (options.rank.env, else the process's) where
  // ranks_in_process is 0: InvalidArgument where it is malformed (see
  // rank_env.h), or where ranks_in_process is negative. Touches no GPU.
  static absl::StatusOr<std::unique_ptr<CudaLauncher>> Create(
      CudaLauncherOptions options);

  int world_size() const override { return world_size_; }
  int first_local_rank() const override { return first_local_rank_; }
  int local_ranks() const override { return local_ranks_; }
  std::string description() const override { return "GPUs (cuda)"; }
  absl::Status Run(const runtime::RankFunction& fn) override;
  absl::Status StartOpTiming(runtime::Runtime& rt) override;
  absl::StatusOr<std::vector<runtime::OpTiming>> TakeOpTimings(
      runtime::Runtime& rt) override;

 private:
  CudaLauncher(CudaLauncherOptions options, int world_size,
               int first_local_rank, int local_ranks);

  CudaLauncherOptions options_;
  int world_size_;
  int first_local_rank_;
  int local_ranks_;
};

}  // namespace cuda
}  // namespace zero3

#endif  // ZERO3_BACKENDS_CUDA_CUDA_LAUNCHER_H_
