// Copyright 2026 The zero3 Authors.
//
// test_profile.h: a hardware profile with round figures, so tests can state
// exact virtual times computed by hand:
//  - API calls: launch 5 us, copy 2 us, event 1 us, collective 5 us,
//    allocation 10 us; no host-task overhead.
//  - Elementwise kernels: 1 byte/ns of memory traffic (1 GB/s), compute
//    never the bound, no minimum kernel time. Matmuls: 1 TFLOP/s at
//    efficiency 1.
//  - Copies: pinned 1 byte/ns each way, pageable D2H 0.5 and H2D 0.25
//    bytes/ns, no latency; pageable H2D up to 1024 bytes staged at 1 byte/ns.
//  - Collectives: bus bandwidth 1 byte/ns at every size, 1 us per ring step.
//  - Host: 4 cores, 1 GB/s per thread, 2 GB/s per rank, 1 GFLOP/s per core,
//    pinning at 1 byte/ns.

#ifndef ZERO3_SIM_TESTING_TEST_PROFILE_H_
#define ZERO3_SIM_TESTING_TEST_PROFILE_H_

#include "sim/profile.pb.h"

namespace zero3 {
namespace sim {

HardwareProfile TestProfile();

}  // namespace sim
}  // namespace zero3

#endif  // ZERO3_SIM_TESTING_TEST_PROFILE_H_
