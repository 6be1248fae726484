// Copyright 2026 The zero3 Authors.
//
// calibrate_steps.h: training steps with op timing on GPUs, for `zero3
// calibrate`'s in-step fit (tools/calibrate/in_step_fit.h).
//
// Each case is checked by the memory preflight first (the estimate against
// the host, then against each GPU's free memory once it is up) and fails
// naming the case and the flags that choose smaller ones. The engine then
// runs the case's steps on synthetic data: the phase times are rank 0's
// medians over the steps after the first (which records the module order
// and warms the allocator); then one more step runs with every device
// operation timed, as `zero3 train --profile-ops` times them (apart, since
// the timing's event records fill CUDA's launch queue sooner and move time
// between the phases).

#ifndef ZERO3_TOOLS_CLI_CALIBRATE_STEPS_H_
#define ZERO3_TOOLS_CLI_CALIBRATE_STEPS_H_

#include <ostream>
#include <vector>

#include "absl/status/status.h"
#include "sim/profile.pb.h"
#include "tools/calibrate/in_step_fit.h"

namespace zero3 {
namespace cli {

// The memory preflight of every case before any is run: device memory
// against `profile`'s (the GPUs' free memory is checked again on each rank
// when a case runs), and with `gpu` this machine's host and pinned memory.
// Fails naming the first case that does not fit and the flags to change.
absl::Status PreflightCases(const std::vector<calibrate::StepCase>& cases,
                            const sim::HardwareProfile& profile, bool gpu);

// A StepRunner on the CUDA backend, `case.gpus` GPUs in this process;
// `profile` gives the preflight its figures; backend messages go to `log`.
calibrate::StepRunner GpuStepRunner(const sim::HardwareProfile& profile,
                                    std::ostream* log);

}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_CALIBRATE_STEPS_H_
