// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/data_flags.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace {

using ::testing::HasSubstr;
using ::zero3::testing::StatusIs;

// Parses `args` into `data` and checks them (data mode unless told).
absl::Status Check(DataFlags& data, std::vector<std::string> args,
                   bool data_mode = true) {
  FlagSet flags("train", "");
  data.Define(flags);
  const absl::Status parsed = flags.Parse(args);
  if (!parsed.ok()) return parsed;
  return data.Check(data_mode);
}

TEST(DataFlagsTest, TokenFileFlagsNeedAFile) {
  for (const char* flag : {"--data-in-order", "--no-truncate"}) {
    DataFlags data;
    EXPECT_THAT(
        Check(data, {flag}),
        StatusIs(absl::StatusCode::kInvalidArgument,
                 HasSubstr(absl::StrCat(flag,
                                        " applies to token files, not --data "
                                        "corpus"))));
  }
  DataFlags packed;
  EXPECT_THAT(Check(packed, {"--data", "synthetic", "--data-packing", "pad"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--data-packing applies to token files")));
}

TEST(DataFlagsTest, PackingIsNamed) {
  DataFlags data;
  EXPECT_THAT(Check(data, {"--data", "x", "--data-packing", "packed"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--data-packing packed is not one of pad")));
  DataFlags ok;
  EXPECT_OK(Check(ok, {"--data", "x", "--data-packing", "stream"}));
}

TEST(DataFlagsTest, EvaluationFlagsNeedHeldOutDataAndValues) {
  DataFlags interval;
  EXPECT_THAT(Check(interval, {"--eval-interval", "10"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--eval-interval applies to --eval-data")));
  DataFlags timing;
  EXPECT_THAT(Check(timing, {"--eval-data", "held"}, /*data_mode=*/false),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--eval-data needs values")));
  DataFlags data;
  ASSERT_OK(Check(data, {"--eval-data", "held", "--eval-interval", "25"}));
  const EvalPlan plan = data.eval_plan();
  EXPECT_EQ(plan.iters, 10);  // the default
  EXPECT_TRUE(plan.Due(25, 100));
  EXPECT_FALSE(plan.Due(30, 100));
  EXPECT_TRUE(plan.Due(99, 99));  // the last step
  DataFlags end_only;
  ASSERT_OK(Check(end_only, {"--eval-data", "held"}));
  EXPECT_FALSE(end_only.eval_plan().Due(50, 100));
  EXPECT_TRUE(end_only.eval_plan().Due(100, 100));
  EXPECT_FALSE(DataFlags().eval_plan().Due(100, 100));
}

}  // namespace
}  // namespace internal
}  // namespace cli
}  // namespace zero3
