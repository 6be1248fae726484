// Copyright 2026 The zero3 Authors.
//
// param_coordinator.h: gathers parameters before modules use them and
// releases them after, as DeepSpeed's PartitionedParameterCoordinator.
//
// Each parameter lives as this rank's partition in a flat working shard
// (device memory, or host memory with offload_param). Before a module runs,
// its parameters are all-gathered on the gather stream into full buffers
// (W partitions back to back, so the first numel elements are the
// parameter), and the compute stream waits for them (gather-before-compute).
// After the module, a parameter is released unless it is persistent (numel
// at or under the persistence threshold: gathered once per step), or used
// again within max_reuse_distance elements of the recorded module order.
//
// Trace and prefetch: the order of module visits of the first step is
// recorded (forward, backward, and with activation checkpointing each
// recomputed layer's kRecompute visit just before its backward, which
// gathers its parameters again); from the second step on, entering a module
// prefetches the parameters of the modules that follow, up to
// prefetch_bucket_size elements in flight and max_live_parameters gathered. A
// step that departs from the recorded order re-records.
//
// With parameters on NVMe (ReadFrom), a partition comes from the drive
// through a read window (nvme_params.h) instead of the host shard; from the
// second step on, the partitions of the modules that follow are read ahead
// into the free windows after each module's gathers are issued.
//
// Buffers: gathered buffers come from a pool keyed by size and are never
// freed during training. Releasing one records an event on the compute
// stream; the next all-gather into it waits for that event
// (param-buffer-reuse), so reuse is event-ordered, not host-synchronized.
//
// Owns the pool, its events and the per-parameter state; destroy it only
// when the device is done with them (the engine synchronizes first). Not
// thread-safe.

#ifndef ZERO3_CORE_ZERO_PARAM_COORDINATOR_H_
#define ZERO3_CORE_ZERO_PARAM_COORDINATOR_H_

#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/model/transformer.h"
#include "core/runtime/owned_buffer.h"
#include "core/runtime/runtime.h"
#include "core/zero/context.h"
#include "core/zero/nvme_params.h"

namespace zero3 {
namespace zero {

class ParamCoordinator {
 public:
  // `shard`: the flat working shard, layout->total() elements of the model
  // dtype, on the device, or on the host with offload_param.
  static absl::StatusOr<std::unique_ptr<ParamCoordinator>> Create(
      const ZeroContext& ctx, const std::vector<model::ModuleInfo>& modules,
      const runtime::TensorRef& shard);

  absl::Status BeginModule(int module, model::Pass pass);
  runtime::TensorRef Param(int param) const;
  absl::Status EndModule(int module, model::Pass pass);

  // At the start of each optimizer step's first forward (with parameters on
  // NVMe, the first partitions start reading).
  absl::Status StartStep();
  // Between steps, forward passes that evaluate (no backward follows): their
  // visits are neither recorded nor prefetched for, and each module's
  // parameters but persistent ones are released after it; the recorded
  // order is kept for the next step. false again before the next step.
  void SetEvaluating(bool evaluating) { evaluating_ = evaluating; }
  // A range of the shard [begin, begin + elements) written by a copy that
  // records `written`.
  struct PendingWrite {
    int64_t begin = 0, elements = 0;
    runtime::Event* written = nullptr;
  };
  // After the optimizer updated the shard: releases every gathered
  // parameter; the next gathers wait for `updated` (recorded on the stream
  // that wrote the shard) when it is not null, and each for the `writes`
  // its partition overlaps (write-back-before-gather), so a layer's gathers
  // wait only for its own part of an overlapped write-back.
  absl::Status AfterUpdate(runtime::Event* updated,
                           std::vector<PendingWrite> writes = {});

  // Called with a gather's flat range [begin, begin + elements) before the
  // gather waits for the pending writes it overlaps: work that must come
  // first (the engine's deferred host update, which records those writes).
  using BeforeGather = std::function<absl::Status(int64_t, int64_t)>;
  void SetBeforeGather(BeforeGather f) { before_gather_ = std::move(f); }

  // With offload_param on NVMe: the partitions come from `params` (which
  // outlives this), not from the shard.
  void ReadFrom(NvmeParams* params) { nvme_ = params; }

  // Largest number of parameter elements gathered at once.
  int64_t peak_gathered_elements() const { return peak_gathered_; }

 private:
  enum class State { kReleased, kInflight, kAvailable };
  struct Block {
    runtime::OwnedBuffer buffer;
    std::unique_ptr<runtime::Event> released;
    bool used = false;
  };
  struct ParamState {
    State state = State::kReleased;
    Block* block = nullptr;
    std::unique_ptr<runtime::Event> gathered;
    bool persistent = false;
    int64_t numel = 0;
  };

  ParamCoordinator(const ZeroContext& ctx,
                   const std::vector<model::ModuleInfo>& modules,
                   const runtime::TensorRef& shard);
  absl::Status Init();
  // Gathers those of `params` that are released, on the gather stream: one
  // all-gather group (one collective) for all of them, or, with
  // offload_param (whose partitions share one staging buffer), one
  // all-gather each.
  absl::Status Gather(absl::Span<const int> params);
  // Gather's share for parameter `p` before the collective: a block, the
  // gather stream's waits (buffer reuse, the update, overlapping writes) and,
  // with offload_param, the partition's copy to the device.
  absl::StatusOr<runtime::AllGatherPart> PrepareGather(int p);
  // Gather's share after the collective: `p` is in flight.
  absl::Status FinishGather(int p);
  // The compute stream waits for `module`'s gathers still in flight.
  absl::Status MakeAvailable(int module);
  // The gather stream waits for the pending writes overlapping the shard's
  // [begin, begin + elements), and forgets them.
  absl::Status WaitForWrites(int64_t begin, int64_t elements);
  absl::Status Release(int p);
  absl::StatusOr<Block*> TakeBlock(int64_t elements);
  bool ReusedSoon(int p) const;
  absl::Status Prefetch();
  // With parameters on NVMe: starts reading the partitions of the recorded
  // visits after the current one that are not gathered, into the windows
  // free without waiting.
  absl::Status ReadAhead(size_t from);

  ZeroContext ctx_;
  std::vector<model::ModuleInfo> modules_;
  runtime::TensorRef shard_;
  std::vector<ParamState> params_;
  std::map<int64_t, std::vector<Block*>> free_blocks_;
  std::vector<std::unique_ptr<Block>> blocks_;
  runtime::OwnedBuffer staging_;  // device copy of host shards (offload_param)
  NvmeParams* nvme_ = nullptr;
  runtime::Event* pending_update_ = nullptr;
  std::vector<PendingWrite> pending_writes_;  // not yet waited on
  BeforeGather before_gather_;

  // Module-visit trace.
  struct Visit {
    int module;
    model::Pass pass;
    friend bool operator==(const Visit& a, const Visit& b) {
      return a.module == b.module && a.pass == b.pass;
    }
  };
  std::vector<Visit> trace_;
  bool trace_complete_ = false;
  bool evaluating_ = false;
  size_t position_ = 0;  // index of the current visit in trace_
  std::vector<int64_t> module_numel_;

  int64_t gathered_ = 0;  // elements gathered or in flight
  int64_t peak_gathered_ = 0;
};

}  // namespace zero
}  // namespace zero3

#endif  // ZERO3_CORE_ZERO_PARAM_COORDINATOR_H_
