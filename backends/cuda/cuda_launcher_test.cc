// Copyright 2026 The zero3 Authors.
//
// Built and run everywhere: where the build has no CUDA, or no GPU is
// visible, Run fails without calling the rank function; on a GPU it runs it.

#include "backends/cuda/cuda_launcher.h"

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace cuda {
namespace {

using ::zero3::testing::IsOk;
using ::zero3::testing::StatusIs;

std::unique_ptr<CudaLauncher> FromEnv(std::map<std::string, std::string> vars) {
  CudaLauncherOptions options;
  options.rank.env = MapEnv(std::move(vars));
  return CudaLauncher::Create(std::move(options)).value();
}

TEST(CudaLauncherTest, NoRankEnvironmentIsAOneRankJob) {
  std::unique_ptr<CudaLauncher> launcher = FromEnv({});
  EXPECT_EQ(launcher->world_size(), 1);
  EXPECT_EQ(launcher->first_local_rank(), 0);
  EXPECT_EQ(launcher->local_ranks(), 1);
  EXPECT_TRUE(launcher->leader());
  EXPECT_EQ(launcher->description(), "GPUs (cuda)");
}

TEST(CudaLauncherTest, RunsTheRankItsEnvironmentNames) {
  std::unique_ptr<CudaLauncher> launcher = FromEnv({{"RANK", "3"},
                                                    {"WORLD_SIZE", "4"},
                                                    {"LOCAL_RANK", "1"},
                                                    {"MASTER_ADDR", "node7"}});
  EXPECT_EQ(launcher->world_size(), 4);
  EXPECT_EQ(launcher->first_local_rank(), 3);
  EXPECT_EQ(launcher->local_ranks(), 1);
  EXPECT_FALSE(launcher->leader());
}

TEST(CudaLauncherTest, RanksInProcessIgnoreTheEnvironment) {
  CudaLauncherOptions options;
  options.rank.env = MapEnv({{"RANK", "1"}, {"WORLD_SIZE", "2"}});
  options.ranks_in_process = 3;
  std::unique_ptr<CudaLauncher> launcher =
      CudaLauncher::Create(std::move(options)).value();
  EXPECT_EQ(launcher->world_size(), 3);
  EXPECT_EQ(launcher->first_local_rank(), 0);
  EXPECT_EQ(launcher->local_ranks(), 3);
  EXPECT_TRUE(launcher->leader());
}

TEST(CudaLauncherTest, MalformedEnvironmentIsInvalidArgument) {
  CudaLauncherOptions options;
  options.rank.env = MapEnv({{"RANK", "1"}});
  EXPECT_THAT(CudaLauncher::Create(options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  options = CudaLauncherOptions();
  options.ranks_in_process = -1;
  EXPECT_THAT(CudaLauncher::Create(options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(CudaLauncherTest, RunsOnAGpuOrFailsWithoutCallingTheRank) {
  std::unique_ptr<CudaLauncher> launcher = FromEnv({});
  int calls = 0;
  const absl::Status status =
      launcher->Run([&](runtime::Runtime& rt) -> absl::Status {
        ++calls;
        EXPECT_EQ(rt.rank(), 0);
        EXPECT_EQ(rt.world_size(), 1);
        EXPECT_THAT(launcher->StartOpTiming(rt), IsOk());
        EXPECT_THAT(launcher->TakeOpTimings(rt).status(), IsOk());
        return absl::OkStatus();
      });
  if (!CudaBackendBuilt()) {
    EXPECT_THAT(status, StatusIs(absl::StatusCode::kUnimplemented));
    EXPECT_EQ(calls, 0);
  } else if (VisibleCudaDevices() == 0) {
    EXPECT_FALSE(status.ok());
    EXPECT_EQ(calls, 0);
  } else {
    EXPECT_THAT(status, IsOk());
    EXPECT_EQ(calls, 1);
  }
}

}  // namespace
}  // namespace cuda
}  // namespace zero3
