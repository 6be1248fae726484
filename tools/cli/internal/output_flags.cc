// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/output_flags.h"

#include "core/util/status_macros.h"
#include "tools/cli/internal/output_path.h"

namespace zero3 {
namespace cli {
namespace internal {

void OutputFlags::Define(FlagSet& flags) {
  flags.AddString("metrics", &metrics_, "FILE",
                  "write each step's metrics to FILE as JSON Lines (loss, "
                  "lr, grad_norm, times, tokens/s, MFU, memory, the step's "
                  "bound; docs/metrics.md)");
  flags.AddString("trace", &trace_, "FILE",
                  "write a Chrome trace (Perfetto, chrome://tracing)");
}

void OutputFlags::DefineDryRun(FlagSet& flags) {
  flags.AddBool("dry-run", &dry_run_,
                "print the memory each rank and this node will need, and "
                "what is available, then exit without training: status 0 "
                "when the run fits, 2 when it does not");
}

absl::Status OutputFlags::Check(
    const std::function<std::string(absl::string_view)>& resolve) const {
  if (!trace_.empty()) {
    ZR_RETURN_IF_ERROR(CheckOutputFile("--trace", resolve(trace_)));
  }
  if (!metrics_.empty()) {
    ZR_RETURN_IF_ERROR(CheckOutputFile("--metrics", resolve(metrics_)));
  }
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace cli
}  // namespace zero3
