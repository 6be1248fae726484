// Copyright 2026 The zero3 Authors.
//
// collectives.h: where the ranks of a communicator group meet. Each rank's
// n-th collective in a group is matched with every other member's n-th; a
// rank that arrives before the group is complete blocks (scheduler.h), and
// the last simulated member to arrive completes the collective for all: it
// places it on the fabric (collective_timing.h), computes its values in
// data mode (collective_values.h), and ends it on every participant's
// stream. Mismatched collectives are an error; collectives that can never
// complete are described for the deadlock message.
//
// Thread-safety: called from the ranks' fibers; everything runs under the
// scheduler's lock.

#ifndef ZERO3_SIM_INTERNAL_COLLECTIVES_H_
#define ZERO3_SIM_INTERNAL_COLLECTIVES_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/runtime/runtime.h"
#include "sim/cost_model.h"
#include "sim/internal/rank_state.h"
#include "sim/internal/scheduler.h"
#include "sim/internal/streams.h"

namespace zero3 {
namespace sim {
namespace internal {

// One rank's call of a collective, already enqueued on its stream.
struct Arrival {
  SimStream* stream = nullptr;  // its rank is stream->rank()
  int position = 0;             // the rank's index in the group
  CollectiveKind kind = CollectiveKind::kAllReduce;
  // The operands: one part, or several for a grouped all-gather (one
  // collective over all of them).
  std::vector<runtime::AllGatherPart> parts;
  runtime::ReduceOp op = runtime::ReduceOp::kSum;
  int root = 0;
  std::string label;
  int64_t ready_ns = 0;
  uint64_t queue_seq = 0;  // its entry in the stream's launch queue
};

class CollectiveRendezvous {
 public:
  // Ranks [0, simulated_ranks) of the world are simulated; the world group
  // (every rank) is group 0.
  CollectiveRendezvous(const WorldContext* world, Scheduler* scheduler,
                       int simulated_ranks);

  // The group of these world ranks (ascending, unique), created on first
  // use.
  int GroupOf(const std::vector<int>& members);
  // Called by the arriving rank's thread; returns once the collective has
  // been completed (by the last arriving rank), or Aborted if the run is
  // stuck, or InvalidArgument if it does not match its peers' calls.
  absl::Status Arrive(int group, Arrival arrival);
  // Forgets collectives in flight (before a new run).
  void Reset();
  // What blocked ranks wait in; for the deadlock message, under the lock.
  std::string DescribeWaiting() const;

 private:
  struct Pending {
    std::vector<Arrival> arrivals;
    std::string description;
  };
  // Collectives in flight in one communicator group, by sequence number.
  struct Group {
    std::vector<int> members;  // world ranks, ascending
    int simulated = 0;         // members this world simulates
    std::deque<Pending> pending;
    uint64_t base = 0;               // sequence number of pending.front()
    std::vector<uint64_t> next_seq;  // per member position
    // When the group's last completed collective ends: NCCL runs one
    // communicator's collectives one at a time, in the order they were
    // issued, whatever streams they were issued on.
    int64_t last_end_ns = 0;
  };

  // "all-gather 'label' of 4+8 elements", for the mismatch message.
  static std::string Describe(const Arrival& arrival);
  // The pending entry of collective `seq` in `group`; an error if the
  // arrival does not match those before it.
  absl::Status Match(Group& group, uint64_t seq, const Arrival& arrival,
                     Pending** pending);
  // Completes `pending` once every simulated member has arrived, after the
  // group's previous collective.
  absl::Status Complete(Group& group, Pending& pending);
  // Writes the collective's results (data mode) from every participant's
  // buffers, sorted by position.
  absl::Status ComputeValues(const Pending& pending) const;
  // Ends the collective, placed at [start, end), on one participant's stream
  // and lets its rank run again.
  void EndOnRank(const Arrival& arrival, const Arrival& first, int64_t start,
                 int64_t end, int64_t bytes);
  // Drops completed entries no member can still arrive at.
  void DropCompleted(Group& group);

  const WorldContext* world_;
  Scheduler* scheduler_;
  const int simulated_ranks_;
  std::vector<std::unique_ptr<Group>> groups_;  // 0 is the world
};

}  // namespace internal
}  // namespace sim
}  // namespace zero3

#endif  // ZERO3_SIM_INTERNAL_COLLECTIVES_H_
