// Copyright 2026 The zero3 Authors.

#include "sim/internal/scheduler.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/util/check.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace sim {
namespace internal {

void Scheduler::AddRank(const RankState* rank) {
  ranks_.push_back(rank);
  state_.push_back(State::kRunnable);
}

void Scheduler::MakeRunnable(int r) {
  state_[r] = State::kRunnable;
  runnable_.insert({ranks_[r]->now(), r});
}

int Scheduler::PickNext() {
  while (!runnable_.empty()) {
    const auto [clock, r] = *runnable_.begin();
    runnable_.erase(runnable_.begin());
    if (state_[r] != State::kRunnable) continue;
    if (ranks_[r]->now() != clock) {
      runnable_.insert({ranks_[r]->now(), r});
      continue;
    }
    return r;
  }
  return -1;
}

void Scheduler::Block(int r, std::unique_lock<std::mutex>& lock) {
  state_[r] = State::kBlocked;
  lock.unlock();
  fibers_[r]->Suspend();
  lock.lock();
}

void Scheduler::OnStuck() {
  // No rank can run: some wait for others that will never come.
  std::vector<int> done;
  for (int r = 0; r < static_cast<int>(state_.size()); ++r) {
    if (state_[r] == State::kDone) done.push_back(r);
  }
  abort_message_ = absl::StrCat(
      "simulation deadlock: ranks wait in ", describe_waiting_(),
      done.empty() ? std::string()
                   : absl::StrCat("; ranks ", absl::StrJoin(done, ","),
                                  " already finished"));
  // Let the blocked ranks return errors one by one, lowest clock first.
  for (int r = 0; r < static_cast<int>(state_.size()); ++r) {
    if (state_[r] == State::kBlocked) MakeRunnable(r);
  }
}

absl::Status Scheduler::Switch(int r,
                               const std::function<absl::Status(int)>& body,
                               std::vector<absl::Status>& results,
                               std::unique_lock<std::mutex>& lock) {
  if (fibers_[r] == nullptr) {
    ZR_ASSIGN_OR_RETURN(fibers_[r], Fiber::Create([this, r, &body, &results] {
                          absl::Status s = body(r);
                          std::unique_lock<std::mutex> lock(mu_);
                          results[r] = std::move(s);
                          state_[r] = State::kDone;
                          ++done_count_;
                        }));
  }
  lock.unlock();
  fibers_[r]->Resume();
  lock.lock();
  // A finished rank's stack goes at once: few are live at a time.
  if (fibers_[r]->finished()) fibers_[r].reset();
  return absl::OkStatus();
}

absl::Status Scheduler::Run(const std::function<absl::Status(int)>& body) {
  const int n = static_cast<int>(ranks_.size());
  std::vector<absl::Status> results(n);
  std::unique_lock<std::mutex> lock(mu_);
  done_count_ = 0;
  abort_message_.clear();
  runnable_.clear();
  fibers_.clear();
  fibers_.resize(n);
  for (int r = 0; r < n; ++r) MakeRunnable(r);
  absl::Status resources;
  while (done_count_ < n) {
    int next = PickNext();
    if (next < 0) {
      OnStuck();
      next = PickNext();
      ZR_CHECK(next >= 0);
    }
    resources = Switch(next, body, results, lock);
    if (!resources.ok()) break;
  }
  if (!resources.ok()) {
    // Ranks suspended mid-run cannot be unwound: their stacks go unwound.
    fibers_.clear();
    return resources;
  }
  lock.unlock();
  // The root cause first: a rank's own error over another's abort.
  for (bool aborts : {false, true}) {
    for (int r = 0; r < n; ++r) {
      if (!results[r].ok() && aborts == absl::IsAborted(results[r])) {
        return Annotate(results[r], absl::StrCat("rank ", r));
      }
    }
  }
  if (aborted()) return absl::AbortedError(abort_message_);
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace sim
}  // namespace zero3
