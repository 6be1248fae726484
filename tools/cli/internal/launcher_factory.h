// Copyright 2026 The zero3 Authors.
//
// launcher_factory.h: the launcher a --backend flag names.
//
// The subcommands that run ranks (train, calibrate) take --backend sim or
// cuda and make that backend's runtime::Launcher here; from then on they
// are written against the launcher, not the backend. Each subcommand checks
// the name itself first, with its own message.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_LAUNCHER_FACTORY_H_
#define ZERO3_TOOLS_CLI_INTERNAL_LAUNCHER_FACTORY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "backends/cuda/cuda_launcher.h"
#include "core/runtime/launcher.h"
#include "sim/simulator.h"

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

// The launcher of `backend`, "sim" or "cuda", with the options for it;
// InvalidArgument for another name. Errors are the launcher's own.
absl::StatusOr<std::unique_ptr<runtime::Launcher>> MakeLauncher(
    absl::string_view backend, const LauncherOptions& options);

}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_LAUNCHER_FACTORY_H_
