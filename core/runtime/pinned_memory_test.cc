// Copyright 2026 The zero3 Authors.

#include "core/runtime/pinned_memory.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace runtime {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::zero3::testing::IsOk;
using ::zero3::testing::StatusIs;

TEST(PinnedMemoryTrackerTest, CountsInUseAndPeak) {
  PinnedMemoryTracker t;
  ASSERT_THAT(t.Allocate(100, "a"), IsOk());
  ASSERT_THAT(t.Allocate(50, "b"), IsOk());
  t.Free(100);
  ASSERT_THAT(t.Allocate(20, "c"), IsOk());
  const PinnedMemoryStats s = t.stats();
  EXPECT_EQ(s.bytes_in_use, 70);
  EXPECT_EQ(s.peak_bytes, 150);
  EXPECT_EQ(s.allocations, 2);
  EXPECT_EQ(s.total_allocations, 3);
}

TEST(PinnedMemoryTrackerTest, LimitNamesTheAllocationAndTheFix) {
  PinnedMemoryTracker t(1 << 20);
  ASSERT_THAT(t.Allocate(600 << 10, "grad buffer"), IsOk());
  EXPECT_THAT(t.Allocate(600 << 10, "param buffer"),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("param buffer"), HasSubstr("1.0 MiB"),
                             HasSubstr("pin_memory: false"))));
  EXPECT_EQ(t.stats().bytes_in_use, 600 << 10);  // the failed one not counted
}

TEST(PinnedMemoryTrackerTest, SummaryAndFormatting) {
  PinnedMemoryTracker t;
  ASSERT_THAT(t.Allocate(int64_t{3} << 30, "x"), IsOk());
  EXPECT_EQ(
      t.Summary(),
      "pinned host memory: 3.00 GiB in use, peak 3.00 GiB, 1 allocations");
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(2048), "2.0 KiB");
  EXPECT_EQ(FormatBytes(int64_t{3} << 20), "3.0 MiB");
}

TEST(PinnedMemoryTrackerDeathTest, FreeingMoreThanAllocatedAborts) {
  PinnedMemoryTracker t;
  ASSERT_THAT(t.Allocate(10, "x"), IsOk());
  EXPECT_DEATH_IF_SUPPORTED(t.Free(20), "freed twice");
}

}  // namespace
}  // namespace runtime
}  // namespace zero3
