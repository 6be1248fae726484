// Copyright 2026 The zero3 Authors.

#include "tools/cli/version.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

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

}  // namespace
}  // namespace cli
}  // namespace zero3
