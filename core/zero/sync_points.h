// Copyright 2026 The zero3 Authors.
//
// sync_points.h: the named synchronizations the ZeRO-3 engine relies on.
//
// Every synchronization that makes the engine correct — every event wait,
// stream synchronize or event synchronize that orders two streams, or a
// stream and the host — has a name here and is guarded by SyncPoints at its
// one place in the code. `zero3 train --drop-sync NAME` removes one, so a
// user (and a test) can watch the simulator's race detector report the race
// it prevents. Stream order within one stream is not listed: it cannot be
// removed.

#ifndef ZERO3_CORE_ZERO_SYNC_POINTS_H_
#define ZERO3_CORE_ZERO_SYNC_POINTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace zero3 {
namespace zero {

enum class Sync {
  // Host waits for the reduce stream at the end of backward: the gradient
  // D2H copies into host memory, and the gradient norm, are complete before
  // the host optimizer reads them. DeepSpeed's reduce-stream synchronize at
  // the end of every backward.
  kGradOffloadBeforeStep,
  // The compute stream waits for a module's all-gathers before its kernels
  // read the gathered parameters.
  kGatherBeforeCompute,
  // The all-gather stream waits until the kernels that read a gathered
  // buffer are done before gathering another parameter into it.
  kParamBufferReuse,
  // The reduce stream waits for a module's backward kernels before copying
  // its gradients into the reduction bucket.
  kGradsReadyBeforeReduce,
  // The compute stream waits for the reduce stream to finish copying a
  // gradient slot out before backward writes new gradients into it.
  kGradSlotReuse,
  // The all-gather stream waits for the optimizer's update of the working
  // shards before gathering them in the next step.
  kParamsUpdatedBeforeGather,
  // Host waits for the copy of the loss to host memory before reading it.
  // Because it waits for everything before it on the compute stream, it also
  // orders the host's refills of the pinned input and parameter staging
  // buffers after the copies that read them.
  kLossRead,
  // With cpu_checkpointing (the model's copy stream, core/model/
  // transformer.h): the copy stream waits for the kernel that writes a kept
  // layer input before copying it to host memory.
  kCheckpointOffloadAfterWrite,
  // The compute stream waits for a kept input's copy to host memory before
  // writing another kept input into its device slot.
  kCheckpointSlotReuse,
  // The copy stream waits for backward's last reads of a device slot before
  // copying another kept input back into it.
  kCheckpointRestoreSlotFree,
  // The compute stream waits for a kept input's copy back to the device
  // before the layer's recompute and backward read it.
  kCheckpointRestoreBeforeRecompute,
  // Speculative step (offload_optimizer.super_offload): the host waits for
  // the reduce stream's copy of the last bucket covering a piece of its
  // share before its speculative AdamW reads the piece's gradients (and the
  // early abort the running norm copied just before them), while backward
  // still runs; between backward's modules, an Event::Query of that copy
  // that returned true instead (the piece waits otherwise).
  kSpeculativeGradsOnHost,
  // Speculative step: the working copy goes back to the device on a stream
  // of its own, piece by piece, overlapping the next forward; the all-gather
  // stream waits for the pieces a parameter's partition overlaps before
  // gathering it. (The host's next writes to the pinned staging come after
  // it has read the next loss, which follows every gather of the forward:
  // loss-read orders them.)
  kWriteBackBeforeGather,
  // With the host update deferred into the next forward
  // (zero3.host_step_overlap: "forward"): before the all-gather stream waits
  // for the write-backs a parameter's partition overlaps, the host runs the
  // AdamW of those pieces and issues their write-back (which records what
  // write-back-before-gather waits for).
  kHostStepBeforeGather,
  // With the one-step delayed update (zero3.host_step_overlap: "delayed"):
  // the host waits for the write-back of a piece's last working copy, issued
  // at the step's start, before the piece's AdamW rewrites its staging
  // beside the forward.
  kWriteBackBeforeHostPiece,
  // With the offloaded step on the device (zero3.offloaded_step "device" or
  // "auto", streamed_step.h): the compute stream waits for the copy of a
  // piece's master and moments into its device slot before the device
  // AdamW (or the working copy's cast) reads them.
  kStreamedStatesBeforeStep,
  // The copy-out stream waits for a piece's device AdamW before copying its
  // master and moments back to host memory.
  kStreamedStepBeforeOut,
  // The copy-in stream waits for the copy-out of a slot's last piece before
  // copying another piece into the slot (the copy-outs before it, on the
  // same stream, are done too: a piece's host state is back before the next
  // step copies it in).
  kStreamedSlotReuse,
  // With the speculative step, a streamed piece stepped during backward on
  // a stream of its own waits for the reduction of the last bucket that
  // completes its gradients.
  kStreamedGradsBeforeStep,
  // At the update, the compute stream waits for the speculative streamed
  // steps before it copies their working copies into the shard (and before
  // the next backward rewrites the gradients they read).
  kStreamedStepBeforeCommit,
  // With the optimizer state on NVMe (nvme_state.h): the host waits for a
  // piece's read into its window before its AdamW (or anything else)
  // touches the window.
  kNvmeReadBeforeStep,
  // The host waits for a window's write-back to the drive before reading
  // another piece into it, or filling it.
  kNvmeWriteBeforeReuse,
  // With parameters on NVMe (nvme_params.h): the host waits for a
  // partition's read into its window before the gather stream's copy of it
  // to the device is issued.
  kNvmeParamReadBeforeCopy,
  // The host waits for the copy of a window's partition to the device
  // before reading another partition into it.
  kNvmeParamCopyBeforeReuse,
  // The host waits for the write of an updated piece's working copy to the
  // drive before reading a partition it overlaps.
  kNvmeParamWriteBeforeRead,
  // The host waits for a write window's last write to the drive before the
  // next piece's working copy is cast into it.
  kNvmeParamWriteBeforeReuse,
};
// Not listed because it needs no synchronization of its own: with
// offload_param, the optimizer overwrites the host parameter shards after
// grad-offload-before-step, which already orders the host after every
// all-gather of the step (each gather is waited on by the compute stream
// before the module's backward, which the reduce stream waits on).

absl::string_view SyncName(Sync sync);
absl::string_view SyncDescription(Sync sync);
std::vector<Sync> AllSyncs();
// By name; the error lists the names and suggests the nearest.
absl::StatusOr<Sync> ParseSync(absl::string_view name);

class SyncPoints {
 public:
  bool enabled(Sync sync) const;
  void Drop(Sync sync);
  // Names of dropped syncs, for messages.
  std::vector<std::string> dropped() const;

 private:
  unsigned dropped_ = 0;
};

}  // namespace zero
}  // namespace zero3

#endif  // ZERO3_CORE_ZERO_SYNC_POINTS_H_
