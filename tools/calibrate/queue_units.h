// Copyright 2026 The zero3 Authors.
//
// queue_units.h: the launch queue's room per kind of command, from the
// depths zero3 calibrate measures for each kind (commands a stream took,
// behind a few long GEMMs that keep the device busy, before one more
// blocked the host).

#ifndef ZERO3_TOOLS_CALIBRATE_QUEUE_UNITS_H_
#define ZERO3_TOOLS_CALIBRATE_QUEUE_UNITS_H_

#include <string>

#include "sim/profile.pb.h"

namespace zero3 {
namespace calibrate {

// Commands held when the host blocked, counting the `long_gemms` first;
// 0 where a kind never blocked.
struct QueueDepths {
  int long_gemms = 0;
  int tiny = 0;    // 1-element fills: the unit
  int kernel = 0;  // 3-operand elementwise kernels
  int gemm = 0;    // small cuBLASLt GEMMs (as the long ones)
  int attention_backward = 0;
  int attention_launches = 1;  // runtime::LaunchesOf of that call
  int event = 0;               // records of events without timing
  int timed_event = 0;         // records of timed events
  int wait = 0;                // waits for another stream's event
  int copy = 0;                // small device copies
  // Commands of each kind enqueued past the long GEMMs before giving up
  // (0: unknown): a kind that never blocked took at most tiny /
  // max_commands of a tiny kernel's room.
  int max_commands = 0;
};

// Sets host.stream_queue_depth and the host.queue_units_* fields: a kind's
// room is tiny / (its commands past the long GEMMs), rescaled so that the
// smallest kind's is 1, and the depth is the long GEMMs' and tiny
// commands' room together in those units. queue_by_device_launches is set
// where the attention backward's room is nearer its launches times a
// kernel's than one kernel's. A kind that never blocked gets the most room
// it can have taken (tiny / max_commands, at least 0.01) where
// max_commands is known, else the default; one that blocked at once
// (behind the long GEMMs alone) keeps the default. With `tiny` 0 the queue
// is unbounded and every field is cleared. Returns a line for the report.
std::string SetQueueUnits(const QueueDepths& d, sim::HostProfile* host);

}  // namespace calibrate
}  // namespace zero3

#endif  // ZERO3_TOOLS_CALIBRATE_QUEUE_UNITS_H_
