// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/launcher_factory.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_rank.h"
#include "backends/cuda/rendezvous.h"
#include "sim/sim_launcher.h"

namespace zero3 {
namespace cli {
namespace internal {

absl::StatusOr<std::unique_ptr<runtime::Launcher>> MakeLauncher(
    Backend backend, const LauncherOptions& options) {
  switch (backend) {
    case Backend::kSim:
      return sim::SimLauncher::Create(options.sim, options.trace_path);
    case Backend::kCuda:
      return cuda::CudaLauncher::Create(options.cuda);
  }
  return absl::InternalError("unknown backend");
}

bool GpuBackendBuilt() { return cuda::CudaBackendBuilt(); }

std::vector<std::string> DescribeGpuBackend() {
  return cuda::DescribeCudaBackend();
}

int VisibleGpus() { return cuda::VisibleCudaDevices(); }

std::vector<std::string> GpuBusIds() { return cuda::VisibleGpuBusIds(); }

absl::StatusOr<int> PickFreePort() { return cuda::PickFreePort(); }

EnvLookup ProcessEnv() { return cuda::ProcessEnv(); }

EnvLookup MapEnv(std::map<std::string, std::string> vars) {
  return cuda::MapEnv(std::move(vars));
}

absl::StatusOr<RankEnvironment> ReadRankEnvironment(const EnvLookup& env) {
  return cuda::ReadRankEnvironment(env);
}

}  // namespace internal
}  // namespace cli
}  // namespace zero3
