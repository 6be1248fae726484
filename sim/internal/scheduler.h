// Copyright 2026 The zero3 Authors.
//
// scheduler.h: the turn-taking of a world's rank threads. Each rank runs on
// a thread of its own, but exactly one runs at a time: a rank runs until it
// blocks (in a collective its peers have not all reached) or finishes; then
// the runnable rank with the lowest host clock runs (ties by rank id). So
// results do not depend on thread timing. When no rank can run while some
// are blocked, the run is stuck: the scheduler records a deadlock message
// naming what the blocked ranks wait for and lets each blocked rank return.
//
// Thread-safety: Lock() guards the scheduler and whatever the ranks share
// (the collective rendezvous); Block and Unblock are called under it.

#ifndef ZERO3_SIM_INTERNAL_SCHEDULER_H_
#define ZERO3_SIM_INTERNAL_SCHEDULER_H_

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
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

  // Runs `body(r)` for every rank r, each on its own thread, one at a time;
  // returns when all have returned. The result is the first error by rank,
  // a rank's own error before another's abort, prefixed with the rank.
  absl::Status Run(const std::function<absl::Status(int)>& body);

  std::unique_lock<std::mutex> Lock() {
    return std::unique_lock<std::mutex>(mu_);
  }
  // Rank `r`, running, stops until it is unblocked and its turn comes again,
  // or until the run is found stuck (then aborted() is true).
  void Block(int r, std::unique_lock<std::mutex>& lock);
  // Makes blocked rank `r` runnable again (no-op for other states).
  void Unblock(int r) {
    if (state_[r] == State::kBlocked) state_[r] = State::kRunnable;
  }
  bool aborted() const { return !abort_message_.empty(); }
  // The deadlock message, once stuck.
  const std::string& abort_message() const { return abort_message_; }

 private:
  enum class State { kRunnable, kBlocked, kDone };

  void WaitTurn(int r, std::unique_lock<std::mutex>& lock);
  // The runnable rank to run next; -1 if none.
  int PickNext() const;
  void SwitchTo(int next);
  // Hands the turn on after the current rank stopped, or declares the run
  // stuck if nobody can run.
  void Yield();
  void OnStuck();
  // The thread of rank `r` in Run.
  void RankThread(int r, const std::function<absl::Status(int)>& body,
                  absl::Status& result);

  std::vector<const RankState*> ranks_;
  const std::function<std::string()> describe_waiting_;

  std::mutex mu_;
  std::vector<std::unique_ptr<std::condition_variable>> cvs_;
  std::condition_variable done_cv_;
  int current_ = -1;
  std::vector<State> state_;
  int done_count_ = 0;
  std::string abort_message_;
};

}  // namespace internal
}  // namespace sim
}  // namespace zero3

#endif  // ZERO3_SIM_INTERNAL_SCHEDULER_H_
