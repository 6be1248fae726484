// Copyright 2026 The zero3 Authors.

#include "sim/sim_launcher.h"

#include <memory>
#include <sstream>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/testing/test_profile.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::zero3::testing::IsOk;
using ::zero3::testing::StatusIs;

std::unique_ptr<SimLauncher> MakeLauncher(int ranks, SimMode mode,
                                          bool symmetric = false) {
  SimOptions options;
  options.profile = TestProfile();
  options.world_size = ranks;
  options.mode = mode;
  options.symmetric = symmetric;
  return SimLauncher::Create(options).value();
}

TEST(SimLauncherTest, RunsTheFunctionOncePerRank) {
  std::unique_ptr<SimLauncher> launcher = MakeLauncher(3, SimMode::kData);
  std::vector<int> ranks;
  ASSERT_THAT(launcher->Run([&](runtime::Runtime& rt) -> absl::Status {
    EXPECT_EQ(rt.world_size(), 3);
    ranks.push_back(rt.rank());
    return absl::OkStatus();
  }),
              IsOk());
  EXPECT_THAT(ranks, ElementsAre(0, 1, 2));
}

TEST(SimLauncherTest, SeesEveryRankAndLeads) {
  std::unique_ptr<SimLauncher> launcher = MakeLauncher(4, SimMode::kData);
  EXPECT_EQ(launcher->world_size(), 4);
  EXPECT_EQ(launcher->first_local_rank(), 0);
  EXPECT_EQ(launcher->local_ranks(), 4);
  EXPECT_TRUE(launcher->leader());
  EXPECT_EQ(launcher->description(), TestProfile().name() + " (data)");
}

TEST(SimLauncherTest, SymmetricTimingRunsRankZeroOnly) {
  std::unique_ptr<SimLauncher> launcher =
      MakeLauncher(8, SimMode::kTiming, /*symmetric=*/true);
  EXPECT_EQ(launcher->world_size(), 8);
  EXPECT_EQ(launcher->local_ranks(), 1);
  EXPECT_EQ(launcher->description(),
            TestProfile().name() + " (timing, race detector on)");
  int calls = 0;
  ASSERT_THAT(launcher->Run([&](runtime::Runtime& rt) -> absl::Status {
    EXPECT_EQ(rt.rank(), 0);
    ++calls;
    return absl::OkStatus();
  }),
              IsOk());
  EXPECT_EQ(calls, 1);
}

TEST(SimLauncherTest, ReturnsARanksError) {
  std::unique_ptr<SimLauncher> launcher = MakeLauncher(2, SimMode::kData);
  EXPECT_THAT(
      launcher->Run([](runtime::Runtime& rt) -> absl::Status {
        if (rt.rank() == 1) return absl::DataLossError("rank 1 failed");
        return absl::OkStatus();
      }),
      StatusIs(absl::StatusCode::kDataLoss, HasSubstr("rank 1 failed")));
}

TEST(SimLauncherTest, DoesNotTimeOperations) {
  std::unique_ptr<SimLauncher> launcher = MakeLauncher(1, SimMode::kData);
  ASSERT_THAT(launcher->Run([&](runtime::Runtime& rt) -> absl::Status {
    EXPECT_THAT(launcher->StartOpTiming(rt),
                StatusIs(absl::StatusCode::kUnimplemented));
    EXPECT_THAT(launcher->TakeOpTimings(rt).status(),
                StatusIs(absl::StatusCode::kUnimplemented));
    return absl::OkStatus();
  }),
              IsOk());
}

TEST(SimLauncherTest, ReportsNoRacesForARaceFreeRun) {
  std::unique_ptr<SimLauncher> launcher = MakeLauncher(2, SimMode::kData);
  ASSERT_THAT(launcher->Run([](runtime::Runtime& rt) -> absl::Status {
    return absl::OkStatus();
  }),
              IsOk());
  std::ostringstream out;
  EXPECT_EQ(launcher->Report(out).value(), 0);
  EXPECT_EQ(out.str(), "race detector: 0 races found\n");
}

TEST(SimLauncherTest, ReportsRacesAsProblems) {
  std::unique_ptr<SimLauncher> launcher = MakeLauncher(1, SimMode::kData);
  ASSERT_THAT(launcher->Run([](runtime::Runtime& rt) -> absl::Status {
    // Two streams write one buffer with nothing ordering them.
    auto a = rt.device().CreateStream("a").value();
    auto b = rt.device().CreateStream("b").value();
    runtime::Buffer buffer = rt.device().Allocate(1024, "shared").value();
    EXPECT_OK(a->Memset(buffer.All(), 0, "first"));
    EXPECT_OK(b->Memset(buffer.All(), 1, "second"));
    return rt.device().Synchronize();
  }),
              IsOk());
  std::ostringstream out;
  EXPECT_EQ(launcher->Report(out).value(), 1);
  EXPECT_THAT(out.str(), HasSubstr("race detector: 1 race found\n  "));
}

}  // namespace
}  // namespace sim
}  // namespace zero3
