// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/memory_plan.h"

#include "core/model/presets.h"
#include "core/runtime/host_memory.h"
#include "gtest/gtest.h"
#include "sim/profiles.h"
#include "tools/cli/internal/launcher_factory.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace {

TEST(LocalRanksOnNodeTest, ReadsTheLaunchersVariables) {
  EXPECT_EQ(LocalRanksOnNode(MapEnv({})), 1);
  EXPECT_EQ(LocalRanksOnNode(MapEnv({{"LOCAL_WORLD_SIZE", "8"}})), 8);
  EXPECT_EQ(LocalRanksOnNode(MapEnv({{"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}})), 4);
  EXPECT_EQ(LocalRanksOnNode(MapEnv({{"SLURM_NTASKS_PER_NODE", "4(x2)"}})), 4);
  EXPECT_EQ(LocalRanksOnNode(MapEnv({{"LOCAL_WORLD_SIZE", "zero"}})), 1);
  EXPECT_EQ(LocalRanksOnNode(MapEnv({{"MPI_LOCALNRANKS", "2"}})), 2);
  // srun without --ntasks-per-node: the node's own group of the layout.
  EXPECT_EQ(LocalRanksOnNode(MapEnv(
                {{"SLURM_TASKS_PER_NODE", "2(x3),1"}, {"SLURM_NODEID", "3"}})),
            1);
  EXPECT_EQ(LocalRanksOnNode(MapEnv(
                {{"SLURM_TASKS_PER_NODE", "2(x3),1"}, {"SLURM_NODEID", "1"}})),
            2);
  EXPECT_EQ(LocalRanksOnNode(MapEnv({{"SLURM_TASKS_PER_NODE", "8"}})), 8);
  EXPECT_EQ(LocalRanksOnNode(MapEnv({{"SLURM_TASKS_PER_NODE", "2(y3)"}})), 1);
}

PlanInput TinyOnTheSimulator() {
  PlanInput in;
  in.spec = model::LoadModelSpec("tiny").value();
  in.options.offload_optimizer = true;
  in.profile = sim::LoadProfile("h200_sxm").value();
  in.world_size = 2;
  in.env = MapEnv({});
  return in;
}

TEST(PlanMemoryTest, DataModeSharesHalfOfTheHostAmongTheRanks) {
  const MemoryPlan plan = PlanMemory(TinyOnTheSimulator()).value();
  EXPECT_TRUE(plan.available.pinned_budget_is_default);
  EXPECT_EQ(plan.max_pinned_bytes,
            runtime::DefaultPinnedBudget(runtime::ReadHostMemory(), 2));
  EXPECT_TRUE(plan.estimate.device_in_host_memory);
  EXPECT_EQ(plan.estimate.local_ranks, 2);
  EXPECT_GT(plan.available.device_free_bytes, int64_t{100} << 30);
  EXPECT_TRUE(plan.Check().ok()) << plan.Check();
}

TEST(PlanMemoryTest, TimingModeHasNoDefaultBudgetAndNoHostCheck) {
  PlanInput in = TinyOnTheSimulator();
  in.data_mode = false;
  const MemoryPlan plan = PlanMemory(in).value();
  EXPECT_EQ(plan.max_pinned_bytes, 0);
  EXPECT_FALSE(plan.shape.allocates);
  EXPECT_FALSE(plan.estimate.device_in_host_memory);
}

TEST(PlanMemoryTest, TheKeysSetTheBudgetAndTheFallback) {
  PlanInput in = TinyOnTheSimulator();
  in.config.mutable_zero3()->set_max_pinned_bytes(1000);
  in.config.mutable_zero3()->set_pinned_fallback("pageable");
  const MemoryPlan plan = PlanMemory(in).value();
  EXPECT_EQ(plan.max_pinned_bytes, 1000);
  EXPECT_TRUE(plan.pinned_fallback);
  EXPECT_LE(plan.estimate.pinned_bytes, 1000);
  EXPECT_GT(plan.estimate.fallback_bytes, 0);
  EXPECT_TRUE(plan.Check().ok());
  in.config.mutable_zero3()->set_pinned_fallback("error");
  EXPECT_EQ(PlanMemory(in).value().Check().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(PlanMemoryTest, OnGpusTheLocalRanksComeFromTheLauncher) {
  PlanInput in = TinyOnTheSimulator();
  in.gpu = true;
  in.world_size = 16;
  in.env = MapEnv({{"LOCAL_WORLD_SIZE", "8"}});
  const MemoryPlan plan = PlanMemory(in).value();
  EXPECT_EQ(plan.estimate.local_ranks, 8);
  EXPECT_FALSE(plan.estimate.device_in_host_memory);
  EXPECT_EQ(plan.available.device_free_bytes, -1);  // read on the GPU
}

TEST(PlanMemoryTest, AStartUpNoteOnlyWhereTheHostMemoryIsLarge) {
  MemoryPlan plan = PlanMemory(TinyOnTheSimulator()).value();
  EXPECT_EQ(plan.StartUpNote(false), "");
  plan.estimate.pinned_bytes = int64_t{28} << 30;
  plan.estimate.pageable_bytes = int64_t{85} << 30;
  EXPECT_EQ(plan.StartUpNote(false),
            "start-up: allocating 28.00 GiB of pinned and 85.00 GiB of "
            "pageable host memory per rank, then initializing the "
            "parameters\n");
  EXPECT_NE(plan.StartUpNote(true).find("from the checkpoint"),
            std::string::npos);
}

}  // namespace
}  // namespace internal
}  // namespace cli
}  // namespace zero3
