// Copyright 2026 The zero3 Authors.

#include "core/util/cpu_binding.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>  // NOLINT
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/util/parallel_for.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Two sockets of 4 cores with hyperthreads numbered as Linux does on most
// servers: CPU i and i + 8 are siblings.
std::vector<Cpu> TwoSocketsWithSiblings() {
  std::vector<Cpu> cpus;
  for (int id = 0; id < 16; ++id) {
    const int physical = id % 8;
    cpus.push_back({id, physical / 4, physical % 4});
  }
  return cpus;
}

TEST(CpuBindingTest, SiblingsStayTogetherAndRanksGetOneSocketEach) {
  const auto slices = CpuSlices(TwoSocketsWithSiblings(), 2);
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_THAT(slices[0], ElementsAre(0, 1, 2, 3, 8, 9, 10, 11));
  EXPECT_THAT(slices[1], ElementsAre(4, 5, 6, 7, 12, 13, 14, 15));
}

TEST(CpuBindingTest, UnevenSplitsDifferByOneCore) {
  const auto slices = CpuSlices(TwoSocketsWithSiblings(), 3);
  ASSERT_EQ(slices.size(), 3u);
  EXPECT_THAT(slices[0], ElementsAre(0, 1, 2, 8, 9, 10));
  EXPECT_THAT(slices[1], ElementsAre(3, 4, 5, 11, 12, 13));
  EXPECT_THAT(slices[2], ElementsAre(6, 7, 14, 15));
}

TEST(CpuBindingTest, FewerCoresThanRanksLeavesThemUnbound) {
  EXPECT_THAT(CpuSlices(TwoSocketsWithSiblings(), 9), IsEmpty());
  EXPECT_THAT(CpuSlices({}, 1), IsEmpty());
}

TEST(CpuBindingTest, UnknownTopologyCountsEachCpuAsACore) {
  std::vector<Cpu> cpus;
  for (int id = 0; id < 4; ++id) cpus.push_back({id, 0, -1 - id});
  const auto slices = CpuSlices(cpus, 2);
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_THAT(slices[0], ElementsAre(0, 1));
  EXPECT_THAT(slices[1], ElementsAre(2, 3));
}

TEST(CpuBindingTest, ThisProcessMayRunSomewhere) {
  EXPECT_FALSE(AllowedCpus().empty());
}

// Each socket is its NUMA node.
std::vector<Cpu> TwoNodes() {
  std::vector<Cpu> cpus = TwoSocketsWithSiblings();
  for (Cpu& c : cpus) c.node = c.package;
  return cpus;
}

// Four GPUs, two on each node, enumerated node 1 first (as CUDA's order
// often is): each rank gets half of its GPU's node, siblings together.
TEST(NumaCpuSlicesTest, RanksShareTheCoresOfTheirGpusNode) {
  const auto slices = NumaCpuSlices(TwoNodes(), {1, 1, 0, 0});
  ASSERT_EQ(slices.size(), 4u);
  EXPECT_THAT(slices[0], ElementsAre(4, 5, 12, 13));
  EXPECT_THAT(slices[1], ElementsAre(6, 7, 14, 15));
  EXPECT_THAT(slices[2], ElementsAre(0, 1, 8, 9));
  EXPECT_THAT(slices[3], ElementsAre(2, 3, 10, 11));
  // Three ranks on node 0: its four cores split 2/1/1.
  const auto crowded = NumaCpuSlices(TwoNodes(), {0, 0, 0});
  ASSERT_EQ(crowded.size(), 3u);
  EXPECT_THAT(crowded[0], ElementsAre(0, 1, 8, 9));
  EXPECT_THAT(crowded[2], ElementsAre(3, 11));
}

// Without the GPU's or the CPUs' node, or with more ranks on a node than it
// has cores, the slices are the node-blind ones.
TEST(NumaCpuSlicesTest, FallsBackToSocketOrderWhereNodesAreUnknown) {
  const auto blind = CpuSlices(TwoNodes(), 2);
  EXPECT_EQ(NumaCpuSlices(TwoNodes(), {1, -1}), blind);
  EXPECT_EQ(NumaCpuSlices(TwoSocketsWithSiblings(), {1, 0}), blind);
  EXPECT_EQ(NumaCpuSlices(TwoNodes(), {0, 0, 0, 0, 0}),
            CpuSlices(TwoNodes(), 5));
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path) << text << "\n";
}

// A fake sysfs: CPUs 0-3, two cores per socket without siblings, socket k
// on node k; two GPUs, the first on node 1, the second's node unknown.
std::string FakeSysfs() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string root = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/sys");
  for (int id = 0; id < 4; ++id) {
    const std::string cpu = absl::StrCat(root, "/devices/system/cpu/cpu", id);
    for (const std::string& d :
         {root, root + "/devices", root + "/devices/system",
          root + "/devices/system/cpu", cpu, cpu + "/topology",
          absl::StrCat(cpu, "/node", id / 2)}) {
      mkdir(d.c_str(), 0755);
    }
    WriteFile(cpu + "/topology/physical_package_id", absl::StrCat(id / 2));
    WriteFile(cpu + "/topology/core_id", absl::StrCat(id % 2));
  }
  for (const char* bus : {"0000:1b:00.0", "0000:3d:00.0"}) {
    for (const std::string& d :
         {root + "/bus", root + "/bus/pci", root + "/bus/pci/devices",
          absl::StrCat(root, "/bus/pci/devices/", bus)}) {
      mkdir(d.c_str(), 0755);
    }
  }
  WriteFile(root + "/bus/pci/devices/0000:1b:00.0/numa_node", "1");
  WriteFile(root + "/bus/pci/devices/0000:3d:00.0/numa_node", "-1");
  return root;
}

TEST(NumaCpuSlicesTest, ReadsNodesFromSysfs) {
  const std::string root = FakeSysfs();
  const std::vector<Cpu> cpus = DescribeCpus({0, 1, 2, 3}, root);
  ASSERT_EQ(cpus.size(), 4u);
  EXPECT_EQ(cpus[1].package, 0);
  EXPECT_EQ(cpus[1].core, 1);
  EXPECT_EQ(cpus[0].node, 0);
  EXPECT_EQ(cpus[3].node, 1);
  EXPECT_EQ(DescribeCpus({7}, root)[0].node, -1);  // not in the fake sysfs
  EXPECT_THAT(PciNumaNodes({"0000:1b:00.0", "00000000:1B:00.0", "0000:3d:00.0",
                            "0000:99:00.0"},
                           root),
              ElementsAre(1, 1, -1, -1));
  const auto slices = NumaCpuSlices(cpus, PciNumaNodes({"0000:1b:00.0"}, root));
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_THAT(slices[0], ElementsAre(2, 3));
}

// A rank's thread bound to one of the process's CPUs counts that one; the
// thread that started it keeps its own.
TEST(BindCallingThreadTest, NarrowsOnlyTheCallingThread) {
  const int before = ProcessCores();
  const std::vector<Cpu> allowed = AllowedCpus();
  ASSERT_FALSE(allowed.empty());
  int inside = 0;
  absl::Status bound;
  std::thread rank([&] {
    bound = BindCallingThread({allowed.front().id});
    inside = ProcessCores();
  });
  rank.join();
  ASSERT_OK(bound);
  EXPECT_EQ(inside, 1);
  EXPECT_EQ(ProcessCores(), before);
}

}  // namespace
}  // namespace zero3
