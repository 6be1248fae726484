// Copyright 2026 The zero3 Authors.

#include "tools/calibrate/queue_units.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

namespace zero3 {
namespace calibrate {
namespace {

// Room of a kind that took `commands` against the tiny kernels' `tiny`
// (both counted past the long GEMMs); 0 where it never blocked.
double RoomOf(int commands, int long_gemms, int tiny) {
  const int past = commands - long_gemms;
  return commands > 0 && past > 0 ? static_cast<double>(tiny) / past : 0.0;
}

double Round2(double x) { return std::round(x * 100) / 100; }

}  // namespace

std::string SetQueueUnits(const QueueDepths& d, sim::HostProfile* host) {
  host->clear_queue_units_per_kernel();
  host->clear_queue_units_per_gemm();
  host->clear_queue_units_per_event();
  host->clear_queue_units_per_timed_event();
  host->clear_queue_units_per_wait();
  host->clear_queue_units_per_copy();
  host->clear_queue_by_device_launches();
  const int tiny = d.tiny - d.long_gemms;
  if (d.tiny <= 0 || tiny <= 0) {
    host->clear_stream_queue_depth();
    return "launch queue units: unbounded queue";
  }
  const double kernel = RoomOf(d.kernel, d.long_gemms, tiny),
               gemm = RoomOf(d.gemm, d.long_gemms, tiny),
               event = RoomOf(d.event, d.long_gemms, tiny),
               timed = RoomOf(d.timed_event, d.long_gemms, tiny),
               wait = RoomOf(d.wait, d.long_gemms, tiny),
               copy = RoomOf(d.copy, d.long_gemms, tiny),
               attention = RoomOf(d.attention_backward, d.long_gemms, tiny);
  double smallest = 1.0;  // the tiny kernel's
  for (double r : {kernel, gemm, event, timed, wait, copy}) {
    if (r > 0) smallest = std::min(smallest, r);
  }
  // A kind that never blocked in max_commands took at most this room.
  const double bound =
      d.max_commands > 0 ? static_cast<double>(tiny) / d.max_commands : 0.0;
  auto set = [&](int commands, double room,
                 void (sim::HostProfile::*setter)(double)) {
    if (room > 0) {
      (host->*setter)(Round2(room / smallest));
    } else if (commands <= 0 && bound > 0) {
      (host->*setter)(std::max(0.01, Round2(bound / smallest)));
    }
  };
  set(d.kernel, kernel, &sim::HostProfile::set_queue_units_per_kernel);
  set(d.gemm, gemm, &sim::HostProfile::set_queue_units_per_gemm);
  set(d.event, event, &sim::HostProfile::set_queue_units_per_event);
  set(d.timed_event, timed, &sim::HostProfile::set_queue_units_per_timed_event);
  set(d.wait, wait, &sim::HostProfile::set_queue_units_per_wait);
  set(d.copy, copy, &sim::HostProfile::set_queue_units_per_copy);
  // The long GEMMs took a GEMM's room each (a tiny kernel's if unmeasured).
  const double long_room = d.long_gemms * (gemm > 0 ? gemm : 1.0);
  host->set_stream_queue_depth(
      static_cast<int>(std::lround((long_room + tiny) / smallest)));
  const double per_kernel = kernel > 0 ? kernel : 1.0;
  const bool by_launches =
      attention > 0 && d.attention_launches > 1 &&
      std::abs(attention - d.attention_launches * per_kernel) <
          std::abs(attention - per_kernel);
  if (by_launches) host->set_queue_by_device_launches(true);
  return absl::StrFormat(
      "launch queue units (a tiny kernel's room 1): kernel %.2f, GEMM %.2f, "
      "event %.2f, timed event %.2f, wait %.2f, copy %.2f (0: never "
      "blocked, written as at most %.2f; or blocked at once, left at 1); "
      "attention backward %.2f for %d launches, so the queue %s; depth %d "
      "units of %.2f",
      kernel, gemm, event, timed, wait, copy, bound, attention,
      d.attention_launches, by_launches ? "holds device launches" : "holds ops",
      host->stream_queue_depth(), smallest);
}

}  // namespace calibrate
}  // namespace zero3
