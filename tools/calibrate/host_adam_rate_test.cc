// Copyright 2026 The zero3 Authors.

#include "tools/calibrate/host_adam_rate.h"

#include "gtest/gtest.h"

namespace zero3 {
namespace calibrate {
namespace {

// A rate comes back (this machine's; no figure is asserted), and the
// profile takes it in place of its own figures and curve.
TEST(HostAdamRateTest, MeasuresAndReplacesTheProfilesHostFigures) {
  EXPECT_GT(HostAdamGbps(1 << 16, 1, 2), 0.0);
  sim::HardwareProfile p;
  p.mutable_host()->set_memory_bandwidth_gbps_per_rank(120);
  p.mutable_host()->set_cores_per_rank(32);
  p.mutable_host()->add_memory_bandwidth_by_threads();
  SetHostAdamRate(12.5, 150, 16, &p);
  EXPECT_EQ(p.host().memory_bandwidth_gbps_per_thread(), 12.5);
  EXPECT_EQ(p.host().memory_bandwidth_gbps_per_rank(), 150);
  EXPECT_EQ(p.host().cores_per_rank(), 16);
  EXPECT_EQ(p.host().memory_bandwidth_by_threads_size(), 0);
}

}  // namespace
}  // namespace calibrate
}  // namespace zero3
