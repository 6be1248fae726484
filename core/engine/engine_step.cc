// Copyright 2026 The zero3 Authors.
//
// engine_step.cc: Engine::Step, one optimizer step: the micro-steps'
// forward and backward, the gradient norm, the update (engine_update.cc)
// and the step barrier.

#include <limits>

#include "absl/strings/str_cat.h"
#include "core/engine/engine.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace engine {

using runtime::DType;
using runtime::HostTask;
using runtime::TensorRef;
using zero::Sync;

// Step ----------------------------------------------------------------------

absl::StatusOr<StepStats> Engine::Step() {
  StepStats stats;
  stats.step = step_;
  stats.loss_scale = scaler_.scale();
  const int a = options_.accumulation;
  const int64_t t = model_->tokens();
  stats.tokens = t * a;
  const model::BatchShape shape{options_.micro_batch, options_.seq, a,
                                dp_size_};
  stats.global_tokens = stats.tokens * dp_size_;
  ZR_ASSIGN_OR_RETURN(stats.predicted_tokens,
                      data_->PredictedTargets(shape, step_));
  const double loss_divisor =
      model::MicroBatchLossDivisor(*data_, shape, stats.predicted_tokens);
  const int64_t step_start = rt_.NowNanos();
  double loss_sum = 0;
  ZR_RETURN_IF_ERROR(coordinator_->StartStep());
  host_->BeginStep();
  for (int micro = 0; micro < a; ++micro) {
    ZR_RETURN_IF_ERROR(
        MicroStep(micro, shape, loss_divisor, &loss_sum, &stats));
  }
  stats.loss = rt_.computes_values() ? loss_sum / a
                                     : std::numeric_limits<double>::quiet_NaN();

  const int64_t t3 = rt_.NowNanos();
  ZR_ASSIGN_OR_RETURN(const double norm_squared, ReadNormSquared());
  ZR_RETURN_IF_ERROR(Update(norm_squared, &stats));
  TakeOutcome(&stats);
  // The step ends when every data-parallel rank's update is done, on the
  // host and on the device: then STEP holds the device's optimizer work
  // (which would otherwise run under the next forward and be counted
  // there), and each phase's time is the slowest rank's. The gather stream
  // waits for the update, as the next step's first all-gather would
  // (params-updated-before-gather: dropping that sync drops this wait
  // too), then a 4-byte all-reduce on it when there are several ranks, and
  // the host waits for the gather stream. A NCCL kernel behind the
  // optimizer's kernels would start only once they had the SMs, so without
  // the wait the barrier would end partway through the update.
  if (options_.syncs.enabled(Sync::kParamsUpdatedBeforeGather)) {
    ZR_RETURN_IF_ERROR(ctx_.gather->Wait(*updated_));
  }
  if (dp_size_ > 1) {
    ZR_RETURN_IF_ERROR(ctx_.dp->AllReduce(
        *ctx_.gather, TensorRef::Of(barrier_, DType::kF32, 0, 1),
        TensorRef::Of(barrier_, DType::kF32, 1, 1), runtime::ReduceOp::kSum,
        "step barrier"));
  }
  ZR_RETURN_IF_ERROR(ctx_.gather->Synchronize());
  const int64_t t4 = rt_.NowNanos();
  rt_.MarkSpan("STEP", t3, t4);
  stats.step_ns = t4 - t3;
  stats.total_ns = t4 - step_start;
  SetSteps(step_ + 1);
  return stats;
}

absl::Status Engine::AddLoss(const char* label, double* sum) {
  HostTask read;
  read.label = label;
  read.reads = {loss_host_.All()};
  read.run = [&]() -> absl::Status {
    *sum += *static_cast<const float*>(loss_host_.data());
    return absl::OkStatus();
  };
  return rt_.RunHostTask(read);
}

absl::Status Engine::MicroStep(int micro, const model::BatchShape& shape,
                               double loss_divisor, double* loss_sum,
                               StepStats* stats) {
  const int a = options_.accumulation;
  const int64_t t0 = rt_.NowNanos();
  ZR_RETURN_IF_ERROR(inputs_->Stage(*compute_, *data_, shape, step_, micro,
                                    dp_rank_,
                                    absl::StrCat("fill inputs ", micro)));
  // After the inputs' copy, which would otherwise queue behind it.
  ZR_RETURN_IF_ERROR(host_->IssueWriteBack());
  const float grad_scale = static_cast<float>(scaler_.scale() / a);
  const TensorRef loss = TensorRef::Of(loss_device_, DType::kF32, 0, 1);
  ZR_RETURN_IF_ERROR(model_->Forward(*compute_, *this, inputs_->tokens(),
                                     inputs_->targets(), loss, grad_scale,
                                     loss_divisor, inputs_->positions()));
  ZR_RETURN_IF_ERROR(
      compute_->Copy(loss_host_.All(), loss_device_.All(), "loss D2H"));
  ZR_RETURN_IF_ERROR(compute_->Record(*loss_copied_));
  const bool delayed = host_->plan().delayed;
  // The delayed update's pieces fill the host's wait for the loss.
  if (delayed) {
    ZR_RETURN_IF_ERROR(host_->RunDelayedPiecesUnderForward(*loss_copied_));
  }
  if (options_.syncs.enabled(Sync::kLossRead)) {
    ZR_RETURN_IF_ERROR(loss_copied_->Synchronize());
  }
  ZR_RETURN_IF_ERROR(AddLoss("read loss", loss_sum));
  const int64_t t1 = rt_.NowNanos();
  rt_.MarkSpan("FWD", t0, t1);
  stats->fwd_ns += t1 - t0;

  // The host update deferred into this forward reads the host gradients
  // that backward's copies overwrite: what the gathers left runs now.
  // (Delayed, backward fills the other buffer.)
  if (!delayed) ZR_RETURN_IF_ERROR(host_->RunAllDeferredPieces());
  const bool boundary = micro == a - 1;
  const bool speculate = boundary && host_->SpeculateThisStep();
  ZR_RETURN_IF_ERROR(reducer_->BeginBackward(micro, boundary, speculate));
  // The streamed update's first pieces come in under the boundary backward,
  // where with the speculative step they are stepped too.
  if (boundary) {
    ZR_RETURN_IF_ERROR(streamed_->Prefetch());
    // And, on NVMe, the host share's first pieces from the drive.
    ZR_RETURN_IF_ERROR(host_->Prefetch());
    streamed_->BeginSpeculation(AdamArgs(
        adam_step_ + 1, options_.lr_schedule.LrAt(options_.lr, adam_step_),
        scaler_.scale()));
  }
  // Pieces whose gradients are already on the host run between backward's
  // modules (SpeculateEarly, from EndModule).
  if (speculate) {
    host_->BeginSpeculation(
        AdamArgs(adam_step_ + 1,
                 options_.lr_schedule.LrAt(options_.lr, adam_step_),
                 scaler_.scale()),
        scaler_.scale());
  } else {
    host_->SkipSpeculation();
  }
  ZR_RETURN_IF_ERROR(model_->Backward(*compute_, *this));
  ZR_RETURN_IF_ERROR(reducer_->FinishBackward());
  // The streamed pieces of the last buckets (a no-op outside a
  // speculation), issued before the host waits for anything.
  ZR_RETURN_IF_ERROR(streamed_->Speculate());
  if (speculate || delayed) {
    // The host is free while the device runs the backward just issued: the
    // speculative step (which ran, or aborted early; Update validates it
    // and sets the outcome), or the rest of the last, delayed update.
    ZR_RETURN_IF_ERROR(speculate ? host_->Speculate()
                                 : host_->RunAllDeferredPieces());
  }
  ZR_RETURN_IF_ERROR(reducer_->WaitForOffload());
  const int64_t t2 = rt_.NowNanos();
  rt_.MarkSpan("BWD", t1, t2);
  stats->bwd_ns += t2 - t1;
  return absl::OkStatus();
}

absl::StatusOr<double> Engine::ReadNormSquared() {
  double norm_squared = 1.0;
  HostTask read_norm;
  read_norm.label = "read grad norm";
  read_norm.reads = {reducer_->host_norm_squared().slice};
  read_norm.run = [&]() -> absl::Status {
    const float* pairs = reducer_->host_norm_squared().slice.As<float>();
    norm_squared = 0;
    for (int r = 0; r < dp_size_; ++r) {
      norm_squared += static_cast<double>(pairs[2 * r]) + pairs[2 * r + 1];
    }
    return absl::OkStatus();
  };
  ZR_RETURN_IF_ERROR(rt_.RunHostTask(read_norm));
  return norm_squared;
}

}  // namespace engine
}  // namespace zero3
