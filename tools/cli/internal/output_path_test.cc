// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/output_path.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace {

using ::testing::HasSubstr;
using ::zero3::testing::IsOk;
using ::zero3::testing::StatusIs;

std::string Tmp() { return std::getenv("TEST_TMPDIR"); }

TEST(CheckOutputFileTest, AcceptsNewAndExistingFiles) {
  EXPECT_THAT(CheckOutputFile("--trace", Tmp() + "/new.json"), IsOk());
  std::ofstream(Tmp() + "/old.json") << "x";
  EXPECT_THAT(CheckOutputFile("--trace", Tmp() + "/old.json"), IsOk());
}

TEST(CheckOutputFileTest, RejectsWhatCannotBeWritten) {
  EXPECT_THAT(CheckOutputFile("--trace", ""),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--trace needs a file name")));
  EXPECT_THAT(
      CheckOutputFile("--trace", Tmp()),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("--trace: cannot write " + Tmp() +
                         ": it is a directory; give the name of a file")));
  EXPECT_THAT(CheckOutputFile("--csv", Tmp() + "/none/x.csv"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--csv: cannot write " + Tmp() +
                                 "/none/x.csv: directory " + Tmp() +
                                 "/none does not exist")));
  EXPECT_THAT(CheckOutputFile("--metrics", "/dev/null"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("is not a regular file")));
  std::ofstream(Tmp() + "/file") << "x";
  EXPECT_THAT(CheckOutputFile("--out", Tmp() + "/file/x"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("is not a directory")));
}

TEST(PrepareOutputDirTest, CreatesParentsAndRejectsFiles) {
  const std::string dir = Tmp() + "/a/b/c";
  ASSERT_THAT(PrepareOutputDir("--trace-dir", dir), IsOk());
  struct stat st;
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  std::ofstream(Tmp() + "/plain") << "x";
  EXPECT_THAT(
      PrepareOutputDir("--trace-dir", Tmp() + "/plain"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("--trace-dir: cannot write " + Tmp() + "/plain")));
}

}  // namespace
}  // namespace internal
}  // namespace cli
}  // namespace zero3
