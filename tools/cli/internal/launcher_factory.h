// Copyright 2026 The zero3 Authors.
//
// launcher_factory.h: the launcher a --backend flag names.
//
// The subcommands that run ranks (train, calibrate) take --backend sim or
// cuda and make that backend's runtime::Launcher here; from then on they
// are written against the launcher, not the backend. Each subcommand checks
// the name itself first, with its own message. What else a tool needs to
// know of the GPU backend before it launches (whether it is built, the
// GPUs, the launchers' rank variables) is here too: the CLI reaches
// backends/cuda through this file only.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_LAUNCHER_FACTORY_H_
#define ZERO3_TOOLS_CLI_INTERNAL_LAUNCHER_FACTORY_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "backends/cuda/cuda_launcher.h"
#include "backends/cuda/rank_env.h"
#include "core/runtime/launcher.h"
#include "sim/simulator.h"
#include "tools/cli/internal/backend.h"

namespace zero3 {
namespace cli {
namespace internal {

struct LauncherOptions {
  // --backend sim: the simulated world, and where its Chrome trace is
  // written (empty: nowhere; see sim::SimLauncher).
  sim::SimOptions sim;
  std::string trace_path;
  // --backend cuda.
  cuda::CudaLauncherOptions cuda;
};

// The launcher of `backend`, with the options for it. Errors are the
// launcher's own.
absl::StatusOr<std::unique_ptr<runtime::Launcher>> MakeLauncher(
    Backend backend, const LauncherOptions& options);

// The GPU backend, before any rank starts.
// Whether this build has it.
bool GpuBackendBuilt();
// Lines describing it (built with, driver, libraries, GPUs).
std::vector<std::string> DescribeGpuBackend();
// GPUs visible to this process, and their PCI bus ids (sysfs's spelling).
int VisibleGpus();
std::vector<std::string> GpuBusIds();
// A TCP port free a moment ago, for MASTER_PORT.
absl::StatusOr<int> PickFreePort();
// The rank variables of the launchers (torchrun, Slurm, Open MPI, ...).
using EnvLookup = cuda::EnvLookup;
using RankEnvironment = cuda::RankEnvironment;
EnvLookup ProcessEnv();
EnvLookup MapEnv(std::map<std::string, std::string> vars);
absl::StatusOr<RankEnvironment> ReadRankEnvironment(const EnvLookup& env);

}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_LAUNCHER_FACTORY_H_
