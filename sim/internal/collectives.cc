// Copyright 2026 The zero3 Authors.

#include "sim/internal/collectives.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/util/check.h"
#include "core/util/status_macros.h"
#include "sim/internal/collective_timing.h"
#include "sim/internal/collective_values.h"

namespace zero3 {
namespace sim {
namespace internal {

CollectiveRendezvous::CollectiveRendezvous(const WorldContext* world,
                                           Scheduler* scheduler,
                                           int simulated_ranks)
    : world_(world), scheduler_(scheduler), simulated_ranks_(simulated_ranks) {
  std::vector<int> all(world->world_size);
  for (int r = 0; r < world->world_size; ++r) all[r] = r;
  GroupOf(all);
}

int CollectiveRendezvous::GroupOf(const std::vector<int>& members) {
  std::unique_lock<std::mutex> lock = scheduler_->Lock();
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (groups_[g]->members == members) return static_cast<int>(g);
  }
  auto group = std::make_unique<Group>();
  group->members = members;
  for (int m : members) {
    if (m < simulated_ranks_) ++group->simulated;
  }
  group->next_seq.assign(members.size(), 0);
  groups_.push_back(std::move(group));
  return static_cast<int>(groups_.size()) - 1;
}

void CollectiveRendezvous::Reset() {
  std::unique_lock<std::mutex> lock = scheduler_->Lock();
  for (auto& g : groups_) {
    g->pending.clear();
    g->base = 0;
    g->last_end_ns = 0;
    std::fill(g->next_seq.begin(), g->next_seq.end(), 0);
  }
}

std::string CollectiveRendezvous::DescribeWaiting() const {
  std::vector<std::string> waiting;
  for (const auto& g : groups_) {
    for (const Pending& p : g->pending) {
      if (p.arrivals.empty()) continue;
      std::vector<int> in;
      for (const Arrival& a : p.arrivals)
        in.push_back(a.stream->rank()->rank());
      waiting.push_back(
          absl::StrCat(p.description, " (ranks ", absl::StrJoin(in, ","),
                       " of ", absl::StrJoin(g->members, ","), " arrived)"));
    }
  }
  return absl::StrJoin(waiting, "; ");
}

std::string CollectiveRendezvous::Describe(const Arrival& a) {
  std::vector<int64_t> elements;
  for (const runtime::AllGatherPart& part : a.parts) {
    elements.push_back(part.send.elements());
  }
  return absl::StrCat(CollectiveKindName(a.kind), " '", a.label, "' of ",
                      absl::StrJoin(elements, "+"), " elements");
}

absl::Status CollectiveRendezvous::Match(Group& group, uint64_t seq,
                                         const Arrival& arrival,
                                         Pending** pending) {
  while (group.base + group.pending.size() <= seq) group.pending.emplace_back();
  Pending& p = group.pending[seq - group.base];
  *pending = &p;
  if (p.arrivals.empty()) {
    p.description = absl::StrCat(CollectiveKindName(arrival.kind), " #", seq,
                                 " '", arrival.label, "'");
    return absl::OkStatus();
  }
  const Arrival& first = p.arrivals.front();
  bool same = first.kind == arrival.kind && first.root == arrival.root &&
              first.parts.size() == arrival.parts.size();
  for (size_t i = 0; same && i < first.parts.size(); ++i) {
    same = first.parts[i].send.elements() == arrival.parts[i].send.elements() &&
           first.parts[i].send.dtype == arrival.parts[i].send.dtype;
  }
  if (!same) {
    return absl::InvalidArgumentError(absl::StrCat(
        "collective #", seq, " mismatch: rank ", first.stream->rank()->rank(),
        " issued ", Describe(first), ", rank ", arrival.stream->rank()->rank(),
        " issued ", Describe(arrival)));
  }
  return absl::OkStatus();
}

absl::Status CollectiveRendezvous::Arrive(int group_id, Arrival arrival) {
  const int me = arrival.stream->rank()->rank();
  std::unique_lock<std::mutex> lock = scheduler_->Lock();
  if (scheduler_->aborted()) {
    return absl::AbortedError(scheduler_->abort_message());
  }
  Group& group = *groups_[group_id];
  const uint64_t seq = group.next_seq[arrival.position]++;
  Pending* p = nullptr;
  ZR_RETURN_IF_ERROR(Match(group, seq, arrival, &p));
  p->arrivals.push_back(std::move(arrival));
  if (static_cast<int>(p->arrivals.size()) == group.simulated) {
    absl::Status s = Complete(group, *p);
    p->arrivals.clear();
    p->arrivals.shrink_to_fit();
    DropCompleted(group);
    return s;
  }
  // Wait for the others: woken either because the last rank completed this
  // collective (which clears its arrivals) or because the run is stuck.
  scheduler_->Block(me, lock);
  const bool completed =
      seq < group.base || group.pending[seq - group.base].arrivals.empty();
  if (!completed) return absl::AbortedError(scheduler_->abort_message());
  return absl::OkStatus();
}

void CollectiveRendezvous::DropCompleted(Group& group) {
  uint64_t oldest = group.next_seq.empty() ? 0 : group.next_seq[0];
  for (size_t i = 0; i < group.members.size(); ++i) {
    if (group.members[i] < simulated_ranks_) {
      oldest = std::min(oldest, group.next_seq[i]);
    }
  }
  while (!group.pending.empty() && group.pending.front().arrivals.empty() &&
         group.base < oldest) {
    group.pending.pop_front();
    ++group.base;
  }
}

absl::Status CollectiveRendezvous::Complete(Group& group, Pending& p) {
  std::vector<Arrival>& arrivals = p.arrivals;
  // Deterministic order: by position in the group.
  std::sort(arrivals.begin(), arrivals.end(),
            [](const Arrival& a, const Arrival& b) {
              return a.position < b.position;
            });
  const Arrival& first = arrivals.front();
  const CostModel& cost = world_->cost;
  int64_t bytes = 0;
  for (const runtime::AllGatherPart& part : first.parts) {
    bytes += CollectivePayloadBytes(first.kind, part.send.elements(),
                                    part.recv.elements(), part.send.dtype);
  }
  const bool through_host = cost.profile().fabric().through_host();
  const int64_t duration = first.stream->rank()->Jitter(
      CollectiveDuration(cost, first.kind, bytes, group.members));
  std::vector<CollectivePorts> ports;
  ports.reserve(arrivals.size());
  for (const Arrival& a : arrivals) {
    RankState* r = a.stream->rank();
    ports.push_back({a.ready_ns, &r->fabric(), &r->d2h(), &r->h2d()});
  }
  // Ranks arrive at their n-th collective only after their (n-1)-th has
  // completed, so the group's collectives complete in issue order.
  ports.front().ready_ns = std::max(ports.front().ready_ns, group.last_end_ns);
  const int64_t start = EarliestCollectiveStart(ports, through_host, duration);
  group.last_end_ns = start + duration;
  if (world_->data_mode) ZR_RETURN_IF_ERROR(ComputeValues(p));
  for (size_t i = 0; i < arrivals.size(); ++i) {
    ReserveCollective(ports[i], through_host, start, duration);
    EndOnRank(arrivals[i], first, start, start + duration, bytes);
  }
  return absl::OkStatus();
}

absl::Status CollectiveRendezvous::ComputeValues(const Pending& p) const {
  const std::vector<Arrival>& arrivals = p.arrivals;
  const Arrival& first = arrivals.front();
  for (size_t i = 0; i < first.parts.size(); ++i) {
    std::vector<CollectiveOperands> operands;
    operands.reserve(arrivals.size());
    for (const Arrival& a : arrivals) {
      const runtime::AllGatherPart& part = a.parts[i];
      if (part.send.slice.data() == nullptr ||
          part.recv.slice.data() == nullptr) {
        return absl::FailedPreconditionError(
            absl::StrCat(p.description, ": buffer without data"));
      }
      ZR_CHECK(a.position == static_cast<int>(operands.size()));
      operands.push_back({part.send.slice.data(), part.send.dtype,
                          part.recv.slice.data(), part.recv.dtype});
    }
    CollectiveValueArgs args;
    args.kind = first.kind;
    args.op = first.op;
    args.root = first.root;
    args.count = first.parts[i].send.elements();
    ComputeCollectiveValues(args, operands);
  }
  return absl::OkStatus();
}

void CollectiveRendezvous::EndOnRank(const Arrival& a, const Arrival& first,
                                     int64_t start, int64_t end,
                                     int64_t bytes) {
  SimStream& stream = *a.stream;
  RankState* r = stream.rank();
  stream.EndCollective(a.queue_seq, end);
  r->Span(stream.track(), a.label, start, end, bytes, "collective");
  r->Span(kFabricTrack, a.label, start, end, bytes, "collective");
  r->RecordActivity(ActivityInterval::Kind::kCollective, start, end);
  if (r->detect()) {
    // A broadcast's root only sends; the others only receive.
    const bool broadcast = first.kind == CollectiveKind::kBroadcast;
    std::vector<runtime::Access> accesses;
    for (const runtime::AllGatherPart& part : a.parts) {
      if (!broadcast || a.position == first.root) {
        accesses.push_back({part.send.slice, false});
      }
      if (!broadcast || a.position != first.root) {
        accesses.push_back({part.recv.slice, true});
      }
    }
    r->StreamAccesses(stream.agent(), accesses, a.label, start, end);
  }
  scheduler_->Unblock(r->rank());
}

}  // namespace internal
}  // namespace sim
}  // namespace zero3
