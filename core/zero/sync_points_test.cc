// Copyright 2026 The zero3 Authors.

#include "core/zero/sync_points.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace zero {
namespace {

using ::testing::HasSubstr;
using ::zero3::testing::IsOkAndHolds;
using ::zero3::testing::StatusIs;

TEST(SyncPointsTest, NamesRoundTrip) {
  for (Sync s : AllSyncs()) {
    EXPECT_THAT(ParseSync(SyncName(s)), IsOkAndHolds(s));
    EXPECT_FALSE(SyncDescription(s).empty());
  }
  EXPECT_THAT(ParseSync("grad-offload-before-step"),
              IsOkAndHolds(Sync::kGradOffloadBeforeStep));
}

TEST(SyncPointsTest, UnknownNameSuggestsTheNearest) {
  EXPECT_THAT(ParseSync("grad-ofload-before-step"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("did you mean 'grad-offload-before-step'")));
}

TEST(SyncPointsTest, DropDisablesOnlyThatOne) {
  SyncPoints p;
  for (Sync s : AllSyncs()) EXPECT_TRUE(p.enabled(s));
  p.Drop(Sync::kLossRead);
  EXPECT_FALSE(p.enabled(Sync::kLossRead));
  EXPECT_TRUE(p.enabled(Sync::kGradOffloadBeforeStep));
  EXPECT_THAT(p.dropped(), ::testing::ElementsAre("loss-read"));
}

}  // namespace
}  // namespace zero
}  // namespace zero3
