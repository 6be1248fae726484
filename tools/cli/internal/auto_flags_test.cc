// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/auto_flags.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace {

using ::testing::HasSubstr;
using ::zero3::testing::StatusIs;

absl::StatusOr<config::AutoValues> Parse(std::vector<std::string> args) {
  FlagSet flags("train", "");
  AutoFlags auto_flags;
  auto_flags.Define(flags);
  const absl::Status parsed = flags.Parse(args);
  if (!parsed.ok()) return parsed;
  return auto_flags.Values(896, 50);
}

TEST(AutoFlagsTest, NothingGivenLeavesTheFlagsUnset) {
  ASSERT_OK_AND_ASSIGN(config::AutoValues v, Parse({}));
  EXPECT_EQ(v.hidden_size, 896);
  EXPECT_EQ(v.steps, 50);
  EXPECT_FALSE(v.micro_batch.has_value());
  EXPECT_FALSE(v.accumulation.has_value());
  EXPECT_FALSE(v.lr.has_value());
  EXPECT_FALSE(v.warmup_steps.has_value());
}

TEST(AutoFlagsTest, ReadsEachFlag) {
  ASSERT_OK_AND_ASSIGN(config::AutoValues v,
                       Parse({"--micro-batch", "4", "--accumulation=2", "--lr",
                              "2e-5", "--warmup-steps", "10"}));
  EXPECT_EQ(v.micro_batch, 4);
  EXPECT_EQ(v.accumulation, 2);
  EXPECT_EQ(v.lr, 2e-5);
  EXPECT_EQ(v.warmup_steps, 10);
}

TEST(AutoFlagsTest, BadValuesNameTheFlag) {
  EXPECT_THAT(Parse({"--micro-batch", "0"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--micro-batch must be an integer from 1 "
                                 "to 65536, got '0'")));
  EXPECT_THAT(Parse({"--accumulation", "1025"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--accumulation must be an integer from 1 "
                                 "to 1024, got '1025'")));
  EXPECT_THAT(Parse({"--accumulation", "two"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--accumulation")));
  EXPECT_THAT(Parse({"--warmup-steps", "0"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--warmup-steps")));
  EXPECT_THAT(Parse({"--lr", "-1"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--lr must be a finite number >= 0")));
  EXPECT_THAT(Parse({"--lr", "nan"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--lr")));
}

TEST(AutoFlagsTest, LrColumnOnlyWithASchedule) {
  zero::ZeroOptions o;
  engine::StepStats stats;
  stats.lr = 3e-4;
  EXPECT_EQ(LrColumn(o, stats), "");
  o.lr_schedule.type = zero::LrScheduleType::kWarmupLR;
  EXPECT_EQ(LrColumn(o, stats), "  lr 3.000e-04");
}

}  // namespace
}  // namespace internal
}  // namespace cli
}  // namespace zero3
