// Copyright 2026 The zero3 Authors.

#include "core/zero/param_coordinator.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/util/check.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace zero {

using runtime::TensorRef;

ParamCoordinator::ParamCoordinator(
    const ZeroContext& ctx, const std::vector<model::ModuleInfo>& modules,
    const TensorRef& shard)
    : ctx_(ctx), modules_(modules), shard_(shard) {}

absl::StatusOr<std::unique_ptr<ParamCoordinator>> ParamCoordinator::Create(
    const ZeroContext& ctx, const std::vector<model::ModuleInfo>& modules,
    const TensorRef& shard) {
  std::unique_ptr<ParamCoordinator> c(
      new ParamCoordinator(ctx, modules, shard));
  ZR_RETURN_IF_ERROR(c->Init());
  return c;
}

absl::Status ParamCoordinator::Init() {
  const ShardLayout& layout = *ctx_.layout;
  params_.resize(layout.num_params());
  int64_t max_partition = 0;
  for (int p = 0; p < layout.num_params(); ++p) {
    ParamState& s = params_[p];
    s.numel = layout.param(p).numel;
    s.persistent = s.numel <= ctx_.options->param_persistence_threshold;
    ZR_ASSIGN_OR_RETURN(s.gathered, ctx_.rt->device().CreateEvent());
    max_partition = std::max(max_partition, layout.param(p).partition);
  }
  module_numel_.resize(modules_.size());
  for (size_t m = 0; m < modules_.size(); ++m) {
    for (int p : modules_[m].params) module_numel_[m] += params_[p].numel;
  }
  if (ctx_.options->offload_param) {
    ZR_ASSIGN_OR_RETURN(
        staging_,
        runtime::AllocateDevice(ctx_.rt->device(),
                                max_partition * kernels::DTypeSize(ctx_.dtype),
                                "offloaded shard staging"));
  }
  return absl::OkStatus();
}

TensorRef ParamCoordinator::Param(int param) const {
  const ParamState& s = params_[param];
  ZR_CHECK(s.state == State::kAvailable)
      << "parameter " << param << " used outside BeginModule/EndModule";
  return TensorRef::Of(s.block->buffer, ctx_.dtype, 0, s.numel);
}

absl::StatusOr<ParamCoordinator::Block*> ParamCoordinator::TakeBlock(
    int64_t elements) {
  std::vector<Block*>& free = free_blocks_[elements];
  if (!free.empty()) {
    Block* b = free.back();
    free.pop_back();
    return b;
  }
  auto block = std::make_unique<Block>();
  ZR_ASSIGN_OR_RETURN(
      block->buffer,
      runtime::AllocateDevice(ctx_.rt->device(),
                              elements * kernels::DTypeSize(ctx_.dtype),
                              "gathered parameter"));
  ZR_ASSIGN_OR_RETURN(block->released, ctx_.rt->device().CreateEvent());
  blocks_.push_back(std::move(block));
  return blocks_.back().get();
}

absl::Status ParamCoordinator::Gather(absl::Span<const int> params) {
  std::vector<int> todo;
  for (int p : params) {
    if (params_[p].state == State::kReleased &&
        std::find(todo.begin(), todo.end(), p) == todo.end()) {
      todo.push_back(p);
    }
  }
  if (todo.empty()) return absl::OkStatus();
  std::vector<runtime::AllGatherPart> parts;
  for (int p : todo) {
    ZR_ASSIGN_OR_RETURN(runtime::AllGatherPart part, PrepareGather(p));
    if (ctx_.options->offload_param) {
      // The partitions come through one staging buffer: one at a time.
      ZR_RETURN_IF_ERROR(
          ctx_.dp->AllGather(*ctx_.gather, part.send, part.recv,
                             absl::StrCat("all-gather param ", p)));
      ZR_RETURN_IF_ERROR(FinishGather(p));
      continue;
    }
    parts.push_back(part);
  }
  if (parts.empty()) return absl::OkStatus();
  if (parts.size() == 1) {
    ZR_RETURN_IF_ERROR(
        ctx_.dp->AllGather(*ctx_.gather, parts[0].send, parts[0].recv,
                           absl::StrCat("all-gather param ", todo[0])));
  } else {
    ZR_RETURN_IF_ERROR(ctx_.dp->AllGatherGroup(
        *ctx_.gather, parts,
        absl::StrCat("all-gather params ", todo.front(), "..", todo.back())));
  }
  for (int p : todo) ZR_RETURN_IF_ERROR(FinishGather(p));
  return absl::OkStatus();
}

absl::StatusOr<runtime::AllGatherPart> ParamCoordinator::PrepareGather(int p) {
  ParamState& s = params_[p];
  const ParamShard& shard = ctx_.layout->param(p);
  ZR_ASSIGN_OR_RETURN(Block * block, TakeBlock(shard.padded));
  runtime::Stream& g = *ctx_.gather;
  if (block->used && ctx_.sync(Sync::kParamBufferReuse)) {
    ZR_RETURN_IF_ERROR(g.Wait(*block->released));
  }
  if (pending_update_ != nullptr) {
    if (ctx_.sync(Sync::kParamsUpdatedBeforeGather)) {
      ZR_RETURN_IF_ERROR(g.Wait(*pending_update_));
    }
    pending_update_ = nullptr;
  }
  ZR_RETURN_IF_ERROR(WaitForWrites(shard.offset, shard.partition));
  if (nvme_ != nullptr) {
    // From the drive through a read window, on the gather stream: the
    // window is reused only after these copies.
    const TensorRef staged =
        TensorRef::Of(staging_, ctx_.dtype, 0, shard.partition);
    const int64_t esize = kernels::DTypeSize(ctx_.dtype);
    ZR_ASSIGN_OR_RETURN(const std::vector<NvmeParams::Segment> segments,
                        nvme_->Acquire(p));
    for (const NvmeParams::Segment& seg : segments) {
      ZR_RETURN_IF_ERROR(
          g.Copy(staged.slice.Sub(seg.at * esize, seg.bytes.bytes()), seg.bytes,
                 absl::StrCat("param ", p, " shard H2D")));
    }
    ZR_RETURN_IF_ERROR(nvme_->Release(p, g));
    block->used = true;
    s.block = block;
    return runtime::AllGatherPart{
        staged, TensorRef::Of(block->buffer, ctx_.dtype, 0, shard.padded)};
  }
  TensorRef send = shard_.Elements(shard.offset, shard.partition);
  if (ctx_.options->offload_param) {
    // The partition lives in host memory: bring it over on the same stream
    // as the all-gather, so stream order alone protects the staging buffer.
    const TensorRef staged =
        TensorRef::Of(staging_, ctx_.dtype, 0, shard.partition);
    ZR_RETURN_IF_ERROR(g.Copy(staged.slice, send.slice,
                              absl::StrCat("param ", p, " shard H2D")));
    send = staged;
  }
  block->used = true;
  s.block = block;
  return runtime::AllGatherPart{
      send, TensorRef::Of(block->buffer, ctx_.dtype, 0, shard.padded)};
}

absl::Status ParamCoordinator::FinishGather(int p) {
  ParamState& s = params_[p];
  ZR_RETURN_IF_ERROR(ctx_.gather->Record(*s.gathered));
  s.state = State::kInflight;
  gathered_ += ctx_.layout->param(p).padded;
  peak_gathered_ = std::max(peak_gathered_, gathered_);
  return absl::OkStatus();
}

absl::Status ParamCoordinator::Release(int p) {
  ParamState& s = params_[p];
  if (s.state == State::kReleased) return absl::OkStatus();
  // Kernels that read the buffer were enqueued on the compute stream before
  // this point; the next gather into the block waits for this record.
  ZR_RETURN_IF_ERROR(ctx_.compute->Record(*s.block->released));
  const int64_t padded = ctx_.layout->param(p).padded;
  free_blocks_[padded].push_back(s.block);
  s.block = nullptr;
  s.state = State::kReleased;
  gathered_ -= padded;
  return absl::OkStatus();
}

absl::Status ParamCoordinator::StartStep() {
  if (!trace_.empty() && !trace_complete_) trace_complete_ = true;
  position_ = 0;
  return trace_complete_ ? ReadAhead(0) : absl::OkStatus();
}

absl::Status ParamCoordinator::ReadAhead(size_t from) {
  if (nvme_ == nullptr) return absl::OkStatus();
  for (size_t i = from; i < trace_.size(); ++i) {
    for (int p : modules_[trace_[i].module].params) {
      if (params_[p].state != State::kReleased) continue;
      ZR_ASSIGN_OR_RETURN(const bool started, nvme_->Prefetch(p));
      if (!started) return absl::OkStatus();
    }
  }
  return absl::OkStatus();
}

absl::Status ParamCoordinator::BeginModule(int module, model::Pass pass) {
  const Visit visit{module, pass};
  if (evaluating_) {
    ZR_RETURN_IF_ERROR(Gather(modules_[module].params));
    return MakeAvailable(module);
  }
  if (trace_complete_) {
    if (position_ >= trace_.size() || !(trace_[position_] == visit)) {
      // The module order changed: record it again, without prefetching.
      trace_complete_ = false;
      trace_.clear();
    }
  }
  if (!trace_complete_) {
    trace_.push_back(visit);
    position_ = trace_.size() - 1;
  }
  ZR_RETURN_IF_ERROR(Gather(modules_[module].params));
  ZR_RETURN_IF_ERROR(MakeAvailable(module));
  if (trace_complete_) {
    ZR_RETURN_IF_ERROR(Prefetch());
    ZR_RETURN_IF_ERROR(ReadAhead(position_ + 1));
  }
  return absl::OkStatus();
}

absl::Status ParamCoordinator::MakeAvailable(int module) {
  for (int p : modules_[module].params) {
    ParamState& s = params_[p];
    if (s.state == State::kInflight) {
      if (ctx_.sync(Sync::kGatherBeforeCompute)) {
        ZR_RETURN_IF_ERROR(ctx_.compute->Wait(*s.gathered));
      }
      s.state = State::kAvailable;
    }
  }
  return absl::OkStatus();
}

absl::Status ParamCoordinator::Prefetch() {
  const ZeroOptions& o = *ctx_.options;
  if (o.prefetch_bucket_size <= 0) return absl::OkStatus();
  const int64_t budget =
      std::min(o.max_live_parameters - gathered_, o.prefetch_bucket_size);
  int64_t prefetching = 0;
  // One gather group per module, so that each module's wait ends with its
  // own parameters.
  for (size_t i = position_ + 1; i < trace_.size() && prefetching < budget;
       ++i) {
    std::vector<int> group;
    for (int p : modules_[trace_[i].module].params) {
      if (prefetching >= budget) break;
      if (params_[p].state != State::kReleased) continue;
      group.push_back(p);
      prefetching += ctx_.layout->param(p).padded;
    }
    ZR_RETURN_IF_ERROR(Gather(group));
  }
  return absl::OkStatus();
}

bool ParamCoordinator::ReusedSoon(int p) const {
  if (!trace_complete_) return false;
  int64_t distance = 0;
  for (size_t i = position_ + 1; i < trace_.size(); ++i) {
    if (distance >= ctx_.options->max_reuse_distance) return false;
    const std::vector<int>& params = modules_[trace_[i].module].params;
    if (std::find(params.begin(), params.end(), p) != params.end()) return true;
    distance += module_numel_[trace_[i].module];
  }
  return false;
}

absl::Status ParamCoordinator::EndModule(int module, model::Pass pass) {
  for (int p : modules_[module].params) {
    const ParamState& s = params_[p];
    if (s.persistent || (!evaluating_ && ReusedSoon(p))) continue;
    ZR_RETURN_IF_ERROR(Release(p));
  }
  if (!evaluating_) ++position_;
  return absl::OkStatus();
}

absl::Status ParamCoordinator::AfterUpdate(runtime::Event* updated,
                                           std::vector<PendingWrite> writes) {
  for (int p = 0; p < static_cast<int>(params_.size()); ++p) {
    ZR_RETURN_IF_ERROR(Release(p));
  }
  pending_update_ = updated;
  // A write no gather has waited for yet stays pending.
  pending_writes_.insert(pending_writes_.end(), writes.begin(), writes.end());
  return absl::OkStatus();
}

absl::Status ParamCoordinator::WaitForWrites(int64_t begin, int64_t elements) {
  if (before_gather_) ZR_RETURN_IF_ERROR(before_gather_(begin, elements));
  // Once the gather stream has waited for a write, stream order keeps every
  // later gather after it: each write is waited on once.
  for (size_t i = 0; i < pending_writes_.size();) {
    const PendingWrite& w = pending_writes_[i];
    if (w.begin >= begin + elements || w.begin + w.elements <= begin) {
      ++i;
      continue;
    }
    if (ctx_.sync(Sync::kWriteBackBeforeGather)) {
      ZR_RETURN_IF_ERROR(ctx_.gather->Wait(*w.written));
    }
    pending_writes_.erase(pending_writes_.begin() + i);
  }
  return absl::OkStatus();
}

}  // namespace zero
}  // namespace zero3
