// Copyright 2026 The zero3 Authors.

#include "core/io/staged_directory.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace io {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;
using ::zero3::testing::StatusIs;

std::string Fresh(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void Write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> List(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  return names;
}

bool Model(const std::string& name) {
  return name == "config.json" || name.rfind("model", 0) == 0;
}

TEST(StagedDirectoryTest, ANewDirectoryAppearsWhole) {
  const std::string root = Fresh("new");
  const std::string out = root + "/out";
  ASSERT_OK_AND_ASSIGN(auto staged, StagedDirectory::Create(out, false));
  Write(staged->staging() + "/config.json", "{}");
  EXPECT_FALSE(fs::exists(out));  // nothing there until published
  ASSERT_OK(staged->Publish(Model));
  EXPECT_THAT(List(out), UnorderedElementsAre("config.json"));
  EXPECT_THAT(List(root), UnorderedElementsAre("out"));  // no staging left
}

TEST(StagedDirectoryTest, AFailureLeavesNothingBehind) {
  const std::string root = Fresh("failed");
  {
    ASSERT_OK_AND_ASSIGN(auto staged,
                         StagedDirectory::Create(root + "/out", false));
    Write(staged->staging() + "/model.safetensors", "half");
  }  // not published
  EXPECT_TRUE(List(root).empty());
}

TEST(StagedDirectoryTest, ANonEmptyDirectoryNeedsReplace) {
  const std::string out = Fresh("full");
  Write(out + "/config.json", "old");
  Write(out + "/model-00001-of-00002.safetensors", "old shard");
  Write(out + "/tokenizer.json", "keep");
  EXPECT_THAT(StagedDirectory::Create(out, false),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("is not empty (3 entries: config.json")));
  ASSERT_OK_AND_ASSIGN(auto staged, StagedDirectory::Create(out, true));
  Write(staged->staging() + "/config.json", "new");
  Write(staged->staging() + "/model.safetensors", "new weights");
  ASSERT_OK(staged->Publish(Model));
  // The stale shard goes, the user's tokenizer stays.
  EXPECT_THAT(List(out),
              UnorderedElementsAre("config.json", "model.safetensors",
                                   "tokenizer.json"));
  EXPECT_EQ(Read(out + "/config.json"), "new");
  EXPECT_EQ(Read(out + "/tokenizer.json"), "keep");
}

TEST(StagedDirectoryTest, AFileIsNoDirectory) {
  const std::string root = Fresh("file");
  Write(root + "/out", "x");
  EXPECT_THAT(StagedDirectory::Create(root + "/out", true),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("is not a directory")));
}

}  // namespace
}  // namespace io
}  // namespace zero3
