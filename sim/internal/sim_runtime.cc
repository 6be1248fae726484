// Copyright 2026 The zero3 Authors.

#include "sim/internal/sim_runtime.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/util/status_macros.h"
#include "sim/internal/drive_file.h"
#include "sim/internal/streams.h"

namespace zero3 {
namespace sim {
namespace internal {

using runtime::Buffer;
using runtime::BufferSlice;
using runtime::HostMemoryKind;
using runtime::MemorySpace;

namespace {

// Device bytes start as this pattern: NaN in fp32, bf16 and fp16, so a read
// of memory nobody wrote poisons results visibly.
constexpr uint8_t kPoison = 0xFF;

// Storage for a buffer of `bytes` (at least one byte), every byte `fill`.
std::unique_ptr<uint8_t[]> NewStorage(int64_t bytes, uint8_t fill) {
  auto storage = std::make_unique<uint8_t[]>(std::max<int64_t>(bytes, 1));
  std::memset(storage.get(), fill, bytes);
  return storage;
}

}  // namespace

// ---------------------------------------------------------------------------
// SimDevice

absl::string_view SimDevice::name() const {
  return rank_->cost().profile().gpu().name();
}

int64_t SimDevice::total_memory_bytes() const {
  return static_cast<int64_t>(rank_->cost().profile().gpu().memory_gib() *
                              (1ull << 30));
}

absl::StatusOr<Buffer> SimDevice::Allocate(int64_t bytes,
                                           absl::string_view label) {
  RankState* r = rank_;
  if (bytes < 0) return absl::InvalidArgumentError("negative allocation");
  r->HostCost(r->cost().alloc_call_nanos());
  if (stats_.bytes_in_use + bytes > total_memory_bytes()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "device out of memory allocating ", runtime::FormatBytes(bytes),
        " for ", label, ": ", runtime::FormatBytes(stats_.bytes_in_use), " of ",
        runtime::FormatBytes(total_memory_bytes()), " in use on ", name()));
  }
  const uint64_t id = r->NextBufferId();
  Allocation& a = live_[id];
  a.bytes = bytes;
  if (r->data_mode()) a.data = NewStorage(bytes, kPoison);
  stats_.bytes_in_use += bytes;
  stats_.peak_bytes_in_use =
      std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  ++stats_.allocations;
  if (r->detect()) {
    r->races().OnAllocate(id, std::string(label), bytes,
                          /*initialized=*/false);
  }
  return Buffer(id, bytes, MemorySpace::kDevice, a.data.get());
}

absl::Status SimDevice::Free(const Buffer& buffer) {
  RankState* r = rank_;
  auto it = live_.find(buffer.id());
  if (it == live_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("freeing device buffer ", buffer.id(),
                     " that is not live on rank ", r->rank()));
  }
  r->HostCost(r->cost().alloc_call_nanos());
  if (r->detect()) {
    r->races().Tick(0);
    r->races().OnFree(buffer.id(), 0, OpInfo{"free", 0, r->now(), r->now()});
  }
  stats_.bytes_in_use -= it->second.bytes;
  --stats_.allocations;
  live_.erase(it);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<runtime::Stream>> SimDevice::CreateStream(
    absl::string_view name) {
  RankState* r = rank_;
  const int agent = r->races().AddAgent(absl::StrCat("stream '", name, "'"));
  const int track = r->NewStreamTrack(name);
  return std::unique_ptr<runtime::Stream>(
      std::make_unique<SimStream>(r, std::string(name), agent, track));
}

absl::StatusOr<std::unique_ptr<runtime::Event>> SimDevice::CreateEvent() {
  return std::unique_ptr<runtime::Event>(
      std::make_unique<SimEvent>(rank_, /*timed=*/false));
}

absl::StatusOr<std::unique_ptr<runtime::Event>> SimDevice::CreateTimedEvent() {
  return std::unique_ptr<runtime::Event>(
      std::make_unique<SimEvent>(rank_, /*timed=*/true));
}

absl::StatusOr<int64_t> SimDevice::ElapsedNanos(const runtime::Event& start,
                                                const runtime::Event& end) {
  const auto* a = dynamic_cast<const SimEvent*>(&start);
  const auto* b = dynamic_cast<const SimEvent*>(&end);
  if (a == nullptr || b == nullptr || a->rank() != rank_ ||
      b->rank() != rank_) {
    return absl::InvalidArgumentError("ElapsedNanos: event of another device");
  }
  if (!a->timed() || !b->timed()) {
    return absl::InvalidArgumentError(
        "ElapsedNanos needs events from CreateTimedEvent");
  }
  // As on CUDA, the host learns that an event is complete by waiting for it
  // (or past it): an event the host's clock has not reached is not ready.
  for (const SimEvent* e : {a, b}) {
    if (!e->recorded() || e->time_ns() > rank_->now()) {
      return absl::FailedPreconditionError(
          "ElapsedNanos: an event is not recorded or not complete");
    }
  }
  return b->time_ns() - a->time_ns();
}

absl::Status SimDevice::Synchronize() {
  RankState* r = rank_;
  r->HostCost(r->cost().event_call_nanos());
  int64_t t = std::max(r->now(), r->retired_tail_ns());
  for (const SimStream* s : r->streams()) t = std::max(t, s->tail_ns());
  r->BlockUntil(t, "device synchronize");
  if (r->detect()) {
    for (const SimStream* s : r->streams()) r->races().Join(0, s->agent());
    for (int agent : r->retired_agents()) r->races().Join(0, agent);
    r->races().Prune();
  }
  r->PruneCalendars();
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// SimRuntime

SimRuntime::SimRuntime(WorldContext* world, CollectiveRendezvous* collectives,
                       int rank)
    : world_(world),
      collectives_(collectives),
      state_(world, rank),
      device_(&state_),
      world_comm_(&state_, collectives, 0, rank, world->world_size),
      pinned_(world->max_pinned_bytes, world->pinned_fallback) {}

absl::StatusOr<Buffer> SimRuntime::AllocateHost(int64_t bytes,
                                                HostMemoryKind kind,
                                                absl::string_view label) {
  if (bytes < 0) return absl::InvalidArgumentError("negative allocation");
  const int64_t t0 = state_.now();
  state_.HostCost(state_.cost().alloc_call_nanos());
  if (kind == HostMemoryKind::kPinned) {
    ZR_RETURN_IF_ERROR(pinned_.Allocate(bytes, label));
    state_.HostCost(state_.cost().PinNanos(bytes));
    state_.Span(kHostTrack, absl::StrCat("pin ", label), t0, state_.now(),
                bytes, "host");
  }
  const uint64_t id = state_.NextBufferId();
  HostAllocation& a = host_[id];
  a.bytes = bytes;
  a.kind = kind;
  if (state_.data_mode()) a.data = NewStorage(bytes, 0);
  if (state_.detect()) {
    state_.races().OnAllocate(id, std::string(label), bytes,
                              /*initialized=*/true);
  }
  return Buffer(id, bytes,
                kind == HostMemoryKind::kPinned ? MemorySpace::kPinnedHost
                                                : MemorySpace::kPageableHost,
                a.data.get());
}

absl::Status SimRuntime::FreeHost(const Buffer& buffer) {
  auto it = host_.find(buffer.id());
  if (it == host_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("freeing host buffer ", buffer.id(),
                     " that is not live on rank ", rank()));
  }
  state_.HostCost(state_.cost().alloc_call_nanos());
  if (state_.detect()) {
    state_.races().Tick(0);
    state_.races().OnFree(buffer.id(), 0,
                          OpInfo{"free host", 0, state_.now(), state_.now()});
  }
  if (it->second.kind == HostMemoryKind::kPinned) {
    pinned_.Free(it->second.bytes);
  }
  host_.erase(it);
  return absl::OkStatus();
}

absl::StatusOr<runtime::Communicator*> SimRuntime::Group(
    const std::vector<int>& ranks) {
  int position = -1;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= world_size() ||
        (i > 0 && ranks[i] <= ranks[i - 1])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "group ranks must be ascending world ranks below ", world_size(),
          ", got [", absl::StrJoin(ranks, ","), "]"));
    }
    if (ranks[i] == rank()) position = static_cast<int>(i);
  }
  if (position < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank ", rank(), " is not in group [", absl::StrJoin(ranks, ","), "]"));
  }
  const int id = collectives_->GroupOf(ranks);
  auto& comm = group_comms_[id];
  if (comm == nullptr) {
    comm = std::make_unique<SimCommunicator>(
        &state_, collectives_, id, position, static_cast<int>(ranks.size()));
  }
  return comm.get();
}

absl::StatusOr<std::unique_ptr<runtime::DriveFile>> SimRuntime::OpenDriveFile(
    const runtime::DriveFileOptions& options) {
  return OpenSimDriveFile(&state_, options);
}

absl::Status SimRuntime::RunHostTask(const runtime::HostTask& task) {
  std::vector<runtime::Access> accesses;
  for (const BufferSlice& s : task.reads) {
    if (!runtime::IsHost(s.space())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "host task '", task.label, "' reads device memory; copy it first"));
    }
    accesses.push_back({s, false});
  }
  for (const BufferSlice& s : task.writes) {
    if (!runtime::IsHost(s.space())) {
      return absl::InvalidArgumentError(
          absl::StrCat("host task '", task.label,
                       "' writes device memory; copy it instead"));
    }
    accesses.push_back({s, true});
  }
  state_.CountOp();
  const int64_t start = state_.now();
  state_.HostCost(state_.Jitter(state_.cost().HostTaskNanos(
                      task.flops, task.memory_bytes, task.threads)) +
                  task.fixed_nanos);
  state_.Span(kHostTrack, task.label, start, state_.now(), task.memory_bytes,
              "host task");
  state_.RecordActivity(ActivityInterval::Kind::kHostTask, start, state_.now());
  state_.HostAccesses(accesses, task.label, start, state_.now());
  if (state_.data_mode() && task.run) {
    ZR_RETURN_IF_ERROR(task.run());
  }
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace sim
}  // namespace zero3
