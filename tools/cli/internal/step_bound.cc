// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/step_bound.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace cli {
namespace internal {

absl::StatusOr<whatif::StepBound> EstimateStepBound(
    const sim::HardwareProfile& profile, const model::ModelSpec& spec,
    const zero::ZeroOptions& options, int ranks) {
  whatif::StepInput step;
  step.profile = profile;
  step.spec = spec;
  step.options = options;
  step.gpus = ranks;
  step.steps = 3;
  ZR_ASSIGN_OR_RETURN(whatif::VariantResult result, whatif::SimulateStep(step));
  if (result.does_not_fit.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the step does not fit the device memory of ", profile.name()));
  }
  return result.metrics.bound;
}

std::string DescribeStepBound(const whatif::StepBound& bound,
                              absl::string_view profile) {
  using Resource = whatif::StepBound::Resource;
  const char* phrase = "";
  switch (bound.limit()) {
    case Resource::kDevice:
      phrase = "the device's kernels limit it";
      break;
    case Resource::kHost:
      phrase = "the host's tasks limit it";
      break;
    case Resource::kH2D:
      phrase = "the host-to-device link limits it";
      break;
    case Resource::kD2H:
      phrase = "the device-to-host link limits it";
      break;
    case Resource::kCollectives:
      phrase = "the collectives limit it";
      break;
    case Resource::kDrive:
      phrase = "the NVMe drives limit it";
      break;
  }
  std::string line = absl::StrFormat(
      "bound: %.1f ms a step on %s (device %.1f, host %.1f, H2D %.1f, D2H "
      "%.1f, collectives %.1f",
      bound.ms(), profile, bound.device_ms, bound.host_ms, bound.h2d_ms,
      bound.d2h_ms, bound.comm_ms);
  if (bound.drive_ms > 0) {
    absl::StrAppendFormat(&line, ", NVMe %.1f", bound.drive_ms);
  }
  return absl::StrCat(line, " ms; ", phrase, ")");
}

}  // namespace internal
}  // namespace cli
}  // namespace zero3
