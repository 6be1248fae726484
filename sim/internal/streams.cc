// Copyright 2026 The zero3 Authors.

#include "sim/internal/streams.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <variant>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/strings/str_cat.h"
#include "core/runtime/argument_checks.h"
#include "core/runtime/kernel_call_checks.h"
#include "core/runtime/launch_count.h"
#include "core/runtime/reference_executor.h"
#include "core/util/status_macros.h"
#include "sim/internal/kernel_work.h"

namespace zero3 {
namespace sim {
namespace internal {

namespace {

// What a copy of `kind` keeps busy, for the activity record.
ActivityInterval::Kind CopyActivity(CopyKind kind) {
  switch (kind) {
    case CopyKind::kDeviceToDevice:
      return ActivityInterval::Kind::kCompute;
    case CopyKind::kPinnedH2D:
    case CopyKind::kPageableH2D:
      return ActivityInterval::Kind::kHostToDevice;
    case CopyKind::kPinnedD2H:
    case CopyKind::kPageableD2H:
      return ActivityInterval::Kind::kDeviceToHost;
    case CopyKind::kHostToHost:
      break;
  }
  return ActivityInterval::Kind::kCopy;
}

}  // namespace

using runtime::BufferSlice;
using runtime::KernelCall;
using runtime::MemorySpace;

// ---------------------------------------------------------------------------
// SimEvent

absl::Status SimEvent::Synchronize() {
  RankState* r = rank_;
  r->HostCost(r->cost().event_call_nanos());
  if (recorded_) {
    r->BlockUntil(time_ns_, "event synchronize");
    r->HostJoinClock(clock_);
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> SimEvent::Query() {
  RankState* r = rank_;
  r->HostCost(r->cost().event_call_nanos());
  if (!recorded_) return true;
  if (time_ns_ > r->now()) return false;
  // The host may now read what the event covers: ordered as by Synchronize.
  r->HostJoinClock(clock_);
  return true;
}

// ---------------------------------------------------------------------------
// SimStream: bookkeeping

SimStream::SimStream(RankState* rank, std::string name, int agent, int track)
    : rank_(rank),
      name_(std::move(name)),
      agent_(agent),
      track_(track),
      tail_ns_(rank->now()) {
  rank_->AddStream(this);
}

SimStream::~SimStream() { rank_->RetireStream(this, tail_ns_, agent_); }

void SimStream::AwaitQueueSlot(int64_t milli) {
  RankState* r = rank_;
  const int64_t depth = r->cost().queue_depth_milli();
  if (depth == 0) return;
  next_milli_ = milli;
  while (!queue_.empty() && queue_.front().end_ns != kUnresolved &&
         queue_.front().end_ns <= r->now()) {
    PopQueued();
  }
  while (!queue_.empty() && held_milli_ + milli > depth) {
    const Queued oldest = queue_.front();
    PopQueued();
    // A collective still waiting for its peers cannot be waited for here
    // (its end depends on hosts not yet simulated): counted as done.
    if (oldest.end_ns != kUnresolved) {
      r->BlockUntil(oldest.end_ns, absl::StrCat("launch queue full: ", name_));
    }
  }
}

void SimStream::PopQueued() {
  held_milli_ -= queue_.front().milli;
  queue_.pop_front();
}

uint64_t SimStream::Enqueued(int64_t end_ns) {
  if (rank_->cost().stream_queue_depth() == 0) return 0;
  queue_.push_back({next_seq_, end_ns, next_milli_});
  held_milli_ += next_milli_;
  return next_seq_++;
}

int64_t SimStream::QueueMilliOf(const KernelCall& call) const {
  const CostModel& c = rank_->cost();
  const auto* mm = std::get_if<runtime::ops::Matmul>(&call.op);
  const int64_t each = mm != nullptr && mm->args.k > 0 ? c.queue_gemm_milli()
                                                       : c.queue_kernel_milli();
  if (!c.profile().host().queue_by_device_launches()) return each;
  return each * runtime::LaunchesOf(call);
}

void SimStream::EndCollective(uint64_t seq, int64_t end_ns) {
  tail_ns_ = end_ns;
  for (auto it = queue_.rbegin(); it != queue_.rend(); ++it) {
    if (it->seq == seq) {
      it->end_ns = end_ns;
      break;
    }
    if (it->seq < seq) break;
  }
  rank_->ExtendBusy(end_ns);
}

inline void SimStream::EndAt(int64_t end_ns) {
  tail_ns_ = end_ns;
  Enqueued(end_ns);
  rank_->ExtendBusy(end_ns);
}

// Inlined: it is the body of every kernel launch, the hottest call.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline int64_t SimStream::RunOnCompute(
    int64_t duration, absl::string_view label, int64_t stream_bytes,
    int64_t engine_bytes, absl::string_view category, absl::string_view kind) {
  RankState* r = rank_;
  int64_t start = r->compute().EarliestStart(ready_ns(), duration);
  // Collectives running meanwhile hold some of the SMs (CostModel::
  // collective_sm_charge); those placed later are not charged.
  const double charge = r->cost().collective_sm_charge();
  if (charge > 0) {
    const int64_t shared = r->fabric().BusyWithin(start, start + duration);
    if (shared > 0) {
      duration += std::llround(shared * charge);
      start = r->compute().EarliestStart(ready_ns(), duration);
    }
  }
  r->compute().Reserve(start, duration);
  EndAt(start + duration);
  r->Span(track_, label, start, tail_ns_, stream_bytes, category, kind);
  r->Span(kComputeTrack, label, start, tail_ns_, engine_bytes, category, kind);
  r->RecordActivity(ActivityInterval::Kind::kCompute, start, tail_ns_);
  return start;
}

// ---------------------------------------------------------------------------
// SimStream: copies

SimStream::CopyRoute SimStream::RouteCopy(MemorySpace dst, MemorySpace src,
                                          int64_t bytes) {
  RankState* r = rank_;
  const bool to_host = runtime::IsHost(dst), from_host = runtime::IsHost(src);
  CopyRoute route;
  if (!to_host && !from_host) {
    route.kind = CopyKind::kDeviceToDevice;
    route.link = &r->compute();
  } else if (to_host && !from_host) {
    route.link = &r->d2h();
    route.other = &r->h2d();
    route.track = kD2HTrack;
    if (dst == MemorySpace::kPinnedHost) {
      route.kind = CopyKind::kPinnedD2H;
    } else {
      route.kind = CopyKind::kPageableD2H;
      route.blocks_host = true;
    }
  } else if (!to_host && from_host) {
    route.link = &r->h2d();
    route.other = &r->d2h();
    route.track = kH2DTrack;
    if (src == MemorySpace::kPinnedHost) {
      route.kind = CopyKind::kPinnedH2D;
    } else if (bytes <=
               r->cost().profile().host_link().pageable_h2d_async_max_bytes()) {
      // The driver copies the source into a pinned staging buffer and
      // returns; the DMA runs later from there at the pinned rate.
      route.kind = CopyKind::kPinnedH2D;
      route.staged = true;
    } else {
      route.kind = CopyKind::kPageableH2D;
      route.blocks_host = true;
    }
  } else {
    route.kind = CopyKind::kHostToHost;
    route.blocks_host = true;
  }
  return route;
}

void SimStream::Stage(int64_t bytes, absl::string_view label) {
  RankState* r = rank_;
  const int64_t t0 = r->now();
  r->HostCost(r->cost().StagingNanos(bytes));
  r->Span(kHostTrack, absl::StrCat("staging: ", label), t0, r->now(), bytes,
          "host");
}

int64_t SimStream::PlaceCopy(const CopyRoute& route, int64_t& duration) {
  const int64_t ready = ready_ns();
  if (route.link == nullptr) return ready;
  int64_t start = route.link->EarliestStart(ready, duration);
  if (route.other != nullptr) {
    const double eff =
        rank_->cost().profile().host_link().bidirectional_efficiency();
    if (eff < 1.0 && route.other->Overlaps(start, start + duration)) {
      duration = std::llround(duration / eff);
      start = route.link->EarliestStart(ready, duration);
    }
  }
  route.link->Reserve(start, duration);
  return start;
}

void SimStream::CopyAccesses(const CopyRoute& route, const BufferSlice& dst,
                             const BufferSlice& src, absl::string_view label,
                             int64_t start, int64_t end) {
  RankState* r = rank_;
  // A staged source is read by the host at the call, unless strict mode
  // treats the call as asynchronous.
  if (route.staged && !r->strict()) {
    r->HostAccesses({{src, false}}, label, r->now(), r->now());
    r->StreamAccesses(agent_, {{dst, true}}, label, start, end);
  } else {
    r->StreamAccesses(agent_, {{src, false}, {dst, true}}, label, start, end);
  }
}

absl::Status SimStream::Copy(const BufferSlice& dst, const BufferSlice& src,
                             absl::string_view label) {
  RankState* r = rank_;
  if (dst.bytes() != src.bytes()) {
    return absl::InvalidArgumentError(
        absl::StrCat("copy '", label, "': destination has ", dst.bytes(),
                     " bytes, source ", src.bytes()));
  }
  const TimedOp timed(this, label);
  const int64_t bytes = dst.bytes();
  AwaitQueueSlot(r->cost().queue_copy_milli());
  r->HostCost(r->cost().copy_call_nanos());
  r->CountOp();
  const CopyRoute route = RouteCopy(dst.space(), src.space(), bytes);
  if (route.staged) Stage(bytes, label);

  int64_t duration = r->Jitter(r->cost().CopyNanos(bytes, route.kind));
  const int64_t start = PlaceCopy(route, duration);
  const int64_t end = start + duration;
  EndAt(end);
  r->Span(track_, label, start, end, bytes, "copy");
  if (route.link != nullptr) {
    r->Span(route.track, label, start, end, bytes, "copy");
  }
  r->RecordActivity(CopyActivity(route.kind), start, end);

  if (r->detect()) CopyAccesses(route, dst, src, label, start, end);
  if (r->data_mode() && bytes > 0) {
    if (src.data() == nullptr || dst.data() == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("copy '", label, "': buffer without data"));
    }
    std::memmove(dst.data(), src.data(), bytes);
  }
  if (route.blocks_host) {
    const bool pageable = dst.space() == MemorySpace::kPageableHost ||
                          src.space() == MemorySpace::kPageableHost;
    r->BlockUntil(end,
                  absl::StrCat(pageable ? "pageable copy " : "copy ", label));
    if (!r->strict()) r->HostJoin(agent_);
  }
  return absl::OkStatus();
}

absl::Status SimStream::Copy2D(const BufferSlice& dst, int64_t dst_pitch,
                               const BufferSlice& src, int64_t src_pitch,
                               int64_t row_bytes, int64_t rows,
                               absl::string_view label) {
  RankState* r = rank_;
  ZR_RETURN_IF_ERROR(runtime::CheckCopy2D(dst, dst_pitch, src, src_pitch,
                                          row_bytes, rows, label));
  const TimedOp timed(this, label);
  AwaitQueueSlot(r->cost().queue_copy_milli());
  r->HostCost(r->cost().copy_call_nanos());
  r->CountOp();
  const int64_t bytes = rows * row_bytes;
  const int64_t duration = r->Jitter(r->cost().Copy2DNanos(bytes));
  int64_t start;
  if (r->cost().copy2d_on_copy_engine()) {
    // A copy engine of its own: only this stream waits for it. (Only the
    // gradient reducer's stream issues strided copies.)
    start = ready_ns();
    EndAt(start + duration);
    r->Span(track_, label, start, tail_ns_, bytes, "copy");
    r->RecordActivity(ActivityInterval::Kind::kCopy, start, tail_ns_);
  } else {
    start = RunOnCompute(duration, label, bytes, bytes, "copy");
  }
  if (r->detect()) {
    // One access per row, or one for all rows where they are contiguous.
    std::vector<runtime::Access> accesses;
    accesses.reserve(2 * rows);
    auto add = [&](const BufferSlice& slice, int64_t pitch, bool write) {
      if (pitch == row_bytes) {
        accesses.push_back({slice.Sub(0, rows * row_bytes), write});
        return;
      }
      for (int64_t i = 0; i < rows; ++i) {
        accesses.push_back({slice.Sub(i * pitch, row_bytes), write});
      }
    };
    add(src, src_pitch, false);
    add(dst, dst_pitch, true);
    r->StreamAccesses(agent_, accesses, label, start, tail_ns_);
  }
  if (r->data_mode()) {
    for (int64_t i = 0; i < rows; ++i) {
      std::memmove(static_cast<char*>(dst.data()) + i * dst_pitch,
                   static_cast<const char*>(src.data()) + i * src_pitch,
                   row_bytes);
    }
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// SimStream: kernels

absl::Status SimStream::Memset(const BufferSlice& dst, uint8_t value,
                               absl::string_view label) {
  RankState* r = rank_;
  if (runtime::IsHost(dst.space())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "memset '", label, "': target is host memory; write it in a HostTask"));
  }
  const TimedOp timed(this, label);
  AwaitQueueSlot(r->cost().queue_kernel_milli());
  r->HostCost(r->cost().launch_nanos());
  r->CountOp();
  KernelWork work;
  work.bytes = dst.bytes();
  const int64_t duration = r->Jitter(r->cost().KernelNanos(work));
  const int64_t start = RunOnCompute(duration, label, dst.bytes(), 0, "kernel");
  r->StreamAccesses(agent_, {{dst, true}}, label, start, tail_ns_);
  if (r->data_mode() && dst.bytes() > 0) {
    std::memset(dst.data(), value, dst.bytes());
  }
  return absl::OkStatus();
}

absl::Status SimStream::Launch(const KernelCall& call) {
  RankState* r = rank_;
  const TimedOp timed(this, call.label, call.OpName());
  AwaitQueueSlot(QueueMilliOf(call));
  r->HostCost(r->cost().launch_nanos());
  r->CountOp();
  // In data mode the reference executor checks the call (with its data);
  // in timing mode the same rules, without data, so that a program the
  // simulator times is one every backend accepts.
  if (!r->data_mode()) {
    ZR_RETURN_IF_ERROR(runtime::CheckKernelCall(call, /*need_data=*/false));
  }
  const std::vector<runtime::Access> accesses = call.Accesses();
  for (const runtime::Access& a : accesses) {
    if (runtime::IsHost(a.slice.space())) {
      return absl::InvalidArgumentError(
          absl::StrCat("kernel '", call.label, "' (", call.OpName(),
                       ") touches host buffer; kernels run on device memory"));
    }
  }
  const int64_t duration = r->Jitter(r->cost().KernelNanos(WorkOf(call)));
  const int64_t start =
      RunOnCompute(duration, call.label, 0, 0, "kernel", call.OpName());
  r->StreamAccesses(agent_, accesses, call.label, start, tail_ns_);
  if (r->data_mode()) {
    ZR_RETURN_IF_ERROR(runtime::ExecuteReference(call));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// SimStream: ordering

int64_t SimStream::TimingEvent() {
  RankState* r = rank_;
  AwaitQueueSlot(r->cost().queue_timed_event_milli());
  r->HostCost(r->cost().event_call_nanos());
  const int64_t at = ready_ns();
  Enqueued(at);
  return at;
}

SimStream::TimedOp::TimedOp(SimStream* stream, absl::string_view label,
                            absl::string_view kind)
    : stream_(stream), label_(label), kind_(kind) {
  if (stream_->rank()->op_timing()) start_ = stream_->TimingEvent();
}

SimStream::TimedOp::~TimedOp() {
  if (start_ < 0) return;
  const int64_t end = stream_->TimingEvent();
  stream_->rank()->AddOpTiming({std::string(stream_->name()),
                                std::string(label_), start_, end,
                                std::string(kind_)});
}

absl::Status SimStream::Record(runtime::Event& event) {
  RankState* r = rank_;
  auto* e = dynamic_cast<SimEvent*>(&event);
  if (e == nullptr || e->rank_ != r) {
    return absl::InvalidArgumentError("event belongs to another device");
  }
  AwaitQueueSlot(e->timed() ? r->cost().queue_timed_event_milli()
                            : r->cost().queue_event_milli());
  r->HostCost(r->cost().event_call_nanos());
  e->recorded_ = true;
  e->time_ns_ = ready_ns();
  Enqueued(e->time_ns_);
  if (r->detect()) {
    r->races().Join(agent_, 0);
    e->clock_ = r->races().clock(agent_);
  }
  return absl::OkStatus();
}

absl::Status SimStream::Wait(const runtime::Event& event) {
  RankState* r = rank_;
  const auto* e = dynamic_cast<const SimEvent*>(&event);
  if (e == nullptr || e->rank() != r) {
    return absl::InvalidArgumentError("event belongs to another device");
  }
  AwaitQueueSlot(r->cost().queue_wait_milli());
  r->HostCost(r->cost().event_call_nanos());
  if (e->recorded()) {
    tail_ns_ = std::max(tail_ns_, e->time_ns());
    if (r->detect()) r->races().JoinClock(agent_, e->clock());
  }
  Enqueued(ready_ns());
  return absl::OkStatus();
}

absl::Status SimStream::Synchronize() {
  RankState* r = rank_;
  r->HostCost(r->cost().event_call_nanos());
  r->BlockUntil(tail_ns_, absl::StrCat("synchronize ", name_));
  r->HostJoin(agent_);
  r->PruneCalendars();
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace sim
}  // namespace zero3
