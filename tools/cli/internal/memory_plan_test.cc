// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/memory_plan.h"

#include "backends/cuda/rank_env.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace {

TEST(LocalRanksOnNodeTest, ReadsTheLaunchersVariables) {
  EXPECT_EQ(LocalRanksOnNode(cuda::MapEnv({})), 1);
  EXPECT_EQ(LocalRanksOnNode(cuda::MapEnv({{"LOCAL_WORLD_SIZE", "8"}})), 8);
  EXPECT_EQ(
      LocalRanksOnNode(cuda::MapEnv({{"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}})), 4);
  EXPECT_EQ(
      LocalRanksOnNode(cuda::MapEnv({{"SLURM_NTASKS_PER_NODE", "4(x2)"}})), 4);
  EXPECT_EQ(LocalRanksOnNode(cuda::MapEnv({{"LOCAL_WORLD_SIZE", "zero"}})), 1);
}

}  // namespace
}  // namespace internal
}  // namespace cli
}  // namespace zero3
