// Copyright 2026 The zero3 Authors.
//
// step_bound.h: a training step's lower bound. No schedule finishes the step
// before its busiest resource has done its share, as the hardware profile
// costs it. Each part is the time that resource was busy in the step: the
// device's kernels (forward, backward and any device optimizer), the host
// thread's tasks (the host optimizer), the host link each way, the
// collectives. whatif reports it per variant (whatif.h); zero3 train at the
// end of a run and in its metrics.

#ifndef ZERO3_TOOLS_WHATIF_STEP_BOUND_H_
#define ZERO3_TOOLS_WHATIF_STEP_BOUND_H_

namespace zero3 {
namespace whatif {

struct StepBound {
  // The resources, in the order a tie is named.
  enum class Resource { kDevice, kHost, kH2D, kD2H, kCollectives, kDrive };

  double device_ms = 0;
  double host_ms = 0;
  double h2d_ms = 0;
  double d2h_ms = 0;
  double comm_ms = 0;
  // The node's NVMe drives (the rank's share), the busier way (reads and
  // writes each run at their own rate): with the optimizer state on NVMe.
  double drive_ms = 0;

  // The largest part, and its resource (kDevice for an empty step).
  double ms() const;
  Resource limit() const;
  // The share of a step of `total_ms` the bound is: ms() / total_ms (1 at
  // the bound); 0 for an empty step.
  double Reached(double total_ms) const;
};

}  // namespace whatif
}  // namespace zero3

#endif  // ZERO3_TOOLS_WHATIF_STEP_BOUND_H_
