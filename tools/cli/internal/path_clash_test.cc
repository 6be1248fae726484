// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/path_clash.h"

#include <unistd.h>

#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::zero3::testing::StatusIs;

std::string Tmp(const std::string& name) {
  return ::testing::TempDir() + "/" + name;
}

std::string Touch(const std::string& name) {
  const std::string path = Tmp(name);
  std::ofstream(path) << "data";
  return path;
}

TEST(PathClashTest, AnOutputThatIsAnInputIsRefused) {
  const std::string data = Touch("d.bin");
  EXPECT_THAT(
      CheckNoClash({{"--data", data}}, {{"--metrics", data}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("--metrics " + data), HasSubstr("--data"),
                     HasSubstr("destroy that input"))));
  // Another spelling of the same file, and a link to it.
  const std::string link = Tmp("link.bin");
  ASSERT_EQ(::symlink(data.c_str(), link.c_str()), 0);
  EXPECT_FALSE(CheckNoClash({{"--data", data}}, {{"--trace", link}}).ok());
  EXPECT_FALSE(CheckNoClash({{"--data", ::testing::TempDir() + "/./d.bin"}},
                            {{"--metrics", data}})
                   .ok());
  // A Megatron prefix reads its .bin.
  const std::string prefix = Tmp("corpus");
  const std::string bin = Touch("corpus.bin");
  EXPECT_FALSE(
      CheckNoClash(DataFiles("--data", prefix), {{"--metrics", bin}}).ok());
}

TEST(PathClashTest, TwoOutputsInOneFileAreRefused) {
  const std::string out = Tmp("not_yet.json");
  EXPECT_THAT(CheckNoClash({}, {{"--trace", out}, {"--metrics", out}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("mix two outputs")));
}

TEST(PathClashTest, DistinctPathsPass) {
  const std::string data = Touch("train.bin");
  EXPECT_OK(CheckNoClash({{"--data", data}, {"--config", ""}},
                         {{"--metrics", Tmp("m.jsonl")},
                          {"--trace", Tmp("t.json")},
                          {"--save", ""}}));
}

}  // namespace
}  // namespace internal
}  // namespace cli
}  // namespace zero3
