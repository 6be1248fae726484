// Copyright 2026 The zero3 Authors.
//
// in_step_fit.h: fit a profile's in-step figures from training steps.
//
// Kernels inside a training step run slower than the same kernels timed
// alone (calibrate.h), and the host AdamW reaches a different rate beside
// the step's copies than alone. FitInStep runs training steps of a few
// configurations with op timing on the machine being calibrated (a
// StepRunner), predicts the same steps on the simulator with the isolated
// profile, and fits, for each class of operation (op_class.h), the ratio of
// measured to predicted time summed over the class's operations of the fit
// cases (a time-weighted ratio, refined once against the prediction with
// the first fit): gpu.gemm_in_step_factor, attention_in_step_factor,
// elementwise_in_step_factor, optimizer_in_step_factor, copy2d_gbps (the
// gradient reducer's strided copies), the host's memory bandwidth figures
// (scaled by the host AdamW's in-step rate over its isolated one), and
// with cases offloading to pageable memory host_link.pageable_h2d_gbps
// (the parameters' write-back) and pageable_d2h_gbps (gradient copies).
// The factors are those of the cases' GPUs; where the fit runs on several,
// its one-GPU cases then fit gpu.single_gpu_in_step_scale (the kernels'
// time on one GPU over what the several-GPU factors predict).
//
// Held-out cases judge the fit: their FWD, BWD and STEP are predicted
// without the fitted figures, then with each added in turn, and a figure
// is kept only when it lowers the held-out cases' mean absolute error.
// Without held-out cases every fitted figure is kept.
//
// Thread-compatible: each call builds its own simulated worlds.

#ifndef ZERO3_TOOLS_CALIBRATE_IN_STEP_FIT_H_
#define ZERO3_TOOLS_CALIBRATE_IN_STEP_FIT_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/model/model_spec.pb.h"
#include "core/runtime/op_timing.h"
#include "core/zero/options.h"
#include "sim/profile.pb.h"

namespace zero3 {
namespace calibrate {

// One training configuration the fit runs.
struct StepCase {
  std::string name;  // "qwen2.5-1.5b 2x2048 pinned"
  model::ModelSpec spec;
  zero::ZeroOptions options;
  int gpus = 1;
  bool held_out = false;  // judged, not fitted on
};

// A case as measured: rank 0's phase times (medians over the steps after
// the first) and its operations over `op_steps` of those steps.
struct MeasuredStep {
  double fwd_ms = 0;
  double bwd_ms = 0;
  double step_ms = 0;
  std::vector<runtime::OpTiming> ops;
  int op_steps = 1;
};

// Runs `steps` training steps of a case on the machine being calibrated.
using StepRunner =
    std::function<absl::StatusOr<MeasuredStep>(const StepCase&, int steps)>;

// bf16 cases of `spec` on `gpus` GPUs: each micro-batch (sequences x
// tokens) with the optimizer on the device and offloaded to pinned host
// memory (asynchronous gradient offload), and with `pageable` offloaded to
// pageable memory too (blocking gradient copies: the pageable copies'
// in-step rates); `held_out` batches are judged. With several GPUs, also
// the first of each on one GPU (optimizer on the device), which fit and
// judge gpu.single_gpu_in_step_scale.
std::vector<StepCase> DefaultCases(
    const model::ModelSpec& spec,
    const std::vector<std::pair<int64_t, int64_t>>& fit_batches,
    const std::vector<std::pair<int64_t, int64_t>>& held_out_batches, int gpus,
    bool pageable = false);

struct FitOptions {
  int steps = 3;  // per case, the first not timed
  // Progress lines ("running qwen2.5-1.5b 2x2048 none (1/4)"); may be empty.
  std::function<void(const std::string&)> progress;
};

struct FitResult {
  // The isolated profile with the kept figures.
  sim::HardwareProfile profile;
  // Per-class ratios, per-phase errors of the held-out cases, what was kept.
  std::string report;
  // One line per written figure: its value and how it was obtained.
  std::vector<std::string> notes;
};

// Fits `isolated`'s in-step figures (which it must not have: see
// ClearInStepAdjustments) from `cases` run by `run`.
absl::StatusOr<FitResult> FitInStep(const sim::HardwareProfile& isolated,
                                    const std::vector<StepCase>& cases,
                                    const StepRunner& run,
                                    const FitOptions& options);

// A StepRunner on the simulator with `profile` (timing mode), for tests and
// `zero3 calibrate --backend sim`.
StepRunner SimulatedStepRunner(const sim::HardwareProfile& profile);

}  // namespace calibrate
}  // namespace zero3

#endif  // ZERO3_TOOLS_CALIBRATE_IN_STEP_FIT_H_
