// Copyright 2026 The zero3 Authors.
//
// host_adam_rate.h: the host AdamW's rate on this process, measured in a
// fraction of a second, for a GPU run whose profile was not calibrated on
// its machine: zero3.offloaded_step "auto" and the step's bound then read
// this host's AdamW rather than the shipped profile's (a host faster or
// slower than the profile's moves the best share).
//
// Blocks the calling thread; thread-compatible.

#ifndef ZERO3_TOOLS_CALIBRATE_HOST_ADAM_RATE_H_
#define ZERO3_TOOLS_CALIBRATE_HOST_ADAM_RATE_H_

#include <cstdint>

#include "sim/profile.pb.h"

namespace zero3 {
namespace calibrate {

// GB/s of the host AdamW's memory traffic (28 bytes a parameter, fp32
// state) over `elements` parameters on `threads` threads: the fastest of
// `reps` runs after one that warms the memory.
double HostAdamGbps(int64_t elements, int threads, int reps);

// `profile`'s host AdamW figures replaced: `one_gbps` on one thread,
// `all_gbps` on the rank's `threads` cores (its per-thread curve dropped:
// it was measured on another machine).
void SetHostAdamRate(double one_gbps, double all_gbps, int threads,
                     sim::HardwareProfile* profile);

}  // namespace calibrate
}  // namespace zero3

#endif  // ZERO3_TOOLS_CALIBRATE_HOST_ADAM_RATE_H_
