// Copyright 2026 The zero3 Authors.
//
// interrupt.h: SIGINT, SIGTERM and SIGHUP (a closed terminal or ssh
// session) ask a training run to stop after the step in progress, so that
// it still writes what it was asked to (trace, metrics, summary, final
// checkpoint) and exits 128 + the signal's number.
// A second signal stops the process at once, as the default action would.
//
//   StopOnSignal stop;
//   stop.Arm();                              // on each rank, before step 1
//   for (int64_t s = 0; s < steps; ++s) {
//     ... step ...
//     if (stop.StopAfter(s + 1)) break;
//   }
//   ... write the outputs ...
//   stop.ExitBySignal();                     // ends the process
//
// The ranks of one process agree on the step to stop after (StopAfter);
// ranks in several processes (GPUs) agree through a collective of their own
// each step (StopAgreed).
// One StopOnSignal exists at a time; StopAfter is thread-safe.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_INTERRUPT_H_
#define ZERO3_TOOLS_CLI_INTERNAL_INTERRUPT_H_

#include <signal.h>

#include <atomic>
#include <cstdint>
#include <mutex>

namespace zero3 {
namespace cli {
namespace internal {

class StopOnSignal {
 public:
  StopOnSignal();
  // Restores the previous handlers if Arm installed its own.
  ~StopOnSignal();
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;

  // Installs the handlers, once however many ranks call it: from the first
  // step on, a signal stops the run after a step; before, it has its
  // default action (a run still starting has nothing to write).
  void Arm();

  // The first signal received (SIGINT, SIGTERM or SIGHUP), or 0.
  int signal() const;

  // Called by each rank when it has completed `completed` steps; true when
  // the rank stops there. The first rank to see a signal sets the stop to
  // the step after its own: no rank can have completed that one yet, since
  // every step's collectives need every rank, and ranks that already
  // started it finish it.
  bool StopAfter(int64_t completed);

  // For ranks in several processes, which agree through a collective after
  // each step on whether any of them saw a signal: true when one did (this
  // process's `any_signal` is that collective's answer), and then the stop
  // point is `completed` on every rank alike.
  bool StopAgreed(int64_t completed, bool any_signal);

  // Steps after which the ranks stop, or -1 while no signal was seen.
  int64_t stop_point() const { return stop_at_.load(); }

  // Ends the process by the signal received, with its default action, once
  // the run has written everything: a parent sees the signal, a shell the
  // status 128 + its number. Returns 128 + the signal's number only if the
  // process survives it; 0 without a signal.
  int ExitBySignal();

 private:
  std::once_flag armed_;
  bool installed_ = false;
  struct sigaction old_int_, old_term_, old_hup_;
  std::atomic<int64_t> stop_at_{-1};
};

}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_INTERRUPT_H_
