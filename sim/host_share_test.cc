// Copyright 2026 The zero3 Authors.

#include "sim/host_share.h"

#include <sched.h>

#include <cmath>

#include "gtest/gtest.h"
#include "sim/cost_model.h"
#include "sim/profiles.h"

namespace zero3 {
namespace sim {
namespace {

HardwareProfile H200WithCores(int cores) {
  absl::StatusOr<HardwareProfile> p = LoadProfile("h200_sxm");
  EXPECT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(SetHostCores(cores, 0, &*p).ok());
  return *p;
}

double Gbps(const HardwareProfile& p, int ranks_per_node) {
  absl::StatusOr<CostModel> cost = CostModel::Create(p);
  EXPECT_TRUE(cost.ok()) << cost.status();
  cost->set_ranks_per_node(ranks_per_node);
  return cost->HostTaskGbps(cost->HostCores());
}

TEST(HostShareTest, EveryRankGetsTheCoresSet) {
  const HardwareProfile p = H200WithCores(12);
  EXPECT_EQ(p.host().cores_per_rank(), 12);
  EXPECT_EQ(p.host().cores_per_node(), 12 * p.fabric().gpus_per_node());
  absl::StatusOr<CostModel> cost = CostModel::Create(p);
  ASSERT_TRUE(cost.ok());
  for (int ranks : {1, 2, 8}) {
    cost->set_ranks_per_node(ranks);
    EXPECT_EQ(cost->HostCores(), 12);
  }
}

TEST(HostShareTest, TheNodesCoresAreShared) {
  HardwareProfile p = H200WithCores(1);
  ASSERT_TRUE(SetHostCores(32, 32, &p).ok());
  absl::StatusOr<CostModel> cost = CostModel::Create(p);
  ASSERT_TRUE(cost.ok());
  cost->set_ranks_per_node(2);
  EXPECT_EQ(cost->HostCores(), 16);
}

TEST(HostShareTest, BandwidthFollowsTheCurveUpToTheNode) {
  // The profile's points, then log-linear between them; 0.01 GB/s.
  EXPECT_NEAR(Gbps(H200WithCores(8), 1), 77.3, 0.01);
  EXPECT_NEAR(Gbps(H200WithCores(16), 1), 106.3, 0.01);
  EXPECT_NEAR(Gbps(H200WithCores(32), 1), 120.0, 0.01);
  EXPECT_NEAR(Gbps(H200WithCores(4), 1), 24.86 + (77.3 - 24.86) * 2.0 / 3.0,
              0.01);
  // Beyond 32 the 16-32 slope continues (13.7 GB/s per doubling) up to
  // the node's 132 GB/s, shared by the ranks on the node.
  EXPECT_NEAR(Gbps(H200WithCores(48), 1), 120.0 + 13.7 * std::log2(1.5), 0.01);
  EXPECT_NEAR(Gbps(H200WithCores(64), 1), 132.0, 0.01);
  EXPECT_NEAR(Gbps(H200WithCores(256), 1), 132.0, 0.01);
  EXPECT_NEAR(Gbps(H200WithCores(64), 2), 66.0, 0.01);
}

TEST(HostShareTest, WithoutACurveThePerThreadFigureScales) {
  HardwareProfile p = H200WithCores(4);
  p.mutable_host()->clear_memory_bandwidth_by_threads();
  EXPECT_NEAR(Gbps(p, 1), 4 * p.host().memory_bandwidth_gbps_per_thread(),
              1e-9);
  ASSERT_TRUE(SetHostCores(32, 0, &p).ok());
  EXPECT_NEAR(Gbps(p, 1), p.host().memory_bandwidth_gbps_per_rank(), 1e-9);
}

TEST(HostShareTest, RejectsBadCounts) {
  HardwareProfile p;
  EXPECT_FALSE(SetHostCores(0, 0, &p).ok());
  EXPECT_FALSE(SetHostCores(4, -1, &p).ok());
}

TEST(HostShareTest, ThisProcessHasAtLeastOneCore) {
  const ProcessHost h = ThisProcessHost();
  EXPECT_GE(h.cores, 1);
  EXPECT_GE(h.node_cores, h.cores);
}

// A `zero3 launch` rank runs with its share of the CPUs as its affinity
// mask: narrowed to one CPU, this thread's host is one core.
TEST(HostShareTest, TheProcessHostFollowsItsAffinity) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  int first = 0;
  while (!CPU_ISSET(first, &saved)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  HardwareProfile p = H200WithCores(32);
  const absl::Status set = SetHostOfThisProcess(0, &p);
  ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
  ASSERT_TRUE(set.ok()) << set;
  EXPECT_EQ(p.host().cores_per_rank(), 1);
  EXPECT_EQ(p.host().cores_per_node(), ThisProcessHost().node_cores);
  // Told otherwise, the cores given.
  ASSERT_TRUE(SetHostOfThisProcess(24, &p).ok());
  EXPECT_EQ(p.host().cores_per_rank(), 24);
}

}  // namespace
}  // namespace sim
}  // namespace zero3
