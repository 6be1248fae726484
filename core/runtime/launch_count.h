// Copyright 2026 The zero3 Authors.
//
// launch_count.h: how many commands the CUDA backend enqueues on the device
// for one KernelCall. One op may be several device launches (attention
// backward: a delta kernel, then dK/dV and dQ kernels; cross-entropy
// forward: a per-row kernel, then an ordered sum), and an empty op none.
// The simulator charges the launch queue by it (host.queue_by_device_launches
// in sim/profile.proto). backends/cuda/kernels/launch_count_test.cc holds
// the CUDA launch path's count per op beside launch.cc and checks this
// function against it.

#ifndef ZERO3_CORE_RUNTIME_LAUNCH_COUNT_H_
#define ZERO3_CORE_RUNTIME_LAUNCH_COUNT_H_

#include "core/runtime/kernel_call.h"

namespace zero3 {
namespace runtime {

// Device commands (kernels, memsets, device copies) the CUDA launcher
// enqueues for `call`, 0 or more. A pure function of the op's arguments.
int LaunchesOf(const KernelCall& call);

// Commands of CUB's radix sort of `num_items` keys of `key_bits` bits (the
// embedding backward's sort), an estimate: one kernel for a single tile,
// otherwise a histogram, a scan, and one kernel per 8-bit digit pass
// (CUB's onesweep sort).
int RadixSortLaunches(int64_t num_items, int key_bits);

}  // namespace runtime
}  // namespace zero3

#endif  // ZERO3_CORE_RUNTIME_LAUNCH_COUNT_H_
