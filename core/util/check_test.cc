// Copyright 2026 The zero3 Authors.

#include "core/util/check.h"

#include "gtest/gtest.h"

namespace zero3 {
namespace {

TEST(CheckTest, PassingChecksDoNothing) {
  int evaluations = 0;
  ZR_CHECK(++evaluations == 1) << "never printed";
  ZR_CHECK_EQ(++evaluations, 2);
  ZR_CHECK_LT(1, 2);
  ZR_CHECK_OK(absl::OkStatus());
  EXPECT_EQ(evaluations, 2);
}

TEST(CheckDeathTest, FailureNamesConditionAndMessage) {
  EXPECT_DEATH_IF_SUPPORTED(ZR_CHECK(1 + 1 == 3) << "arithmetic " << 42,
                            "CHECK failed: 1 \\+ 1 == 3 arithmetic 42");
}

TEST(CheckDeathTest, ComparisonShowsBothValues) {
  const int a = 3;
  const int b = 4;
  EXPECT_DEATH_IF_SUPPORTED(ZR_CHECK_EQ(a, b) << "sizes",
                            "a == b \\(3 vs. 4\\) sizes");
}

TEST(CheckDeathTest, CheckOkShowsStatus) {
  EXPECT_DEATH_IF_SUPPORTED(ZR_CHECK_OK(absl::InternalError("boom")),
                            "INTERNAL: boom");
}

}  // namespace
}  // namespace zero3
