// Copyright 2026 The zero3 Authors.
//
// engine_update.cc: the optimizer update at the end of a step: loss-scale
// and clipping decisions (Update), the device share's AdamW kernels
// (DeviceUpdate), the host share's AdamW piece by piece (HostUpdate) and the
// new working copy's way back to the device (WriteBackPiece,
// IssueWriteBack, WriteBackFp32). Where the host share's AdamW runs later
// instead: engine_host_step.cc.

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/engine/engine.h"
#include "core/engine/engine_internal.h"
#include "core/kernels/dtype.h"
#include "core/util/check.h"
#include "core/util/status_macros.h"
#include "core/zero/host_adam.h"

namespace zero3 {
namespace engine {

using runtime::Buffer;
using runtime::DType;
using runtime::HostTask;
using runtime::KernelCall;
using runtime::TensorRef;
namespace ops = runtime::ops;
using internal::HostTaskThreads;

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
    if (stats->speculation != StepStats::Speculation::kNone) {
      ZR_RETURN_IF_ERROR(ResolveSpeculation(false, stats));
    }
    if (plan_.delayed) {
      // The next step runs on the parameters from before this one's update,
      // which did not happen: the current master's. The host share's are
      // staged already (the last update's pieces ran during this step).
      if (ctx_.host_begin > 0) {
        ZR_RETURN_IF_ERROR(CastDeviceShare("working shard (delayed)"));
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
  // The device share first: its kernels run while the host updates its own.
  if (ctx_.host_begin > 0) ZR_RETURN_IF_ERROR(DeviceUpdate(args));
  if (stats->speculation != StepStats::Speculation::kNone) {
    // The speculation assumed combined == scale. Timing runs have no
    // values: their speculation is taken as validated.
    ZR_RETURN_IF_ERROR(
        ResolveSpeculation(combined == scale || !rt_.computes_values(), stats));
  }
  if (ctx_.host_elements() > 0 &&
      stats->speculation != StepStats::Speculation::kCommitted) {
    const bool delayed = plan_.delayed;
    if ((plan_.in_forward || delayed) && write_back_ != nullptr) {
      // Under the next forward, piece by piece (RunDeferredPieces), or
      // delayed: beside the next step's forward and backward. The last
      // update's pieces all ran before this step's update.
      ZR_CHECK_EQ(FirstDeferredPiece(), -1)
          << "a deferred host update was lost";
      deferred_args_ = args;
      deferred_grads_ = reducer_->host_partition();
      piece_deferred_.assign(host_pieces_.size(), true);
      if (delayed) {
        // The next backward's gradients go to the other buffer.
        reducer_->SwapHostPartition();
      }
    } else {
      ZR_RETURN_IF_ERROR(HostUpdate(args));
    }
  }
  scaler_.Update(false);
  if (options_.offload_param) return coordinator_->AfterUpdate(nullptr);
  return AfterAppliedUpdate();
}

absl::Status Engine::AfterAppliedUpdate() {
  ZR_RETURN_IF_ERROR(compute_->Record(*updated_));
  std::vector<zero::ParamCoordinator::PendingWrite> writes;
  if (write_back_ != nullptr) {
    for (size_t i = 0; i < host_pieces_.size(); ++i) {
      writes.push_back({host_pieces_[i].offset, host_pieces_[i].elements,
                        piece_written_[i].get()});
    }
  }
  return coordinator_->AfterUpdate(updated_.get(), std::move(writes));
}

double Engine::ClipFactor(double norm_squared) const {
  if (options_.gradient_clipping <= 0) return 1;
  return ((std::sqrt(norm_squared) / scaler_.scale()) + 1e-6) /
         options_.gradient_clipping;
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

absl::Status Engine::HostUpdate(const kernels::AdamWArgs& args) {
  for (size_t i = 0; i < host_pieces_.size(); ++i) {
    ZR_RETURN_IF_ERROR(HostAdamPiece(static_cast<int>(i), args,
                                     reducer_->host_partition(), false));
    ZR_RETURN_IF_ERROR(WriteBackPiece(static_cast<int>(i)));
  }
  return absl::OkStatus();
}

absl::Status Engine::HostAdamPiece(int index, const kernels::AdamWArgs& args,
                                   const TensorRef& grads, bool speculative) {
  const zero::HostPiece& piece = host_pieces_[index];
  const DType dtype = options_.dtype;
  const int64_t esize = kernels::DTypeSize(dtype);
  const int64_t gsize = kernels::DTypeSize(grads.dtype);
  const Buffer& lp = options_.offload_param ? shard_ : staging_;
  const int threads = zero::OptimizerThreads(options_.optimizer_threads);
  const int64_t at_host = piece.offset - ctx_.host_begin;
  const int64_t n = piece.elements;
  // The piece's current master and moments, and the other copies.
  const zero::HostState::Set current = host_state_.Current(index, at_host, n);
  const runtime::BufferSlice m = current.master;
  const runtime::BufferSlice m1 = current.exp_avg;
  const runtime::BufferSlice m2 = current.exp_avg_sq;
  const runtime::BufferSlice gs = grads.slice.Sub(at_host * gsize, n * gsize);
  const runtime::BufferSlice out = lp.Slice(at_host * esize, n * esize);
  // One pass: the update and the new working copy, which the H2D (or the
  // next gather, with offload_param) reads.
  HostTask adam;
  adam.label =
      absl::StrCat(speculative ? "speculative adamw " : "adamw ", piece.name);
  adam.reads = {gs};
  // DeepSpeed's path writes no working copy: the fp32 master goes back
  // (unless offload_param keeps the working shard on the host).
  const bool fp32_back =
      options_.per_param_fp32_grads && !options_.offload_param;
  std::vector<runtime::BufferSlice> next;
  if (speculative) {
    const zero::HostState::Set other = host_state_.Other(index, at_host, n);
    next = {other.master, other.exp_avg, other.exp_avg_sq};
    adam.reads.insert(adam.reads.end(), {m, m1, m2});
    adam.writes = next;
  } else {
    adam.writes = {m, m1, m2};
  }
  if (!fp32_back) adam.writes.push_back(out);
  adam.flops = 15.0 * n;
  adam.memory_bytes = (24 + gsize + (fp32_back ? 0 : esize)) * n;
  adam.threads = HostTaskThreads(options_);
  adam.run = [&]() -> absl::Status {
    // Each run of equal weight decay (one unless decay is grouped).
    for (const zero::DecayRun& run : piece.runs) {
      const int64_t at = run.offset - piece.offset;
      kernels::AdamWArgs a = args;
      a.n = run.elements;
      a.weight_decay = run.weight_decay;
      zero::HostAdamWArrays x;
      x.params = m.As<float>() + at;
      x.grads = static_cast<const char*>(gs.data()) + at * gsize;
      x.grad_dtype = grads.dtype;
      x.exp_avg = m1.As<float>() + at;
      x.exp_avg_sq = m2.As<float>() + at;
      if (speculative) {
        x.params_out = next[0].As<float>() + at;
        x.exp_avg_out = next[1].As<float>() + at;
        x.exp_avg_sq_out = next[2].As<float>() + at;
      }
      if (!fp32_back) {
        x.working = static_cast<char*>(out.data()) + at * esize;
        x.working_dtype = dtype;
      }
      zero::HostAdamWStep(a, x, threads);
    }
    return absl::OkStatus();
  };
  return rt_.RunHostTask(adam);
}

absl::Status Engine::WriteBackPiece(int index) {
  const zero::HostPiece& piece = host_pieces_[index];
  const int64_t at_host = piece.offset - ctx_.host_begin;
  const int64_t n = piece.elements;
  if (options_.per_param_fp32_grads && !options_.offload_param) {
    return WriteBackFp32(host_state_.First(at_host, n).master, piece.offset, n,
                         piece.name);
  }
  if (options_.offload_param) return absl::OkStatus();
  if (write_back_ == nullptr) return CopyPieceToDevice(*compute_, index);
  // Issued by IssueWriteBack, at the start of the next step.
  write_pending_[index] = true;
  return absl::OkStatus();
}

absl::Status Engine::CopyPieceToDevice(runtime::Stream& s, int index) {
  const zero::HostPiece& piece = host_pieces_[index];
  const int64_t esize = kernels::DTypeSize(options_.dtype);
  const int64_t n = piece.elements;
  return s.Copy(
      shard_.Slice(piece.offset * esize, n * esize),
      staging_.Slice((piece.offset - ctx_.host_begin) * esize, n * esize),
      absl::StrCat("param H2D ", piece.name));
}

absl::Status Engine::IssueWriteBack() {
  if (step_ < write_back_step_) return absl::OkStatus();
  // The last step's gathers of the shard are done: the host waited for the
  // reduce stream, which waited for the backward that waited for them.
  for (size_t i = 0; i < write_pending_.size(); ++i) {
    if (!write_pending_[i]) continue;
    write_pending_[i] = false;
    ZR_RETURN_IF_ERROR(CopyPieceToDevice(*write_back_, static_cast<int>(i)));
    ZR_RETURN_IF_ERROR(write_back_->Record(*piece_written_[i]));
  }
  return absl::OkStatus();
}

absl::Status Engine::WriteBackFp32(const runtime::BufferSlice& master,
                                   int64_t offset, int64_t n,
                                   const std::string& name) {
  // On the compute stream, so the next piece's copy into the same device
  // buffer follows this piece's cast.
  ZR_RETURN_IF_ERROR(compute_->Copy(writeback_.Slice(0, n * 4), master,
                                    absl::StrCat("fp32 param H2D ", name)));
  return compute_->Launch(KernelCall(
      ops::Cast::Of(TensorRef::Of(writeback_, DType::kF32, 0, n),
                    TensorRef::Of(shard_, options_.dtype, offset, n)),
      absl::StrCat("cast ", name)));
}

absl::Status Engine::DeviceUpdate(const kernels::AdamWArgs& args) {
  // Delayed, the next step runs on the master from before this update.
  const bool delayed = plan_.delayed;
  if (delayed) ZR_RETURN_IF_ERROR(CastDeviceShare("working shard (delayed)"));
  const TensorRef grads = reducer_->device_partition();
  for (size_t g = 0; g < sub_groups_.size(); ++g) {
    if (sub_groups_[g].offset >= ctx_.host_begin) break;  // the host share
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
  if (delayed) return absl::OkStatus();
  return CastDeviceShare("new working shard");
}

}  // namespace engine
}  // namespace zero3
