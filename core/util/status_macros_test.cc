// Copyright 2026 The zero3 Authors.

#include "core/util/status_macros.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace {

using ::testing::HasSubstr;
using ::zero3::testing::IsOk;
using ::zero3::testing::IsOkAndHolds;
using ::zero3::testing::StatusIs;

absl::StatusOr<int> Half(int x) {
  if (x % 2 != 0) return absl::InvalidArgumentError("odd");
  return x / 2;
}

absl::StatusOr<int> Quarter(int x) {
  ZR_ASSIGN_OR_RETURN(int half, Half(x));
  ZR_ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}

absl::Status CheckEven(int x) {
  ZR_RETURN_IF_ERROR(Half(x));
  return absl::OkStatus();
}

TEST(StatusMacrosTest, AssignOrReturnPropagates) {
  EXPECT_THAT(Quarter(8), IsOkAndHolds(2));
  EXPECT_THAT(Quarter(6),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("odd")));
}

TEST(StatusMacrosTest, ReturnIfErrorPropagates) {
  EXPECT_THAT(CheckEven(4), IsOk());
  EXPECT_THAT(CheckEven(5), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(StatusMacrosTest, AnnotateKeepsCodeAndPrefixes) {
  EXPECT_THAT(Annotate(absl::NotFoundError("x"), "loading"),
              StatusIs(absl::StatusCode::kNotFound, "loading: x"));
  EXPECT_THAT(Annotate(absl::OkStatus(), "loading"), IsOk());
}

}  // namespace
}  // namespace zero3
