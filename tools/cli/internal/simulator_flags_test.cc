// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/simulator_flags.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"
#include "tools/cli/internal/gpu_flags.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace {

using ::testing::HasSubstr;
using ::zero3::testing::IsOk;
using ::zero3::testing::StatusIs;

// Parses `args` into a fresh SimulatorFlags and checks it for `ranks`.
absl::Status Check(SimulatorFlags& sim, const std::vector<std::string>& args,
                   int64_t ranks) {
  FlagSet flags("zero3 train", "");
  sim.Define(flags);
  absl::Status parsed = flags.Parse(args);
  if (!parsed.ok()) return parsed;
  return sim.Check(ranks, flags.given("symmetric"));
}

TEST(SimulatorFlagsTest, ModesResolvedOnceIntoTheSimulatorsOptions) {
  SimulatorFlags data;
  ASSERT_THAT(Check(data, {}, 2), IsOk());
  sim::SimOptions o;
  data.Apply(&o);
  EXPECT_TRUE(data.data_mode());
  EXPECT_EQ(o.mode, sim::SimMode::kData);
  EXPECT_TRUE(o.detect_races);  // on in data mode by default
  EXPECT_FALSE(o.symmetric);

  SimulatorFlags timing;
  ASSERT_THAT(Check(timing,
                    {"--mode", "timing", "--races", "on", "--jitter", "0.1",
                     "--strict"},
                    4),
              IsOk());
  timing.Apply(&o);
  EXPECT_EQ(o.mode, sim::SimMode::kTiming);
  EXPECT_TRUE(o.detect_races);
  EXPECT_TRUE(o.strict);
  EXPECT_DOUBLE_EQ(o.jitter, 0.1);
  EXPECT_FALSE(timing.symmetric_by_default());
}

// Timing mode above kSymmetricAbove ranks simulates rank 0 only unless told
// otherwise; --no-symmetric keeps every rank.
TEST(SimulatorFlagsTest, SymmetricByDefaultAboveTheLimitInTimingMode) {
  SimulatorFlags many;
  ASSERT_THAT(Check(many, {"--mode", "timing"}, kSymmetricAbove + 1), IsOk());
  sim::SimOptions o;
  many.Apply(&o);
  EXPECT_TRUE(o.symmetric);
  EXPECT_TRUE(many.symmetric_by_default());
  SimulatorFlags every;
  ASSERT_THAT(
      Check(every, {"--mode", "timing", "--no-symmetric"}, kSymmetricAbove + 1),
      IsOk());
  every.Apply(&o);
  EXPECT_FALSE(o.symmetric);
  EXPECT_FALSE(o.detect_races);  // off in timing mode by default
}

TEST(SimulatorFlagsTest, BadValuesNameTheFlag) {
  SimulatorFlags a, b, c;
  EXPECT_THAT(Check(a, {"--mode", "fast"}, 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--mode must be data or timing, got 'fast'")));
  EXPECT_THAT(Check(b, {"--races", "maybe"}, 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--races must be on or off")));
  EXPECT_THAT(Check(c, {"--symmetric"}, 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--symmetric needs --mode timing")));
}

TEST(GpuFlagsTest, EachNeedsTheCudaBackend) {
  GpuFlags none;
  EXPECT_THAT(none.Check(/*gpu=*/false, /*tracing=*/true), IsOk());
  FlagSet flags("zero3 train", "");
  GpuFlags gpu;
  gpu.Define(flags);
  ASSERT_THAT(flags.Parse({"--predict"}), IsOk());
  EXPECT_TRUE(gpu.predict());
  EXPECT_THAT(gpu.Check(false, false),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--predict compares a GPU run")));
  EXPECT_THAT(gpu.Check(true, false), IsOk());
  EXPECT_THAT(gpu.Check(true, true),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("add --profile-ops")));
}

}  // namespace
}  // namespace internal
}  // namespace cli
}  // namespace zero3
