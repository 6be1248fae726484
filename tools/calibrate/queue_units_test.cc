// Copyright 2026 The zero3 Authors.

#include "tools/calibrate/queue_units.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace calibrate {
namespace {

TEST(QueueUnitsTest, EqualDepthsLeaveTheDefaults) {
  QueueDepths d;
  d.long_gemms = 12;
  d.tiny = d.kernel = d.gemm = d.attention_backward = d.event = d.copy = 1011;
  d.attention_launches = 3;
  sim::HostProfile host;
  SetQueueUnits(d, &host);
  EXPECT_EQ(host.stream_queue_depth(), 1011);
  EXPECT_EQ(host.queue_units_per_kernel(), 1.0);
  EXPECT_EQ(host.queue_units_per_gemm(), 1.0);
  EXPECT_EQ(host.queue_units_per_event(), 1.0);
  EXPECT_EQ(host.queue_units_per_copy(), 1.0);
  EXPECT_FALSE(host.queue_by_device_launches());
}

TEST(QueueUnitsTest, RoomIsTinyOverKindAndTheSmallestIsTheUnit) {
  QueueDepths d;
  d.long_gemms = 10;
  d.tiny = 10 + 1000;  // a tiny kernel's room: 1 of 1000 after the GEMMs
  d.kernel = 10 + 500;
  d.gemm = 10 + 250;
  d.attention_backward = 10 + 500 / 3;
  d.attention_launches = 3;
  d.event = 10 + 2000;  // half a tiny kernel: the new unit
  d.copy = 10 + 400;
  sim::HostProfile host;
  const std::string note = SetQueueUnits(d, &host);
  EXPECT_DOUBLE_EQ(host.queue_units_per_event(), 1.0);
  EXPECT_DOUBLE_EQ(host.queue_units_per_kernel(), 4.0);
  EXPECT_DOUBLE_EQ(host.queue_units_per_gemm(), 8.0);
  EXPECT_DOUBLE_EQ(host.queue_units_per_copy(), 5.0);
  EXPECT_TRUE(host.queue_by_device_launches());
  // 10 GEMMs of 4 tiny kernels and 1000 tiny kernels, in half-tiny units.
  EXPECT_EQ(host.stream_queue_depth(), (10 * 4 + 1000) * 2);
  EXPECT_THAT(note, ::testing::HasSubstr("holds device launches"));
}

// Event records never blocked in 8192 (as on an H200): they took at most
// 1000 / 8192 of a tiny kernel's room, and that bound is written; GEMMs
// that blocked at once (behind the long GEMMs alone) keep the default.
TEST(QueueUnitsTest, AKindThatNeverBlockedGetsItsMostRoom) {
  QueueDepths d;
  d.long_gemms = 12;
  d.tiny = d.kernel = d.copy = 12 + 1000;
  d.gemm = 12;
  d.attention_backward = 12 + 1000 / 3;
  d.attention_launches = 3;
  d.event = 0;
  d.max_commands = 8192;
  sim::HostProfile host;
  const std::string note = SetQueueUnits(d, &host);
  EXPECT_DOUBLE_EQ(host.queue_units_per_event(), 0.12);
  EXPECT_FALSE(host.has_queue_units_per_gemm());
  EXPECT_DOUBLE_EQ(host.queue_units_per_kernel(), 1.0);
  EXPECT_EQ(host.stream_queue_depth(), 1012);
  EXPECT_THAT(note, ::testing::HasSubstr("written as at most 0.12"));
  // Without the probe's count the room is unknown: the default stays.
  d.max_commands = 0;
  sim::HostProfile unknown;
  SetQueueUnits(d, &unknown);
  EXPECT_FALSE(unknown.has_queue_units_per_event());
}

TEST(QueueUnitsTest, UnboundedQueueClearsEverything) {
  QueueDepths d;
  sim::HostProfile host;
  host.set_stream_queue_depth(5);
  host.set_queue_units_per_copy(2);
  SetQueueUnits(d, &host);
  EXPECT_FALSE(host.has_stream_queue_depth());
  EXPECT_FALSE(host.has_queue_units_per_copy());
}

}  // namespace
}  // namespace calibrate
}  // namespace zero3
