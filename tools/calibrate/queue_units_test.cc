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
