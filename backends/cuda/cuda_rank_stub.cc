// Copyright 2026 The zero3 Authors.
//
// cuda_rank.h for builds without the CUDA toolkit.

#include "backends/cuda/cuda_rank.h"

namespace zero3 {
namespace cuda {
namespace {

absl::Status NotBuilt() {
  return absl::UnimplementedError(
      "this zero3 was built without the CUDA toolkit (/usr/local/cuda), so "
      "it has no cuda backend; build it on a machine with CUDA 13, or use "
      "--backend sim");
}

}  // namespace

absl::Status RunCudaRank(const runtime::RankFunction& fn) { return NotBuilt(); }

absl::Status RunCudaRank(const CudaRankOptions& options,
                         const runtime::RankFunction& fn) {
  return NotBuilt();
}

absl::Status RunCudaRanksInProcess(int ranks, const CudaRankOptions& options,
                                   const runtime::RankFunction& fn) {
  return NotBuilt();
}

absl::Status StartOpTiming(runtime::Runtime& rt) { return NotBuilt(); }

absl::StatusOr<std::vector<runtime::OpTiming>> TakeOpTimings(
    runtime::Runtime& rt) {
  return NotBuilt();
}

int VisibleCudaDevices() { return 0; }

std::vector<std::string> VisibleGpuBusIds() { return {}; }

bool CudaBackendBuilt() { return false; }

std::vector<std::string> DescribeCudaBackend() {
  return {"CUDA backend: not in this build (built without the CUDA toolkit)"};
}

}  // namespace cuda
}  // namespace zero3
