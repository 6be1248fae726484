// Copyright 2026 The zero3 Authors.
//
// host_speculation.cc: the speculative host step (ZeroOptions::
// speculative_step, offload_optimizer.super_offload).
//
// At the accumulation boundary the host has issued backward before the
// device has run it. Speculate() then updates the host share piece by
// piece, each once the reduce stream has copied the piece's last gradient
// bucket to the host (speculative-grads-on-host; while backward is being
// issued, a backward module's end runs at most one piece whose copy
// Event::Query finds done), of those on the host the one the next forward
// needs first. It assumes the step is applied unclipped (gradients scaled
// by 1 / loss scale): from the piece's current master and moments into its
// other copies, and the new working copy into the pinned staging, which
// goes to the device only after validation (backward's all-gathers read the
// working shard). Update() validates against the norm: committed, each
// updated piece's other copies become its current ones; clipping
// triggered, the host share is updated again from the current copies as
// without speculation; a non-finite norm skips the step and the current
// copies stay. Either way the bits are those of the step without
// speculation. Before each piece the host also reads this rank's running
// sum of squares, copied with the piece's last bucket (a lower bound of the
// global one): when it is already non-finite or makes clipping trigger,
// speculation stops there (aborted early) and the step is replayed or
// skipped as above, decided by the global norm, the same on every rank.
// With kAuto a failed validation pauses speculation for 1, 2, 4, ... steps,
// except an abort before the first piece (free: the next step tries
// again). The new working copy goes to the device on the write-back stream
// at the start of the next step (IssueWriteBack), each gather
// waiting only for its own pieces. With the host update under the next
// forward too (HostStepPlanOf's carries_over), the host stops speculating
// once the norm is on the host, and a committed step's pieces left over
// run in place under the next forward, each before its first gather.

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/util/check.h"
#include "core/util/status_macros.h"
#include "core/zero/grad_clip.h"
#include "core/zero/host_optimizer.h"

namespace zero3 {
namespace zero {

const char* SpeculationName(Speculation s) {
  switch (s) {
    case Speculation::kNone:
      return "";
    case Speculation::kCommitted:
      return "committed";
    case Speculation::kReplayed:
      return "replayed";
    case Speculation::kDiscarded:
      return "discarded";
    case Speculation::kAborted:
      return "aborted early";
  }
  return "";
}

bool HostOptimizer::SpeculateThisStep() const {
  if (!plan_.speculative || elements() == 0) return false;
  return options_.speculative_step == SpeculativeStep::kOn ||
         step_ >= speculate_from_;
}

void HostOptimizer::BeginSpeculation(const kernels::AdamWArgs& args,
                                     double loss_scale) {
  Pass& pass = pass_;
  pass.args = args;
  pass.loss_scale = loss_scale;
  // In the order their gradients reach the host: from the end of the layout.
  pass.order.resize(pieces_.size());
  for (size_t i = 0; i < pass.order.size(); ++i) {
    pass.order[i] = static_cast<int>(i);
  }
  std::stable_sort(pass.order.begin(), pass.order.end(), [&](int a, int b) {
    return pieces_[a].ready_bucket < pieces_[b].ready_bucket;
  });
  pass.arrived = 0;
  pass.done.assign(pieces_.size(), false);
  pass.left = static_cast<int>(pieces_.size());
  pass.active = pass.left > 0;
  outcome_.speculation = Speculation::kCommitted;
  outcome_.speculative_pieces = 0;
}

absl::StatusOr<bool> HostOptimizer::BucketOnHost(int bucket, bool wait) {
  if (bucket >= reducer_.buckets_issued()) return false;
  // A Query that returns true, or the wait, is the speculative-grads-on-host
  // synchronization: it orders the host after the bucket's copy (and the
  // running norm's before it).
  if (!options_.syncs.enabled(Sync::kSpeculativeGradsOnHost)) return true;
  runtime::Event& copied = *reducer_.offloaded(bucket);
  if (!wait) return copied.Query();
  ZR_RETURN_IF_ERROR(copied.Synchronize());
  return true;
}

absl::Status HostOptimizer::ArriveSpeculativePieces(bool wait) {
  Pass& pass = pass_;
  const size_t n = pass.order.size();
  // Buckets reach the host in order: those copied since the last call.
  while (pass.arrived < n) {
    const int bucket = pieces_[pass.order[pass.arrived]].ready_bucket;
    ZR_ASSIGN_OR_RETURN(const bool on_host, BucketOnHost(bucket, wait));
    if (!on_host) break;
    wait = false;
    while (pass.arrived < n &&
           pieces_[pass.order[pass.arrived]].ready_bucket == bucket) {
      ++pass.arrived;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int> HostOptimizer::NextSpeculativePiece(bool wait) {
  Pass& pass = pass_;
  auto pick = [&pass, this]() {
    // Of the pieces on the host, the one the next forward needs first: the
    // latest bucket's, lowest offset (order is by offset within a bucket).
    int best = -1;
    for (size_t k = pass.arrived; k-- > 0;) {
      const int i = pass.order[k];
      if (pass.done[i]) continue;
      if (best >= 0 && pieces_[i].ready_bucket != pieces_[best].ready_bucket) {
        break;
      }
      best = i;
    }
    return best;
  };
  ZR_RETURN_IF_ERROR(ArriveSpeculativePieces(/*wait=*/false));
  int piece = pick();
  if (piece < 0 && wait) {
    ZR_RETURN_IF_ERROR(ArriveSpeculativePieces(/*wait=*/true));
    piece = pick();
  }
  return piece;
}

absl::Status HostOptimizer::SpeculateEarly() {
  if (!pass_.active) return absl::OkStatus();
  ZR_ASSIGN_OR_RETURN(const int piece, NextSpeculativePiece(/*wait=*/false));
  return piece < 0 ? absl::OkStatus() : SpeculateNextPiece(piece);
}

absl::Status HostOptimizer::Speculate() {
  const bool carries_over = plan_.carries_over;
  // After the norm's copy (FinishBackward issued it on the reduce stream).
  if (carries_over) ZR_RETURN_IF_ERROR(ctx_.reduce->Record(*norm_copied_));
  while (pass_.active) {
    ZR_ASSIGN_OR_RETURN(const int piece, NextSpeculativePiece(/*wait=*/true));
    ZR_CHECK_GE(piece, 0) << "a speculative piece's bucket never came";
    if (carries_over) {
      // Validation can start: the pieces left wait for it (and, committed,
      // run under the next forward). Only a hint: the norm is read after
      // WaitForOffload.
      ZR_ASSIGN_OR_RETURN(const bool norm_known, norm_copied_->Query());
      if (norm_known) break;
    }
    ZR_RETURN_IF_ERROR(SpeculateNextPiece(piece));
  }
  return absl::OkStatus();
}

absl::Status HostOptimizer::SpeculateNextPiece(int piece) {
  Pass& pass = pass_;
  ZR_ASSIGN_OR_RETURN(const bool miss, MissProven(pieces_[piece].ready_bucket));
  if (miss) {
    outcome_.speculation = Speculation::kAborted;
    pass.active = false;
    return absl::OkStatus();
  }
  ZR_RETURN_IF_ERROR(AdamPiece(piece, pass.args, reducer_.host_partition(),
                               /*speculative=*/true));
  ++outcome_.speculative_pieces;
  pass.done[piece] = true;
  pass.active = --pass.left > 0;
  return absl::OkStatus();
}

absl::StatusOr<bool> HostOptimizer::MissProven(int bucket) {
  if (!rt_.computes_values()) return false;
  const runtime::TensorRef running = reducer_.running_norm_squared(bucket);
  bool miss = false;
  runtime::HostTask read;
  read.label = absl::StrCat("read running grad norm ", bucket);
  read.reads = {running.slice};
  read.run = [&]() -> absl::Status {
    const float* pair = running.slice.As<float>();
    // A lower bound of the global sum of squares: this rank's partition,
    // buckets so far. Non-finite, or clipping already, proves the step's.
    const double norm_squared = static_cast<double>(pair[0]) + pair[1];
    miss_non_finite_ = !std::isfinite(norm_squared);
    miss = miss_non_finite_ || ClipFactor(norm_squared, pass_.loss_scale,
                                          options_.gradient_clipping) > 1;
    return absl::OkStatus();
  };
  ZR_RETURN_IF_ERROR(rt_.RunHostTask(read));
  return miss;
}

absl::Status HostOptimizer::ResolveSpeculation(bool validated, bool finite) {
  if (outcome_.speculation == Speculation::kAborted) {
    // This rank's evidence implies the global outcome, the same on every
    // rank: a replay or a skip. (Should the rounding of the running [hi, lo]
    // pair, about 2^-48 relative, ever let the global norm validate a step
    // this rank saw clipped, nothing breaks: the caller's in-place update
    // with the real factors gives the bits a commit would.) A non-finite
    // running sum stays non-finite in the global one.
    ZR_CHECK(!miss_non_finite_ || !finite)
        << "speculation aborted on a non-finite running norm, but the global "
           "norm is finite";
    // Aborted before its first piece, the attempt cost nothing: try again
    // next step, without backing off. Otherwise a miss like any other. This
    // is the rank's own evidence, so ranks may speculate on different
    // steps; that is safe, as speculation changes only the rank's host work
    // and local copies, never a collective.
    if (outcome_.speculative_pieces == 0) return absl::OkStatus();
  } else if (validated && finite) {
    outcome_.speculation = Speculation::kCommitted;
    speculation_pause_ = 1;
    const Pass& pass = pass_;
    for (int i = 0; i < static_cast<int>(pass.done.size()); ++i) {
      if (pass.done[i]) {
        state_.Flip(i);
        ZR_RETURN_IF_ERROR(WriteBackPiece(i));
      } else {
        // Not reached (the plan's carries_over): in place under the next
        // forward, by RunDeferredPiece, with the same arguments.
        piece_deferred_[i] = true;
        ++outcome_.carried_pieces;
      }
    }
    if (outcome_.carried_pieces > 0) {
      deferred_args_ = pass.args;
      deferred_grads_ = reducer_.host_partition();
    }
    return absl::OkStatus();
  } else {
    outcome_.speculation =
        finite ? Speculation::kReplayed : Speculation::kDiscarded;
  }
  if (options_.speculative_step == SpeculativeStep::kAuto) {
    speculate_from_ = step_ + 1 + speculation_pause_;
    speculation_pause_ = std::min<int64_t>(2 * speculation_pause_, 1024);
  }
  return absl::OkStatus();
}

}  // namespace zero
}  // namespace zero3
