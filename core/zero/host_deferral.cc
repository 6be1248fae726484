// Copyright 2026 The zero3 Authors.
//
// host_deferral.cc: the host share's AdamW moved out of the step's end
// (zero3.host_step_overlap). Update() leaves its pieces deferred, with the
// step's arguments and gradients, and they run here:
//   "forward": under the next forward, each just before the first gather
//     of a parameter it overlaps (the coordinator's before-gather hook),
//     its working copy then written back on the write-back stream; what the
//     gathers left runs before the next backward overwrites the gradients.
//     The same bits as at the step's end. With the speculative step, the
//     pieces a committed speculation had not reached run here too, in
//     place on their current copies.
//   "delayed": ZeRO-Offload's one-step delayed update, which changes the
//     training: beside the next step's forward (while the host waits for
//     the loss, and after modules whose issue kept it waiting for the
//     device) and after its backward is issued, reading the other host
//     gradient buffer; the working copies go to the device at the start of
//     the step after, so that step runs on the parameters from before the
//     update.
// Before the state is read or replaced, FinishHostStep runs what is left.

#include <algorithm>

#include "core/util/status_macros.h"
#include "core/zero/host_adam.h"
#include "core/zero/host_optimizer.h"

namespace zero3 {
namespace zero {

absl::Status HostOptimizer::RunDeferredPieces(int64_t begin, int64_t elements) {
  for (size_t i = 0; i < piece_deferred_.size(); ++i) {
    const HostPiece& p = pieces_[i];
    if (!piece_deferred_[i] || p.offset >= begin + elements ||
        p.offset + p.elements <= begin) {
      continue;
    }
    ZR_RETURN_IF_ERROR(RunDeferredPiece(static_cast<int>(i)));
  }
  return absl::OkStatus();
}

absl::Status HostOptimizer::RunDeferredPiece(int index) {
  const bool delayed = plan_.delayed;
  // Delayed, the staging still holds the last update's working copy until
  // its write-back (issued at this step's start) has read it.
  if (delayed && options_.syncs.enabled(Sync::kWriteBackBeforeHostPiece)) {
    ZR_RETURN_IF_ERROR(piece_written_[index]->Synchronize());
  }
  ZR_RETURN_IF_ERROR(AdamPiece(index, deferred_args_, deferred_grads_, false));
  piece_deferred_[index] = false;
  if (delayed) {
    // To the device at the start of the step after the one running now
    // (between steps, FinishHostStep runs them with step_ already the next
    // one's: the same rule).
    write_pending_[index] = true;
    write_back_step_ = step_ + 1;
    return absl::OkStatus();
  }
  // The previous step's gathers of the shard are done (see
  // IssueWriteBack): the piece's H2D may overwrite it.
  ZR_RETURN_IF_ERROR(CopyPieceToDevice(*write_back_, index));
  return write_back_->Record(*piece_written_[index]);
}

int HostOptimizer::FirstDeferredPiece() const {
  const auto it =
      std::find(piece_deferred_.begin(), piece_deferred_.end(), true);
  return it == piece_deferred_.end()
             ? -1
             : static_cast<int>(it - piece_deferred_.begin());
}

absl::Status HostOptimizer::RunDelayedPiecesUnderForward(
    runtime::Event& forward_done) {
  for (int i = FirstDeferredPiece(); i >= 0; i = FirstDeferredPiece()) {
    ZR_ASSIGN_OR_RETURN(const bool done, forward_done.Query());
    if (done) break;
    ZR_RETURN_IF_ERROR(RunDeferredPiece(i));
  }
  return absl::OkStatus();
}

absl::Status HostOptimizer::RunDelayedPieceIfBlocked(int64_t module_begin_ns) {
  if (!plan_.delayed ||
      rt_.NowNanos() - module_begin_ns < options_.delayed_piece_after_wait_ns) {
    return absl::OkStatus();
  }
  const int i = FirstDeferredPiece();
  return i >= 0 ? RunDeferredPiece(i) : absl::OkStatus();
}

absl::Status HostOptimizer::RunAllDeferredPieces() {
  return RunDeferredPieces(0, ctx_.layout->total());
}

absl::Status HostOptimizer::FinishHostStep() {
  // Delayed, a write-back due at the next step's start goes first: the
  // pieces then rewrite its staging.
  ZR_RETURN_IF_ERROR(IssueWriteBack());
  ZR_RETURN_IF_ERROR(RunAllDeferredPieces());
  ZR_RETURN_IF_ERROR(
      state_.Settle(rt_, pieces_, ctx_.host_begin, HostTaskThreads(options_),
                    OptimizerThreads(options_.optimizer_threads)));
  return IssueWriteBack();
}

}  // namespace zero
}  // namespace zero3
