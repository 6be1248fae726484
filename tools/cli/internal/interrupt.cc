// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace zero3 {
namespace cli {
namespace internal {
namespace {

volatile sig_atomic_t g_signal = 0;

void OnSignal(int sig) {
  if (g_signal != 0) {
    // The second signal: the default action (termination).
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  g_signal = sig;
  static const char kMessage[] =
      "\nzero3: stopping after the current step (signal again to stop at "
      "once)\n";
  const ssize_t ignored = write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
  (void)ignored;
}

}  // namespace

StopOnSignal::StopOnSignal() { g_signal = 0; }

void StopOnSignal::Arm() {
  std::call_once(armed_, [this] {
    struct sigaction action;
    std::memset(&action, 0, sizeof(action));
    action.sa_handler = OnSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGINT, &action, &old_int_);
    sigaction(SIGTERM, &action, &old_term_);
    sigaction(SIGHUP, &action, &old_hup_);
    installed_ = true;
  });
}

StopOnSignal::~StopOnSignal() {
  if (!installed_) return;
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  sigaction(SIGHUP, &old_hup_, nullptr);
}

int StopOnSignal::signal() const { return g_signal; }

int StopOnSignal::ExitBySignal() {
  const int sig = g_signal;
  if (sig == 0) return 0;
  std::fflush(nullptr);
  ::signal(sig, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  raise(sig);
  return 128 + sig;
}

bool StopOnSignal::StopAfter(int64_t completed) {
  int64_t at = stop_at_.load();
  if (at < 0 && g_signal != 0) {
    // Only the first rank to get here sets the point.
    stop_at_.compare_exchange_strong(at, completed + 1);
    at = stop_at_.load();
  }
  return at >= 0 && completed >= at;
}

bool StopOnSignal::StopAgreed(int64_t completed, bool any_signal) {
  if (any_signal) stop_at_.store(completed);
  return any_signal;
}

}  // namespace internal
}  // namespace cli
}  // namespace zero3
