// Copyright 2026 The zero3 Authors.
//
// scheduler.h: the turn-taking of a world's ranks. Each rank runs on a
// fiber of its own (fiber.h), all on the thread that calls Run, one at a
// time: a rank runs until it blocks (in a collective its peers have not all
// reached) or finishes; then the runnable rank with the lowest host clock
// runs (ties by rank id), found in a queue ordered by clock, so a switch
// costs O(log ranks). Results do not depend on thread timing. When no rank
// can run while some are blocked, the run is stuck: the scheduler records a
// deadlock message naming what the blocked ranks wait for and lets each
// blocked rank return.
//
// Thread-safety: Lock() guards the scheduler and whatever the ranks share
// (the collective rendezvous); Block and Unblock are called under it.

#ifndef ZERO3_SIM_INTERNAL_SCHEDULER_H_
#define ZERO3_SIM_INTERNAL_SCHEDULER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "sim/internal/fiber.h"
#include "sim/internal/rank_state.h"

namespace zero3 {
namespace sim {
namespace internal {

class Scheduler {
 public:
  // When a run is stuck, `describe_waiting` (called under the lock) says
  // what the blocked ranks wait for.
  explicit Scheduler(std::function<std::string()> describe_waiting)
      : describe_waiting_(std::move(describe_waiting)) {}

  // Adds the next rank (ids count from 0); its host clock orders its turns.
  // Not during a run.
  void AddRank(const RankState* rank);

  // Runs `body(r)` for every rank r, each on its own fiber, one at a time;
  // returns when all have returned. The result is the first error by rank,
  // a rank's own error before another's abort, prefixed with the rank.
  // ResourceExhausted if a rank's stack cannot be mapped.
  absl::Status Run(const std::function<absl::Status(int)>& body);

  std::unique_lock<std::mutex> Lock() {
    return std::unique_lock<std::mutex>(mu_);
  }
  // Rank `r`, running, stops until it is unblocked and its turn comes again,
  // or until the run is found stuck (then aborted() is true).
  void Block(int r, std::unique_lock<std::mutex>& lock);
  // Makes blocked rank `r` runnable again (no-op for other states).
  void Unblock(int r) {
    if (state_[r] == State::kBlocked) MakeRunnable(r);
  }
  bool aborted() const { return !abort_message_.empty(); }
  // The deadlock message, once stuck.
  const std::string& abort_message() const { return abort_message_; }

 private:
  enum class State { kRunnable, kBlocked, kDone };

  void MakeRunnable(int r);
  // Takes the runnable rank to run next out of the queue; -1 if none.
  int PickNext();
  void OnStuck();
  // Runs rank `r` until it blocks or finishes; starts its fiber first.
  absl::Status Switch(int r, const std::function<absl::Status(int)>& body,
                      std::vector<absl::Status>& results,
                      std::unique_lock<std::mutex>& lock);

  std::vector<const RankState*> ranks_;
  const std::function<std::string()> describe_waiting_;

  std::mutex mu_;
  // Runnable ranks by (host clock when queued, rank); a rank's clock only
  // grows, so a stale entry is requeued when it comes up.
  std::set<std::pair<int64_t, int>> runnable_;
  std::vector<std::unique_ptr<Fiber>> fibers_;
  std::vector<State> state_;
  int done_count_ = 0;
  std::string abort_message_;
};

}  // namespace internal
}  // namespace sim
}  // namespace zero3

#endif  // ZERO3_SIM_INTERNAL_SCHEDULER_H_
