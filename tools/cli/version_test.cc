// Copyright 2026 The zero3 Authors.

#include "tools/cli/version.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/cli/build_info.h"

namespace zero3 {
namespace cli {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(VersionTest, NamesVersionBuildAndBackend) {
  const std::string report = VersionReport();
  EXPECT_THAT(report, StartsWith(absl::StrCat("zero3 ", Zero3Version(), "\n")));
  EXPECT_THAT(report, HasSubstr("\nbuild: "));
  EXPECT_THAT(report, HasSubstr("\nCUDA backend: "));
  EXPECT_THAT(report, ::testing::Not(HasSubstr("build: unknown")));
}

// The commit where the build recorded one (tools/workspace_status.sh), and
// no line at all where it did not.
TEST(VersionTest, TheCommitLineOnlyWhenStamped) {
  const std::string commit = ZERO3_GIT_COMMIT;
  EXPECT_EQ(absl::StrContains(VersionReport(), "\ngit commit: "),
            !commit.empty());
}

}  // namespace
}  // namespace cli
}  // namespace zero3
