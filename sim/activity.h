// Copyright 2026 The zero3 Authors.
//
// activity.h: busy intervals of a simulated rank by kind of work, recorded
// for what-if tables (SimWorld::set_record_activity in simulator.h).

#ifndef ZERO3_SIM_ACTIVITY_H_
#define ZERO3_SIM_ACTIVITY_H_

#include <cstdint>

namespace zero3 {
namespace sim {

// Busy time of one rank by kind of work, for what-if tables.
struct ActivityInterval {
  enum class Kind {
    kCompute,       // kernels and copies on the SMs
    kCopy,          // copies on a copy engine within a side (strided, host)
    kHostToDevice,  // copies over the host link, each way
    kDeviceToHost,
    kCollective,
    kHostBlocked,  // the host thread waiting for the device
    kHostTask,     // the host thread running a host task
    kDriveRead,    // the node's NVMe drives, each way (the rank's share)
    kDriveWrite,
  };
  Kind kind;
  int64_t start_ns;
  int64_t end_ns;
};

}  // namespace sim
}  // namespace zero3

#endif  // ZERO3_SIM_ACTIVITY_H_
