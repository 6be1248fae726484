// Copyright 2026 The zero3 Authors.

#include "core/zero/streamed_step.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/kernels/dtype.h"
#include "core/util/status_macros.h"
#include "core/zero/host_adam.h"

namespace zero3 {
namespace zero {

using runtime::BufferSlice;
using runtime::DType;
using runtime::HostTask;
using runtime::KernelCall;
using runtime::TensorRef;
namespace ops = runtime::ops;

namespace {
constexpr const char* kStateNames[3] = {"master", "exp_avg", "exp_avg_sq"};
}  // namespace

StreamedStep::StreamedStep(const ZeroContext& ctx, const GradReducer& reducer,
                           const runtime::Buffer& shard)
    : ctx_(ctx),
      reducer_(reducer),
      rt_(*ctx.rt),
      shard_(shard),
      begin_(ctx.streamed_begin),
      elements_(ctx.host_begin - ctx.streamed_begin),
      dtypes_{ctx.options->host_master_dtype, ctx.options->host_moments_dtype,
              ctx.options->host_moments_dtype} {}

StreamedStep::~StreamedStep() = default;

absl::StatusOr<std::unique_ptr<StreamedStep>> StreamedStep::Create(
    const ZeroContext& ctx, const GradReducer& reducer,
    const runtime::Buffer& shard, const std::vector<ParamRange>& sub_groups,
    const std::vector<std::vector<DecayRun>>& decay_runs) {
  std::unique_ptr<StreamedStep> s(new StreamedStep(ctx, reducer, shard));
  if (s->elements_ <= 0) return s;
  // The host share's pieces from streamed_begin, up to host_begin (a
  // sub-group boundary: the engine cuts its sub-groups there).
  for (HostPiece& p :
       PlanHostPieces(sub_groups, decay_runs, ctx.streamed_begin,
                      ctx.options->host_step_piece, reducer.buckets())) {
    if (p.offset >= ctx.host_begin) break;
    // A multiple of 64 elements: every region starts 128-byte aligned.
    s->slot_elements_ =
        std::max(s->slot_elements_, (p.elements + 63) / 64 * 64);
    s->pieces_.push_back(std::move(p));
  }
  // The order their gradients complete in: the buckets run from the end.
  const std::vector<HostPiece>& pieces = s->pieces_;
  s->order_.resize(pieces.size());
  std::iota(s->order_.rbegin(), s->order_.rend(), 0);
  std::stable_sort(s->order_.begin(), s->order_.end(), [&](int a, int b) {
    return pieces[a].ready_bucket < pieces[b].ready_bucket;
  });
  s->speculative_ = StreamsSpeculatively(ctx);
  ZR_RETURN_IF_ERROR(s->Allocate());
  return s;
}

absl::Status StreamedStep::Allocate() {
  for (int set = 0; set < (speculative_ ? 2 : 1); ++set) {
    for (int i = 0; i < 3; ++i) {
      ZR_ASSIGN_OR_RETURN(
          state_[set][i],
          runtime::AllocateHost(
              rt_, elements_ * ElementBytes(i),
              runtime::HostMemoryKind::kPinned,
              absl::StrCat("streamed ", kStateNames[i], " (host",
                           set == 1 ? ", second copy)" : ")")));
    }
  }
  current_.assign(pieces_.size(), 0);
  runtime::Device& dev = rt_.device();
  ZR_ASSIGN_OR_RETURN(in_, dev.CreateStream("states in"));
  ZR_ASSIGN_OR_RETURN(out_, dev.CreateStream("states out"));
  slots_.resize(std::min<size_t>(ctx_.options->streamed_slots, pieces_.size()));
  for (size_t k = 0; k < slots_.size(); ++k) {
    Slot& slot = slots_[k];
    ZR_ASSIGN_OR_RETURN(
        slot.buffer,
        runtime::AllocateDevice(dev, RegionStart(3),
                                absl::StrCat("streamed state slot ", k)));
    ZR_ASSIGN_OR_RETURN(slot.in, dev.CreateEvent());
    ZR_ASSIGN_OR_RETURN(slot.stepped, dev.CreateEvent());
    ZR_ASSIGN_OR_RETURN(slot.out, dev.CreateEvent());
  }
  if (!speculative_) return absl::OkStatus();
  ZR_ASSIGN_OR_RETURN(step_, dev.CreateStream("streamed step"));
  ZR_ASSIGN_OR_RETURN(speculated_, dev.CreateEvent());
  ZR_ASSIGN_OR_RETURN(
      staged_,
      runtime::AllocateDevice(dev, elements_ * kernels::DTypeSize(ctx_.dtype),
                              "speculative working copy (streamed)"));
  return absl::OkStatus();
}

// State on the host ----------------------------------------------------------

std::vector<BufferSlice> StreamedStep::StateBuffers() const {
  std::vector<BufferSlice> all;
  for (const auto& set : state_) {
    for (const runtime::OwnedBuffer& b : set) {
      if (b.valid()) all.push_back(b.All());
    }
  }
  return all;
}

void StreamedStep::Read(int which, int64_t offset, int64_t n,
                        float* out) const {
  for (size_t p = 0; p < pieces_.size(); ++p) {
    const HostPiece& piece = pieces_[p];
    const int64_t from = std::max(offset, piece.offset);
    const int64_t to = std::min(offset + n, piece.offset + piece.elements);
    if (from >= to) continue;
    const char* src =
        static_cast<const char*>(state_[current_[p]][which].data());
    HostWidenToFloat(src + (from - begin_) * ElementBytes(which),
                     dtypes_[which], out + (from - offset), to - from, 1);
  }
}

BufferSlice StreamedStep::HostSlice(int pos, int set, int which) const {
  const HostPiece& p = PieceAt(pos);
  const int64_t e = ElementBytes(which);
  return state_[set][which].Slice((p.offset - begin_) * e, p.elements * e);
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
  for (const runtime::OwnedBuffer& b : state_[0]) {
    write.writes.push_back(b.All());
  }
  if (full_master != nullptr) {
    write.reads = {full_master->Slice(begin_ * 4, elements_ * 4)};
  }
  write.memory_bytes = 3 * elements_ * 4 * 2;
  write.run = [&]() -> absl::Status {
    for (int i = 0; i < 3; ++i) {
      const float* from = i == 0 && full_master != nullptr
                              ? write.reads[0].As<float>()
                              : values[i];
      if (from == nullptr) {
        std::memset(state_[0][i].data(), 0, elements_ * ElementBytes(i));
      } else {
        // bf16 states round to nearest even (exact for a bf16 run's own
        // checkpoint, and for a master already rounded through the model's
        // dtype).
        HostCastFromFloat(from, dtypes_[i], state_[0][i].data(), elements_, 1);
      }
    }
    return absl::OkStatus();
  };
  ZR_RETURN_IF_ERROR(rt_.RunHostTask(write));
  std::fill(current_.begin(), current_.end(), 0);
  return absl::OkStatus();
}

// On the device ---------------------------------------------------------------

TensorRef StreamedStep::SlotTensor(int pos, int which, int64_t offset,
                                   int64_t n) {
  // RegionStart is a whole number of elements: slot_elements_ is even.
  return TensorRef::Of(SlotAt(pos).buffer, dtypes_[which],
                       RegionStart(which) / ElementBytes(which) + offset, n);
}

absl::Status StreamedStep::CopyInThrough(int pos) {
  for (; in_upto_ <= pos; ++in_upto_) {
    const int at = in_upto_;
    Slot& slot = SlotAt(at);
    if (slot.out_recorded && ctx_.sync(Sync::kStreamedSlotReuse)) {
      ZR_RETURN_IF_ERROR(in_->Wait(*slot.out));
    }
    const int set = current_[order_[at]];
    const int64_t n = PieceAt(at).elements;
    for (int i = 0; i < 3; ++i) {
      ZR_RETURN_IF_ERROR(
          in_->Copy(slot.buffer.Slice(RegionStart(i), n * ElementBytes(i)),
                    HostSlice(at, set, i),
                    absl::StrCat("streamed ", kStateNames[i], " H2D")));
    }
    ZR_RETURN_IF_ERROR(in_->Record(*slot.in));
  }
  return absl::OkStatus();
}

absl::Status StreamedStep::CastAt(int pos, runtime::Stream& s, bool staged,
                                  const char* label) {
  const HostPiece& p = PieceAt(pos);
  const TensorRef to =
      staged ? TensorRef::Of(staged_, ctx_.dtype, p.offset - begin_, p.elements)
             : TensorRef::Of(shard_, ctx_.dtype, p.offset, p.elements);
  return s.Launch(
      KernelCall(ops::Cast::Of(SlotTensor(pos, 0, 0, p.elements), to),
                 absl::StrCat(label, ", ", p.name)));
}

absl::Status StreamedStep::StepAt(int pos, runtime::Stream& s,
                                  const kernels::AdamWArgs& args,
                                  const TensorRef& grads, bool cast_first,
                                  bool staged, int set) {
  ZR_RETURN_IF_ERROR(CopyInThrough(pos));
  Slot& slot = SlotAt(pos);
  if (ctx_.sync(Sync::kStreamedStatesBeforeStep)) {
    ZR_RETURN_IF_ERROR(s.Wait(*slot.in));
  }
  if (cast_first) {
    ZR_RETURN_IF_ERROR(CastAt(pos, s, false, "working shard (delayed)"));
  }
  const HostPiece& p = PieceAt(pos);
  for (const DecayRun& run : p.runs) {
    const int64_t at = run.offset - p.offset;
    ops::AdamW adam;
    adam.args = args;
    adam.args.n = run.elements;
    adam.args.weight_decay = run.weight_decay;
    adam.params = SlotTensor(pos, 0, at, run.elements);
    adam.grads = grads.Elements(run.offset, run.elements);
    adam.exp_avg = SlotTensor(pos, 1, at, run.elements);
    adam.exp_avg_sq = SlotTensor(pos, 2, at, run.elements);
    ZR_RETURN_IF_ERROR(s.Launch(KernelCall(
        adam, absl::StrCat(staged ? "speculative adamw " : "adamw ", p.name))));
  }
  if (!cast_first) {
    ZR_RETURN_IF_ERROR(
        CastAt(pos, s, staged,
               staged ? "speculative working copy" : "new working shard"));
  }
  ZR_RETURN_IF_ERROR(s.Record(*slot.stepped));
  if (ctx_.sync(Sync::kStreamedStepBeforeOut)) {
    ZR_RETURN_IF_ERROR(out_->Wait(*slot.stepped));
  }
  for (int i = 0; i < 3; ++i) {
    ZR_RETURN_IF_ERROR(out_->Copy(
        HostSlice(pos, set, i),
        slot.buffer.Slice(RegionStart(i), p.elements * ElementBytes(i)),
        absl::StrCat("streamed ", kStateNames[i], " D2H")));
  }
  ZR_RETURN_IF_ERROR(out_->Record(*slot.out));
  slot.out_recorded = true;
  const int n = static_cast<int>(pieces_.size());
  const int ahead = pos + static_cast<int>(slots_.size());
  if (ahead < n) return CopyInThrough(ahead);
  return absl::OkStatus();
}

absl::Status StreamedStep::CastWorkingCopy() {
  runtime::Stream& compute = *ctx_.compute;
  for (int pos = 0; pos < static_cast<int>(pieces_.size()); ++pos) {
    ZR_RETURN_IF_ERROR(CopyInThrough(pos));
    Slot& slot = SlotAt(pos);
    if (ctx_.sync(Sync::kStreamedStatesBeforeStep)) {
      ZR_RETURN_IF_ERROR(compute.Wait(*slot.in));
    }
    ZR_RETURN_IF_ERROR(CastAt(pos, compute, false, "working shard"));
    // The cast is the slot's last reader: what its next copy-in waits for
    // (streamed-slot-reuse).
    ZR_RETURN_IF_ERROR(compute.Record(*slot.out));
    slot.out_recorded = true;
  }
  in_upto_ = 0;
  return absl::OkStatus();
}

absl::Status StreamedStep::Prefetch() {
  const int n = static_cast<int>(pieces_.size());
  return n > 0 ? CopyInThrough(static_cast<int>(slots_.size()) - 1)
               : absl::OkStatus();
}

// The speculative step ----------------------------------------------------

void StreamedStep::BeginSpeculation(const kernels::AdamWArgs& args) {
  if (!speculative_) return;
  speculating_ = true;
  speculated_args_ = args;
  speculated_upto_ = 0;
  outcome_ = Outcome();
}

absl::Status StreamedStep::Speculate() {
  if (!speculating_) return absl::OkStatus();
  const TensorRef grads = reducer_.device_partition();
  const int n = static_cast<int>(pieces_.size());
  while (speculated_upto_ < n) {
    const int pos = speculated_upto_;
    const int bucket = PieceAt(pos).ready_bucket;
    if (bucket >= reducer_.buckets_issued()) break;
    if (ctx_.sync(Sync::kStreamedGradsBeforeStep)) {
      ZR_RETURN_IF_ERROR(step_->Wait(*reducer_.partition_final(bucket)));
    }
    ZR_RETURN_IF_ERROR(StepAt(pos, *step_, speculated_args_, grads,
                              /*cast_first=*/false, /*staged=*/true,
                              1 - current_[order_[pos]]));
    ++speculated_upto_;
  }
  return absl::OkStatus();
}

absl::Status StreamedStep::EndSpeculation(bool commit) {
  speculating_ = false;
  outcome_.pieces = speculated_upto_;
  outcome_.committed = commit && speculated_upto_ > 0;
  if (speculated_upto_ == 0) return absl::OkStatus();
  runtime::Stream& compute = *ctx_.compute;
  // Also orders the next backward's writes of the gradient partition after
  // the speculative steps' reads.
  ZR_RETURN_IF_ERROR(step_->Record(*speculated_));
  if (ctx_.sync(Sync::kStreamedStepBeforeCommit)) {
    ZR_RETURN_IF_ERROR(compute.Wait(*speculated_));
  }
  if (!commit) {
    // The slots hold the discarded results: every piece comes in again.
    speculated_upto_ = 0;
    in_upto_ = 0;
    return absl::OkStatus();
  }
  const int64_t esize = kernels::DTypeSize(ctx_.dtype);
  for (int pos = 0; pos < speculated_upto_; ++pos) {
    const HostPiece& p = PieceAt(pos);
    ZR_RETURN_IF_ERROR(compute.Copy(
        shard_.Slice(p.offset * esize, p.elements * esize),
        staged_.Slice((p.offset - begin_) * esize, p.elements * esize),
        absl::StrCat("commit working copy, ", p.name)));
    current_[order_[pos]] ^= 1;
  }
  return absl::OkStatus();
}

absl::Status StreamedStep::Update(const kernels::AdamWArgs& args,
                                  const TensorRef& grads, bool cast_first,
                                  bool validated) {
  if (speculating_) ZR_RETURN_IF_ERROR(EndSpeculation(validated));
  const int from = speculated_upto_;
  speculated_upto_ = 0;
  for (int pos = from; pos < static_cast<int>(pieces_.size()); ++pos) {
    ZR_RETURN_IF_ERROR(StepAt(pos, *ctx_.compute, args, grads, cast_first,
                              /*staged=*/false, current_[order_[pos]]));
  }
  in_upto_ = 0;
  return absl::OkStatus();
}

absl::Status StreamedStep::Skip() {
  if (!speculating_) return absl::OkStatus();
  ZR_RETURN_IF_ERROR(EndSpeculation(false));
  return absl::OkStatus();
}

}  // namespace zero
}  // namespace zero3
