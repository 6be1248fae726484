// Copyright 2026 The zero3 Authors.

#include "tools/whatif/step_bound.h"

#include <algorithm>

namespace zero3 {
namespace whatif {

double StepBound::ms() const {
  return std::max({device_ms, host_ms, h2d_ms, d2h_ms, comm_ms, drive_ms});
}

StepBound::Resource StepBound::limit() const {
  const double bound = ms();
  if (bound <= 0 || device_ms == bound) return Resource::kDevice;
  if (host_ms == bound) return Resource::kHost;
  if (h2d_ms == bound) return Resource::kH2D;
  if (d2h_ms == bound) return Resource::kD2H;
  if (comm_ms == bound) return Resource::kCollectives;
  return Resource::kDrive;
}

double StepBound::Reached(double total_ms) const {
  return total_ms > 0 ? ms() / total_ms : 0;
}

}  // namespace whatif
}  // namespace zero3
