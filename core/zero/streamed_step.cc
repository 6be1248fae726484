// Copyright 2026 The zero3 Authors.

#include "core/zero/streamed_step.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace zero {

using runtime::DType;
using runtime::HostTask;
using runtime::KernelCall;
using runtime::TensorRef;
namespace ops = runtime::ops;

namespace {
constexpr const char* kStateNames[3] = {"master", "exp_avg", "exp_avg_sq"};
}  // namespace

StreamedStep::StreamedStep(const ZeroContext& ctx, const runtime::Buffer& shard)
    : ctx_(ctx),
      rt_(*ctx.rt),
      shard_(shard),
      begin_(ctx.streamed_begin),
      elements_(ctx.host_begin - ctx.streamed_begin) {}

StreamedStep::~StreamedStep() = default;

absl::StatusOr<std::unique_ptr<StreamedStep>> StreamedStep::Create(
    const ZeroContext& ctx, const runtime::Buffer& shard,
    const std::vector<ParamRange>& sub_groups,
    const std::vector<std::vector<DecayRun>>& decay_runs) {
  std::unique_ptr<StreamedStep> s(new StreamedStep(ctx, shard));
  if (s->elements_ <= 0) return s;
  // The pieces of the host share's planner from streamed_begin, up to
  // host_begin (a sub-group boundary: the engine cuts its sub-groups
  // there).
  for (HostPiece& p :
       PlanHostPieces(sub_groups, decay_runs, ctx.streamed_begin,
                      ctx.options->host_step_piece, /*buckets=*/{})) {
    if (p.offset >= ctx.host_begin) break;
    s->slot_elements_ = std::max(s->slot_elements_, p.elements);
    s->pieces_.push_back(std::move(p));
  }
  ZR_RETURN_IF_ERROR(s->Allocate());
  return s;
}

absl::Status StreamedStep::Allocate() {
  for (int i = 0; i < 3; ++i) {
    ZR_ASSIGN_OR_RETURN(
        state_[i], runtime::AllocateHost(
                       rt_, elements_ * 4, runtime::HostMemoryKind::kPinned,
                       absl::StrCat("streamed ", kStateNames[i], " (host)")));
  }
  runtime::Device& dev = rt_.device();
  ZR_ASSIGN_OR_RETURN(in_, dev.CreateStream("states in"));
  ZR_ASSIGN_OR_RETURN(out_, dev.CreateStream("states out"));
  for (int k = 0; k < kSlots; ++k) {
    Slot& slot = slots_[k];
    ZR_ASSIGN_OR_RETURN(
        slot.buffer,
        runtime::AllocateDevice(dev, 3 * slot_elements_ * 4,
                                absl::StrCat("streamed state slot ", k)));
    ZR_ASSIGN_OR_RETURN(slot.in, dev.CreateEvent());
    ZR_ASSIGN_OR_RETURN(slot.stepped, dev.CreateEvent());
    ZR_ASSIGN_OR_RETURN(slot.out, dev.CreateEvent());
  }
  return absl::OkStatus();
}

TensorRef StreamedStep::SlotTensor(int piece, int which, int64_t offset,
                                   int64_t n) {
  return TensorRef::Of(SlotOf(piece).buffer, DType::kF32,
                       which * slot_elements_ + offset, n);
}

absl::Status StreamedStep::CopyIn(int piece) {
  Slot& slot = SlotOf(piece);
  if (slot.out_recorded && ctx_.sync(Sync::kStreamedSlotReuse)) {
    ZR_RETURN_IF_ERROR(in_->Wait(*slot.out));
  }
  const HostPiece& p = pieces_[piece];
  const int64_t host_offset = (p.offset - begin_) * 4;
  for (int i = 0; i < 3; ++i) {
    ZR_RETURN_IF_ERROR(
        in_->Copy(slot.buffer.Slice(i * slot_elements_ * 4, p.elements * 4),
                  state_[i].Slice(host_offset, p.elements * 4),
                  absl::StrCat("streamed ", kStateNames[i], " H2D")));
  }
  return in_->Record(*slot.in);
}

absl::Status StreamedStep::CopyOut(int piece) {
  Slot& slot = SlotOf(piece);
  ZR_RETURN_IF_ERROR(ctx_.compute->Record(*slot.stepped));
  if (ctx_.sync(Sync::kStreamedStepBeforeOut)) {
    ZR_RETURN_IF_ERROR(out_->Wait(*slot.stepped));
  }
  const HostPiece& p = pieces_[piece];
  const int64_t host_offset = (p.offset - begin_) * 4;
  for (int i = 0; i < 3; ++i) {
    ZR_RETURN_IF_ERROR(
        out_->Copy(state_[i].Slice(host_offset, p.elements * 4),
                   slot.buffer.Slice(i * slot_elements_ * 4, p.elements * 4),
                   absl::StrCat("streamed ", kStateNames[i], " D2H")));
  }
  ZR_RETURN_IF_ERROR(out_->Record(*slot.out));
  slot.out_recorded = true;
  return absl::OkStatus();
}

absl::Status StreamedStep::CastPiece(int piece, const char* label) {
  const HostPiece& p = pieces_[piece];
  return ctx_.compute->Launch(KernelCall(
      ops::Cast::Of(SlotTensor(piece, 0, 0, p.elements),
                    TensorRef::Of(shard_, ctx_.dtype, p.offset, p.elements)),
      absl::StrCat(label, ", ", p.name)));
}

absl::Status StreamedStep::Prefetch() {
  const int n = static_cast<int>(pieces_.size());
  for (; prefetched_ < std::min(n, kSlots); ++prefetched_) {
    ZR_RETURN_IF_ERROR(CopyIn(prefetched_));
  }
  return absl::OkStatus();
}

absl::Status StreamedStep::Update(const kernels::AdamWArgs& args,
                                  const TensorRef& grads, bool cast_first) {
  ZR_RETURN_IF_ERROR(Prefetch());
  runtime::Stream& compute = *ctx_.compute;
  const int n = static_cast<int>(pieces_.size());
  for (int i = 0; i < n; ++i) {
    Slot& slot = SlotOf(i);
    if (ctx_.sync(Sync::kStreamedStatesBeforeStep)) {
      ZR_RETURN_IF_ERROR(compute.Wait(*slot.in));
    }
    if (cast_first) ZR_RETURN_IF_ERROR(CastPiece(i, "working shard (delayed)"));
    const HostPiece& p = pieces_[i];
    for (const DecayRun& run : p.runs) {
      const int64_t at = run.offset - p.offset;
      ops::AdamW adam;
      adam.args = args;
      adam.args.n = run.elements;
      adam.args.weight_decay = run.weight_decay;
      adam.params = SlotTensor(i, 0, at, run.elements);
      adam.grads = grads.Elements(run.offset, run.elements);
      adam.exp_avg = SlotTensor(i, 1, at, run.elements);
      adam.exp_avg_sq = SlotTensor(i, 2, at, run.elements);
      ZR_RETURN_IF_ERROR(
          compute.Launch(KernelCall(adam, absl::StrCat("adamw ", p.name))));
    }
    if (!cast_first) ZR_RETURN_IF_ERROR(CastPiece(i, "new working shard"));
    ZR_RETURN_IF_ERROR(CopyOut(i));
    if (i + kSlots < n) ZR_RETURN_IF_ERROR(CopyIn(i + kSlots));
  }
  prefetched_ = 0;
  return absl::OkStatus();
}

absl::Status StreamedStep::Import(const float* master, const float* exp_avg,
                                  const float* exp_avg_sq) {
  if (elements_ <= 0) return absl::OkStatus();
  const float* const values[3] = {master, exp_avg, exp_avg_sq};
  ZR_RETURN_IF_ERROR(Write(values, nullptr));
  return CastWorkingCopy();
}

absl::Status StreamedStep::ImportMaster(const runtime::Buffer& full_master) {
  if (elements_ <= 0) return absl::OkStatus();
  const float* const zeros[3] = {nullptr, nullptr, nullptr};
  ZR_RETURN_IF_ERROR(Write(zeros, &full_master));
  return CastWorkingCopy();
}

absl::Status StreamedStep::Write(const float* const values[3],
                                 const runtime::Buffer* full_master) {
  HostTask write;
  write.label = "streamed optimizer state";
  for (const runtime::OwnedBuffer& b : state_) write.writes.push_back(b.All());
  if (full_master != nullptr) {
    write.reads = {full_master->Slice(begin_ * 4, elements_ * 4)};
  }
  write.memory_bytes = 3 * elements_ * 4 * 2;
  write.run = [&]() -> absl::Status {
    for (int i = 0; i < 3; ++i) {
      const void* from = i == 0 && full_master != nullptr
                             ? write.reads[0].data()
                             : static_cast<const void*>(values[i]);
      if (from == nullptr) {
        std::memset(state_[i].data(), 0, elements_ * 4);
      } else {
        std::memcpy(state_[i].data(), from, elements_ * 4);
      }
    }
    return absl::OkStatus();
  };
  return rt_.RunHostTask(write);
}

absl::Status StreamedStep::CastWorkingCopy() {
  runtime::Stream& compute = *ctx_.compute;
  for (int i = 0; i < static_cast<int>(pieces_.size()); ++i) {
    ZR_RETURN_IF_ERROR(CopyIn(i));
    Slot& slot = SlotOf(i);
    if (ctx_.sync(Sync::kStreamedStatesBeforeStep)) {
      ZR_RETURN_IF_ERROR(compute.Wait(*slot.in));
    }
    ZR_RETURN_IF_ERROR(CastPiece(i, "working shard"));
    // The cast is the slot's last reader: what its next copy-in waits for
    // (streamed-slot-reuse).
    ZR_RETURN_IF_ERROR(compute.Record(*slot.out));
    slot.out_recorded = true;
  }
  prefetched_ = 0;
  return absl::OkStatus();
}

}  // namespace zero
}  // namespace zero3
