// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/checkpoint_flags.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;
using ::zero3::testing::StatusIs;

absl::Status Parse(CheckpointFlags& c, std::vector<std::string> args) {
  FlagSet flags("train", "");
  c.Define(flags);
  return flags.Parse(args);
}

std::vector<std::string> List(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  return names;
}

// The --save directory is one run's: a second is refused while the first
// holds it, and the first's dead leftovers go when a run takes it over.
TEST(CheckpointFlagsTest, PrepareSaveLocksAndCleansUp) {
  const std::string dir = ::testing::TempDir() + "/save";
  fs::remove_all(dir);
  fs::create_directories(dir + "/step_4");
  std::ofstream(dir + "/step_4/rank_0.safetensors.tmp.Ab12Cd") << "partial";
  std::ofstream(dir + "/step_4/rank_0.safetensors") << "kept";
  std::ofstream(dir + "/latest.tmp.Zz99Yy") << "partial";
  CheckpointFlags first, second;
  ASSERT_OK(Parse(first, {"--save", dir}));
  ASSERT_OK(Parse(second, {"--save", dir}));
  ASSERT_OK(first.PrepareSave(dir, 0, 10));
  EXPECT_THAT(List(dir), UnorderedElementsAre("step_4", RunLock::kFileName));
  EXPECT_THAT(List(dir + "/step_4"),
              UnorderedElementsAre("rank_0.safetensors"));
  EXPECT_THAT(second.PrepareSave(dir, 0, 10),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("is in use by another run")));
}

}  // namespace
}  // namespace internal
}  // namespace cli
}  // namespace zero3
