// Copyright 2026 The zero3 Authors.
//
// step_bound.h: a training run's lower bound per step (whatif::StepBound),
// for `zero3 train`'s closing lines and its metrics.
//
// The bound comes from the simulator: the run's configuration, model and
// rank count, three steps in timing mode on the hardware profile (the
// simulated one, or for GPU runs --hardware with this process's host cores,
// as --predict uses it), the parts from the last. Thread-compatible.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_STEP_BOUND_H_
#define ZERO3_TOOLS_CLI_INTERNAL_STEP_BOUND_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model/model_spec.pb.h"
#include "core/zero/options.h"
#include "sim/profile.pb.h"
#include "tools/whatif/whatif.h"

namespace zero3 {
namespace cli {
namespace internal {

// The bound of a step of `options` and `spec` on `ranks` ranks of
// `profile`. FailedPrecondition when the step does not fit the profile's
// device memory; the simulator's error otherwise.
absl::StatusOr<whatif::StepBound> EstimateStepBound(
    const sim::HardwareProfile& profile, const model::ModelSpec& spec,
    const zero::ZeroOptions& options, int ranks);

// "bound: 360.5 ms a step on h200_sxm (device 186.0, host 360.5, H2D 40.1,
// D2H 41.0, collectives 0.0 ms; the host's tasks limit it)".
std::string DescribeStepBound(const whatif::StepBound& bound,
                              absl::string_view profile);

}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_STEP_BOUND_H_
