// Copyright 2026 The zero3 Authors.

#include "core/runtime/watchdog.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace zero3 {
namespace runtime {

Watchdog::Watchdog(WatchdogOptions options, Fire fire)
    : options_(std::move(options)), fire_(std::move(fire)) {
  thread_ = std::thread([this] { Run(); });
}

Watchdog::~Watchdog() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

void Watchdog::AddProbe(Probe probe) {
  absl::MutexLock lock(&mu_);
  probes_.push_back(std::move(probe));
}

Watchdog::Wait Watchdog::Enter(Watchdog* watchdog, absl::string_view what) {
  if (watchdog == nullptr) return Wait(nullptr);
  absl::MutexLock lock(&watchdog->mu_);
  if (watchdog->depth_++ == 0) {
    watchdog->waiting_for_ = std::string(what);
    watchdog->since_ = absl::Now();
  }
  return Wait(watchdog);
}

Watchdog::Wait::~Wait() {
  if (dog_ != nullptr) dog_->Leave();
}

void Watchdog::Leave() {
  absl::MutexLock lock(&mu_);
  if (--depth_ == 0) waiting_for_.clear();
}

void Watchdog::Note(absl::string_view collective) {
  absl::MutexLock lock(&mu_);
  last_collective_ = std::string(collective);
}

bool Watchdog::fired() const {
  absl::MutexLock lock(&mu_);
  return fired_;
}

std::string Watchdog::TimeoutMessage(absl::Duration waited) const {
  return absl::StrCat(
      "rank ", options_.rank, ": waited ", absl::FormatDuration(waited),
      " for ", waiting_for_, " (the last collective issued: ",
      last_collective_.empty() ? "none" : last_collective_,
      "), past the timeout of ", absl::FormatDuration(options_.timeout),
      ": another rank has probably died or hung (look for its error "
      "first); aborting the communicator and exiting. A step that "
      "legitimately takes longer needs a larger ",
      options_.timeout_setting);
}

std::string Watchdog::ProbeMessage(const absl::Status& status) const {
  return absl::StrCat(
      "rank ", options_.rank, ": ", status.message(),
      waiting_for_.empty()
          ? ""
          : absl::StrCat(" (while waiting for ", waiting_for_, ")"),
      "; the last collective issued: ",
      last_collective_.empty() ? "none" : last_collective_,
      "; aborting the communicator and exiting");
}

void Watchdog::Run() {
  const auto stopping = [this]()
                            ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stop_; };
  absl::MutexLock lock(&mu_);
  while (!stop_) {
    mu_.AwaitWithTimeout(absl::Condition(&stopping), options_.poll);
    if (stop_ || fired_) continue;
    std::string message;
    if (depth_ > 0 && absl::Now() - since_ > options_.timeout) {
      message = TimeoutMessage(absl::Now() - since_);
    }
    for (const Probe& probe : probes_) {
      if (!message.empty()) break;
      // Probes query the backend; they do not touch the watchdog.
      const absl::Status status = probe();
      if (!status.ok()) message = ProbeMessage(status);
    }
    if (message.empty()) continue;
    fired_ = true;
    mu_.Unlock();
    fire_(message);
    mu_.Lock();
  }
}

}  // namespace runtime
}  // namespace zero3
