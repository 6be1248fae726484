// Copyright 2026 The zero3 Authors.

#include "core/runtime/host_memory.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace runtime {
namespace {

using ::testing::HasSubstr;

constexpr char kMeminfo[] =
    "MemTotal:       24000000 kB\n"
    "MemFree:        14000000 kB\n"
    "MemAvailable:   19000000 kB\n";

TEST(HostMemoryTest, ReadsMeminfoWithoutACgroupLimit) {
  const HostMemoryInfo h = ParseHostMemory(kMeminfo, "max\n", "123\n");
  EXPECT_EQ(h.total_bytes, 24000000LL * 1024);
  EXPECT_EQ(h.available_bytes, 19000000LL * 1024);
  EXPECT_EQ(h.cgroup_limit_bytes, -1);
  EXPECT_EQ(h.AvailableBytes(), 19000000LL * 1024);
  EXPECT_EQ(h.CapacityBytes(), 24000000LL * 1024);
}

TEST(HostMemoryTest, AV1UnlimitedCgroupIsNoLimit) {
  const HostMemoryInfo h =
      ParseHostMemory(kMeminfo, "9223372036854771712\n", "8106913792\n");
  EXPECT_EQ(h.cgroup_limit_bytes, -1);
}

TEST(HostMemoryTest, ALowerCgroupLimitBounds) {
  const int64_t gib = int64_t{1} << 30;
  const HostMemoryInfo h = ParseHostMemory(kMeminfo, std::to_string(8 * gib),
                                           std::to_string(3 * gib));
  EXPECT_EQ(h.cgroup_limit_bytes, 8 * gib);
  EXPECT_EQ(h.AvailableBytes(), 5 * gib);
  EXPECT_EQ(h.CapacityBytes(), 8 * gib);
  EXPECT_THAT(h.Describe(), HasSubstr("cgroup limit 8.00 GiB"));
  EXPECT_EQ(DefaultPinnedBudget(h, 4), gib);
}

TEST(HostMemoryTest, NothingKnownMeansNoBudget) {
  const HostMemoryInfo h = ParseHostMemory("", "", "");
  EXPECT_EQ(h.AvailableBytes(), -1);
  EXPECT_EQ(DefaultPinnedBudget(h, 1), 0);
}

TEST(HostMemoryTest, ThisMachineIsRead) {
  const HostMemoryInfo h = ReadHostMemory();
  EXPECT_GT(h.total_bytes, 0);
  EXPECT_GT(h.AvailableBytes(), 0);
}

}  // namespace
}  // namespace runtime
}  // namespace zero3
