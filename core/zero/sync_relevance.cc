// Copyright 2026 The zero3 Authors.

#include "core/zero/sync_relevance.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"

namespace zero3 {
namespace zero {

std::string DropHasNoEffect(Sync sync, const ZeroOptions& options,
                            absl::Span<const int64_t> param_numels) {
  if (sync == Sync::kParamsUpdatedBeforeGather && options.offload_param) {
    // The working shards live in host memory and the host updates them in
    // host tasks that end before it issues the next step's gathers.
    return "with offload_param the host writes the updated shards before it "
           "issues the next step's gathers, so the host's own order protects "
           "them";
  }
  if (sync == Sync::kSpeculativeGradsOnHost &&
      !HostStepPlanOf(options).speculative) {
    return "only the speculative step (offload_optimizer.super_offload, with "
           "the optimizer offloaded and neither offload_param nor "
           "grad_offload_copy per_param_fp32) has this synchronization";
  }
  if (sync == Sync::kWriteBackBeforeGather &&
      !HostStepPlanOf(options).moves()) {
    return "only the speculative step (offload_optimizer.super_offload) and "
           "the moved host step (zero3.host_step_overlap \"forward\" or "
           "\"delayed\"), with the optimizer offloaded and neither "
           "offload_param nor grad_offload_copy per_param_fp32, write the "
           "working copy back on a stream of its own";
  }
  if (sync == Sync::kWriteBackBeforeHostPiece &&
      !HostStepPlanOf(options).delayed) {
    return "only the delayed update (zero3.host_step_overlap \"delayed\", "
           "with the optimizer offloaded and neither offload_param nor "
           "grad_offload_copy per_param_fp32) has this synchronization";
  }
  if (sync == Sync::kHostStepBeforeGather &&
      !HostStepPlanOf(options).in_forward) {
    return "only the host step under the forward (zero3.host_step_overlap "
           "\"forward\", with the optimizer offloaded and neither "
           "offload_param nor grad_offload_copy per_param_fp32) has this "
           "synchronization";
  }
  const bool streamed = sync == Sync::kStreamedStatesBeforeStep ||
                        sync == Sync::kStreamedStepBeforeOut ||
                        sync == Sync::kStreamedSlotReuse ||
                        sync == Sync::kStreamedGradsBeforeStep ||
                        sync == Sync::kStreamedStepBeforeCommit;
  if (streamed && (!options.offload_optimizer || options.offload_param ||
                   options.device_step_share <= 0)) {
    return "only the offloaded step on the device (zero3.offloaded_step "
           "\"device\" or \"auto\", with the optimizer offloaded and "
           "offload_param off) streams optimizer state through the device";
  }
  if ((sync == Sync::kStreamedGradsBeforeStep ||
       sync == Sync::kStreamedStepBeforeCommit) &&
      !HostStepPlanOf(options).speculative) {
    return "only the speculative step (offload_optimizer.super_offload) "
           "steps streamed pieces during backward";
  }
  if ((sync == Sync::kNvmeReadBeforeStep ||
       sync == Sync::kNvmeWriteBeforeReuse) &&
      (!options.offload_optimizer || options.nvme_path.empty())) {
    return "only the optimizer state on NVMe (offload_optimizer.device "
           "\"nvme\") is read from and written to a drive";
  }
  if ((sync == Sync::kNvmeParamReadBeforeCopy ||
       sync == Sync::kNvmeParamCopyBeforeReuse ||
       sync == Sync::kNvmeParamWriteBeforeRead ||
       sync == Sync::kNvmeParamWriteBeforeReuse) &&
      !ParamsOnNvme(options)) {
    return "only parameters on NVMe (offload_param.device \"nvme\") are "
           "read from and written to a drive";
  }
  const bool host_checkpoint = sync == Sync::kCheckpointOffloadAfterWrite ||
                               sync == Sync::kCheckpointSlotReuse ||
                               sync == Sync::kCheckpointRestoreSlotFree ||
                               sync == Sync::kCheckpointRestoreBeforeRecompute;
  if (host_checkpoint &&
      (options.checkpoint_every == 0 || !options.checkpoint_to_host)) {
    return "nothing is copied to host memory without activation "
           "checkpointing and cpu_checkpointing";
  }
  if (sync != Sync::kParamBufferReuse &&
      sync != Sync::kParamsUpdatedBeforeGather) {
    return "";
  }
  const bool all_persistent = std::all_of(
      param_numels.begin(), param_numels.end(),
      [&](int64_t n) { return n <= options.param_persistence_threshold; });
  if (!all_persistent) return "";
  // Persistent parameters are released only after the update; the next
  // gather into a buffer waits both for its release (param-buffer-reuse)
  // and for the update (params-updated-before-gather), and either wait
  // orders it after both. With offload_param the host has also waited for
  // the step's streams by then.
  return absl::StrCat(
      "every parameter has at most stage3_param_persistence_threshold (",
      options.param_persistence_threshold,
      ") elements and stays gathered until the update, so ",
      options.offload_param
          ? "the host's wait at the end of the step orders the next gathers"
          : (sync == Sync::kParamBufferReuse
                 ? "params-updated-before-gather's wait covers this one"
                 : "param-buffer-reuse's wait covers this one"),
      "; set zero_optimization.stage3_param_persistence_threshold=0 to gather "
      "and release every parameter");
}

}  // namespace zero
}  // namespace zero3
