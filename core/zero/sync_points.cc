// Copyright 2026 The zero3 Authors.

#include "core/zero/sync_points.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/util/suggest.h"

namespace zero3 {
namespace zero {
namespace {

struct Entry {
  Sync sync;
  const char* name;
  const char* description;
};

constexpr Entry kEntries[] = {
    {Sync::kGradOffloadBeforeStep, "grad-offload-before-step",
     "host waits for the reduce stream (gradient D2H copies, norm) before "
     "the optimizer step"},
    {Sync::kGatherBeforeCompute, "gather-before-compute",
     "compute stream waits for a module's all-gathers before using its "
     "parameters"},
    {Sync::kParamBufferReuse, "param-buffer-reuse",
     "all-gather stream waits for the kernels reading a gathered buffer "
     "before reusing it"},
    {Sync::kGradsReadyBeforeReduce, "grads-ready-before-reduce",
     "reduce stream waits for a module's backward before reducing its "
     "gradients"},
    {Sync::kGradSlotReuse, "grad-slot-reuse",
     "compute stream waits for the reduce stream to copy a gradient slot out "
     "before overwriting it"},
    {Sync::kParamsUpdatedBeforeGather, "params-updated-before-gather",
     "all-gather stream waits for the updated working shards before the next "
     "step's gathers"},
    {Sync::kLossRead, "loss-read",
     "host waits for the loss copy before reading the loss"},
    {Sync::kCheckpointOffloadAfterWrite, "checkpoint-offload-after-write",
     "copy stream waits for the kernel writing a kept layer input before "
     "copying it to host memory (cpu_checkpointing)"},
    {Sync::kCheckpointSlotReuse, "checkpoint-slot-reuse",
     "compute stream waits for a kept input's copy to host memory before "
     "overwriting its device slot (cpu_checkpointing)"},
    {Sync::kCheckpointRestoreSlotFree, "checkpoint-restore-slot-free",
     "copy stream waits for backward's reads of a device slot before copying "
     "a kept input back into it (cpu_checkpointing)"},
    {Sync::kCheckpointRestoreBeforeRecompute,
     "checkpoint-restore-before-recompute",
     "compute stream waits for a kept input's copy back to the device before "
     "the layer's recompute reads it (cpu_checkpointing)"},
    {Sync::kSpeculativeGradsOnHost, "speculative-grads-on-host",
     "host waits for (or queries done) the copy of a piece's last gradient "
     "bucket before the speculative AdamW reads it, during backward "
     "(super_offload)"},
    {Sync::kWriteBackBeforeGather, "write-back-before-gather",
     "all-gather stream waits for the write-back of the pieces a parameter "
     "overlaps before gathering it in the next step (super_offload, "
     "zero3.host_step_overlap forward or delayed)"},
    {Sync::kHostStepBeforeGather, "host-step-before-gather",
     "host runs the deferred AdamW of the pieces a parameter overlaps, and "
     "issues their write-back, before its gather waits for them "
     "(zero3.host_step_overlap forward)"},
    {Sync::kWriteBackBeforeHostPiece, "write-back-before-host-piece",
     "host waits for the write-back of a piece's last working copy before "
     "the delayed update's AdamW rewrites its staging "
     "(zero3.host_step_overlap delayed)"},
    {Sync::kStreamedStatesBeforeStep, "streamed-states-before-step",
     "compute stream waits for a piece's master and moments to reach their "
     "device slot before the device AdamW reads them (zero3.offloaded_step "
     "device or auto)"},
    {Sync::kStreamedStepBeforeOut, "streamed-step-before-out",
     "copy-out stream waits for a piece's device AdamW before copying its "
     "master and moments back to the host (zero3.offloaded_step device or "
     "auto)"},
    {Sync::kStreamedSlotReuse, "streamed-slot-reuse",
     "copy-in stream waits for the copy-out of a slot's last piece before "
     "copying the next piece into it (zero3.offloaded_step device or auto)"},
    {Sync::kStreamedGradsBeforeStep, "streamed-grads-before-step",
     "the speculative streamed step waits for the reduction of a piece's "
     "last gradient bucket before its AdamW reads the gradients "
     "(zero3.offloaded_step device or auto, super_offload)"},
    {Sync::kStreamedStepBeforeCommit, "streamed-step-before-commit",
     "compute stream waits for the speculative streamed steps before "
     "copying their working copies into the shard (zero3.offloaded_step "
     "device or auto, super_offload)"},
    {Sync::kNvmeReadBeforeStep, "nvme-read-before-step",
     "host waits for a piece's read from the drive before its AdamW touches "
     "the window (offload_optimizer.device nvme)"},
    {Sync::kNvmeWriteBeforeReuse, "nvme-write-before-reuse",
     "host waits for a window's write-back to the drive before reading "
     "another piece into it (offload_optimizer.device nvme)"},
    {Sync::kNvmeParamReadBeforeCopy, "nvme-param-read-before-copy",
     "host waits for a partition's read from the drive before issuing its "
     "copy to the device (offload_param.device nvme)"},
    {Sync::kNvmeParamCopyBeforeReuse, "nvme-param-copy-before-reuse",
     "host waits for a window's copy to the device before reading another "
     "partition into it (offload_param.device nvme)"},
    {Sync::kNvmeParamWriteBeforeRead, "nvme-param-write-before-read",
     "host waits for an updated piece's write to the drive before reading a "
     "partition it overlaps (offload_param.device nvme)"},
    {Sync::kNvmeParamWriteBeforeReuse, "nvme-param-write-before-reuse",
     "host waits for a write window's last write to the drive before the "
     "next piece's working copy is cast into it (offload_param.device "
     "nvme)"},
};

const Entry& EntryOf(Sync sync) {
  for (const Entry& e : kEntries) {
    if (e.sync == sync) return e;
  }
  return kEntries[0];
}

}  // namespace

absl::string_view SyncName(Sync sync) { return EntryOf(sync).name; }
absl::string_view SyncDescription(Sync sync) {
  return EntryOf(sync).description;
}

std::vector<Sync> AllSyncs() {
  std::vector<Sync> all;
  for (const Entry& e : kEntries) all.push_back(e.sync);
  return all;
}

absl::StatusOr<Sync> ParseSync(absl::string_view name) {
  std::vector<std::string> names;
  for (const Entry& e : kEntries) {
    if (name == e.name) return e.sync;
    names.push_back(e.name);
  }
  const std::string near = NearestName(name, names);
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown synchronization '", name, "'",
      near.empty() ? "" : absl::StrCat(" (did you mean '", near, "'?)"),
      "; the engine's synchronizations are: ", absl::StrJoin(names, ", ")));
}

bool SyncPoints::enabled(Sync sync) const {
  return (dropped_ & (1u << static_cast<int>(sync))) == 0;
}

void SyncPoints::Drop(Sync sync) { dropped_ |= 1u << static_cast<int>(sync); }

std::vector<std::string> SyncPoints::dropped() const {
  std::vector<std::string> out;
  for (Sync s : AllSyncs()) {
    if (!enabled(s)) out.emplace_back(SyncName(s));
  }
  return out;
}

}  // namespace zero
}  // namespace zero3
