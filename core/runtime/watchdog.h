// Copyright 2026 The zero3 Authors.
//
// watchdog.h: a bound on how long a rank's host thread may wait for its
// device and its peers.
//
// With several ranks, a collective whose peers never arrive (a rank killed,
// hung, or on a broken link) never completes, and a host thread waiting for
// it waits forever. The watchdog is a thread that knows what the host thread
// is waiting for (Enter, around each blocking wait) and what collective was
// issued last (Note), and every `poll` asks its probes (for example NCCL's
// asynchronous error of the communicator) whether something already failed.
// When a wait lasts longer than `timeout`, or a probe reports an error, it
// calls `fire` once with a message naming the rank, the wait, the last
// collective and the fix; `fire` is expected to abort the communicator and
// end the process (a blocked host thread cannot be unblocked otherwise), so
// every rank of a job exits within `timeout` of one failing, whichever
// launcher started them.
//
// Waits may nest (the outermost counts). Thread-safe: Enter and Note from
// the rank's host thread, probes and `fire` on the watchdog's thread.

#ifndef ZERO3_CORE_RUNTIME_WATCHDOG_H_
#define ZERO3_CORE_RUNTIME_WATCHDOG_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace zero3 {
namespace runtime {

struct WatchdogOptions {
  int rank = 0;
  // How long one wait may last; absl::InfiniteDuration() turns the timeout
  // off (probes still run).
  absl::Duration timeout = absl::Minutes(30);
  // How often the timeout and the probes are checked.
  absl::Duration poll = absl::Milliseconds(200);
  // Named in the timeout message as the setting to change.
  std::string timeout_setting = "zero3.collective_timeout_seconds";
};

class Watchdog {
 public:
  // Returns OK, or what failed (the watchdog then fires with it).
  using Probe = std::function<absl::Status()>;
  // Called at most once, on the watchdog's thread, with the message.
  using Fire = std::function<void(const std::string& message)>;

  // Starts the thread.
  Watchdog(WatchdogOptions options, Fire fire);
  // Stops the thread (without firing).
  ~Watchdog();

  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Adds a probe, asked every poll from then on.
  void AddProbe(Probe probe);

  // While a Wait lives, the host thread waits for `what`.
  class Wait {
   public:
    ~Wait();
    Wait(Wait&& other) noexcept : dog_(other.dog_) { other.dog_ = nullptr; }
    Wait(const Wait&) = delete;
    Wait& operator=(const Wait&) = delete;
    Wait& operator=(Wait&&) = delete;

   private:
    friend class Watchdog;
    explicit Wait(Watchdog* dog) : dog_(dog) {}
    Watchdog* dog_;
  };
  // `watchdog` may be null (no watchdog: nothing happens).
  static Wait Enter(Watchdog* watchdog, absl::string_view what);

  // The collective last issued, for the message.
  void Note(absl::string_view collective);

  // Whether it fired (tests).
  bool fired() const;

 private:
  void Run();
  void Leave();
  // The message for a wait that timed out, or for a probe's error.
  std::string TimeoutMessage(absl::Duration waited) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string ProbeMessage(const absl::Status& status) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const WatchdogOptions options_;
  const Fire fire_;
  mutable absl::Mutex mu_;
  std::vector<Probe> probes_ ABSL_GUARDED_BY(mu_);
  int depth_ ABSL_GUARDED_BY(mu_) = 0;
  std::string waiting_for_ ABSL_GUARDED_BY(mu_);
  absl::Time since_ ABSL_GUARDED_BY(mu_);
  std::string last_collective_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool fired_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace runtime
}  // namespace zero3

#endif  // ZERO3_CORE_RUNTIME_WATCHDOG_H_
