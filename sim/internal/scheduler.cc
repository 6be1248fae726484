// Copyright 2026 The zero3 Authors.

#include "sim/internal/scheduler.h"

#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace sim {
namespace internal {

void Scheduler::AddRank(const RankState* rank) {
  ranks_.push_back(rank);
  cvs_.push_back(std::make_unique<std::condition_variable>());
  state_.push_back(State::kRunnable);
}

void Scheduler::WaitTurn(int r, std::unique_lock<std::mutex>& lock) {
  cvs_[r]->wait(lock, [&] { return current_ == r; });
}

int Scheduler::PickNext() const {
  int best = -1;
  for (int r = 0; r < static_cast<int>(ranks_.size()); ++r) {
    if (state_[r] != State::kRunnable) continue;
    if (best < 0 || ranks_[r]->now() < ranks_[best]->now()) best = r;
  }
  return best;
}

void Scheduler::SwitchTo(int next) {
  current_ = next;
  if (next >= 0) cvs_[next]->notify_one();
}

void Scheduler::Yield() {
  const int next = PickNext();
  if (next < 0) {
    OnStuck();
  } else {
    SwitchTo(next);
  }
}

void Scheduler::Block(int r, std::unique_lock<std::mutex>& lock) {
  state_[r] = State::kBlocked;
  Yield();
  WaitTurn(r, lock);
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
  for (State& s : state_) {
    if (s == State::kBlocked) s = State::kRunnable;
  }
  // Let the blocked ranks return errors one by one, lowest clock first.
  SwitchTo(PickNext());
}

void Scheduler::RankThread(int r, const std::function<absl::Status(int)>& body,
                           absl::Status& result) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    WaitTurn(r, lock);
  }
  absl::Status s = body(r);
  std::unique_lock<std::mutex> lock(mu_);
  result = std::move(s);
  state_[r] = State::kDone;
  ++done_count_;
  if (done_count_ == static_cast<int>(ranks_.size())) {
    current_ = -1;
    done_cv_.notify_all();
    return;
  }
  Yield();
}

absl::Status Scheduler::Run(const std::function<absl::Status(int)>& body) {
  const int n = static_cast<int>(ranks_.size());
  std::vector<absl::Status> results(n);
  {
    std::lock_guard<std::mutex> lock(mu_);
    state_.assign(n, State::kRunnable);
    done_count_ = 0;
    abort_message_.clear();
    current_ = -1;
  }
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (int r = 0; r < n; ++r) {
    threads.emplace_back(
        [this, r, &body, &results] { RankThread(r, body, results[r]); });
  }
  {
    std::unique_lock<std::mutex> lock(mu_);
    SwitchTo(PickNext());
    done_cv_.wait(lock, [&] { return done_count_ == n; });
  }
  for (std::thread& t : threads) t.join();
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
