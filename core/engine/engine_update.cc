// Copyright 2026 The zero3 Authors.
//
// engine_update.cc: the optimizer update at the end of a step: loss-scale
// and clipping decisions (Update), the device share's AdamW kernels
// (DeviceUpdate), the host share's through the host optimizer, and the
// coordinator's release of the updated shard (AfterAppliedUpdate).

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/engine/engine.h"
#include "core/kernels/dtype.h"
#include "core/util/check.h"
#include "core/util/status_macros.h"
#include "core/zero/grad_clip.h"

namespace zero3 {
namespace engine {

using runtime::Buffer;
using runtime::DType;
using runtime::HostTask;
using runtime::KernelCall;
using runtime::TensorRef;
namespace ops = runtime::ops;

// Update -------------------------------------------------------------------

absl::Status Engine::Update(double norm_squared, StepStats* stats) {
  // A skipped step does not advance the schedule, as in DeepSpeed.
  stats->lr = options_.lr_schedule.LrAt(options_.lr, adam_step_);
  const double scale = scaler_.scale();
  const double total_norm = std::sqrt(norm_squared);
  stats->grad_norm = rt_.computes_values()
                         ? total_norm / scale
                         : std::numeric_limits<double>::quiet_NaN();
  if (!std::isfinite(norm_squared)) {
    stats->skipped = true;
    if (options_.dtype == DType::kF16 && scaler_.dynamic()) {
      scaler_.Update(true);
      stats->skip_reason = absl::StrFormat(
          "gradient overflow at loss scale %g; step skipped, loss scale now %g",
          scale, scaler_.scale());
    } else {
      // DeepSpeed's ZeRO-3 applies such a step in bf16 (NaN norms become -1
      // and the NaN gradients reach Adam); we skip it and say so.
      stats->skip_reason =
          "non-finite gradient norm; step skipped (parameters unchanged)";
    }
    ZR_RETURN_IF_ERROR(host_->Skip());
    ZR_RETURN_IF_ERROR(streamed_->Skip());
    if (host_->plan().delayed) {
      // The next step runs on the parameters from before this one's update,
      // which did not happen: the current master's. The host share's are
      // staged already (the last update's pieces ran during this step).
      if (ctx_.host_begin > 0) {
        ZR_RETURN_IF_ERROR(CastDeviceShare("working shard (delayed)"));
        ZR_RETURN_IF_ERROR(streamed_->CastWorkingCopy());
      }
      return AfterAppliedUpdate();
    }
    return coordinator_->AfterUpdate(nullptr);
  }
  // DeepSpeed's unscale_and_clip: one factor for both.
  double combined = scale;
  const double clip = ClipFactor(norm_squared);
  if (clip > 1) combined = clip * scale;
  ++adam_step_;
  const kernels::AdamWArgs args = AdamArgs(adam_step_, stats->lr, combined);
  // A speculation assumed combined == scale. Timing runs have no values:
  // theirs is taken as validated.
  const bool validated = combined == scale || !rt_.computes_values();
  // The device share first: its kernels run while the host updates its own.
  if (ctx_.host_begin > 0) ZR_RETURN_IF_ERROR(DeviceUpdate(args, validated));
  ZR_RETURN_IF_ERROR(host_->Update(args, validated));
  scaler_.Update(false);
  if (options_.offload_param) return coordinator_->AfterUpdate(nullptr);
  return AfterAppliedUpdate();
}

absl::Status Engine::AfterAppliedUpdate() {
  ZR_RETURN_IF_ERROR(compute_->Record(*updated_));
  return coordinator_->AfterUpdate(updated_.get(), host_->PendingWrites());
}

double Engine::ClipFactor(double norm_squared) const {
  return zero::ClipFactor(norm_squared, scaler_.scale(),
                          options_.gradient_clipping);
}

void Engine::TakeOutcome(StepStats* stats) const {
  const zero::HostOptimizer::Outcome& o = host_->outcome();
  stats->speculation = o.speculation;
  stats->speculative_pieces = o.speculative_pieces;
  stats->carried_pieces = o.carried_pieces;
  // The streamed pieces' speculation is validated by the same rule: it says
  // what the step's was where the host share had none.
  const zero::StreamedStep::Outcome& streamed = streamed_->outcome();
  stats->speculative_pieces += streamed.pieces;
  if (o.speculation == zero::Speculation::kNone && streamed.pieces > 0) {
    stats->speculation = streamed.committed ? zero::Speculation::kCommitted
                         : stats->skipped   ? zero::Speculation::kDiscarded
                                            : zero::Speculation::kReplayed;
  }
}

void Engine::SetSteps(int64_t steps) {
  step_ = steps;
  host_->SetStep(steps);
}

kernels::AdamWArgs Engine::AdamArgs(int64_t step, double lr,
                                    double combined) const {
  kernels::AdamWArgs args;
  args.step = step;
  args.lr = static_cast<float>(lr);
  // OneCycle moves the betas with the lr; step counts from 1.
  args.beta1 = static_cast<float>(
      options_.lr_schedule.Beta1At(options_.beta1, step - 1));
  args.beta2 = static_cast<float>(
      options_.lr_schedule.Beta2At(options_.beta2, step - 1));
  args.eps = options_.eps;
  args.weight_decay = options_.weight_decay;
  args.bias_correction = options_.bias_correction;
  args.adamw_mode = options_.adamw_mode;
  args.grad_scale = static_cast<float>(1.0 / combined);
  return args;
}

absl::Status Engine::DeviceUpdate(const kernels::AdamWArgs& args,
                                  bool validated) {
  // Delayed, the next step runs on the master from before this update.
  const bool delayed = host_->plan().delayed;
  if (delayed) ZR_RETURN_IF_ERROR(CastDeviceShare("working shard (delayed)"));
  const TensorRef grads = reducer_->device_partition();
  for (size_t g = 0; g < sub_groups_.size(); ++g) {
    // The streamed and the host share's.
    if (sub_groups_[g].offset >= ctx_.streamed_begin) break;
    // One kernel per run of equal weight decay (one unless decay is
    // grouped).
    for (const zero::DecayRun& run : decay_runs_[g]) {
      ops::AdamW adam;
      adam.args = args;
      adam.args.n = run.elements;
      adam.args.weight_decay = run.weight_decay;
      adam.params =
          TensorRef::Of(master_, DType::kF32, run.offset, run.elements);
      adam.grads = grads.Elements(run.offset, run.elements);
      adam.exp_avg =
          TensorRef::Of(exp_avg_, DType::kF32, run.offset, run.elements);
      adam.exp_avg_sq =
          TensorRef::Of(exp_avg_sq_, DType::kF32, run.offset, run.elements);
      ZR_RETURN_IF_ERROR(compute_->Launch(
          KernelCall(adam, absl::StrCat("adamw sub-group ", g))));
    }
  }
  if (!delayed) ZR_RETURN_IF_ERROR(CastDeviceShare("new working shard"));
  return streamed_->Update(args, grads, delayed, validated);
}

}  // namespace engine
}  // namespace zero3
