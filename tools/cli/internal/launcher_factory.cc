// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/launcher_factory.h"

#include "absl/strings/str_cat.h"
#include "sim/sim_launcher.h"

namespace zero3 {
namespace cli {
namespace internal {

absl::StatusOr<std::unique_ptr<runtime::Launcher>> MakeLauncher(
    absl::string_view backend, const LauncherOptions& options) {
  if (backend == "sim") {
    return sim::SimLauncher::Create(options.sim, options.trace_path);
  }
  if (backend == "cuda") return cuda::CudaLauncher::Create(options.cuda);
  return absl::InvalidArgumentError(
      absl::StrCat("no backend named '", backend, "'"));
}

}  // namespace internal
}  // namespace cli
}  // namespace zero3
