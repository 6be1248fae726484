// Copyright 2026 The zero3 Authors.

#include "tools/cli/config_command.h"

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/config/config_loader.h"
#include "core/config/json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/cli/command.h"

namespace zero3 {
namespace cli {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

constexpr char kConfigDir[] = "testing/testdata/configs/";

struct Result {
  int code;
  std::string out;
  std::string err;
};

Result RunConfig(std::vector<std::string> args) {
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(NewConfigCommand());
  args.insert(args.begin(), "config");
  std::ostringstream out, err;
  const int code = RunCommandLine("zero3", commands, args, out, err);
  return {code, out.str(), err.str()};
}

TEST(ConfigCommandTest, PrintsTheResolvedConfig) {
  const Result r =
      RunConfig({std::string(kConfigDir) + "legacy_cpu_offload.json"});
  EXPECT_EQ(r.code, kExitOk);
  // stdout is exactly the resolved configuration, as JSON.
  absl::StatusOr<config::LoadedConfig> printed =
      config::LoadConfigText(r.out, config::ConfigFormat::kJson);
  ASSERT_TRUE(printed.ok()) << printed.status();
  EXPECT_FALSE(
      printed->config.zero_optimization().offload_optimizer().pin_memory());
  EXPECT_EQ(r.out, config::ConfigToJson(printed->config) + "\n");
  // Notices on stderr, one per line.
  EXPECT_THAT(r.err, StartsWith("notice: zero_optimization.cpu_offload: "));
  EXPECT_THAT(r.err, HasSubstr("\nnotice: "
                               "zero_optimization.cpu_offload_use_pin_memory"
                               ": deprecated"));
  EXPECT_THAT(r.err, Not(HasSubstr("error:")));
}

TEST(ConfigCommandTest, InvalidConfigListsEveryErrorAndExitsTwo) {
  const Result r =
      RunConfig({std::string(kConfigDir) + "hf_zero3_offload.json"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.out, IsEmpty());
  int lines = 0;
  std::istringstream err(r.err);
  for (std::string line; std::getline(err, line);) {
    EXPECT_THAT(line, StartsWith("error: "));
    ++lines;
  }
  // The "auto" keys that need zero3 train's flags or model, and fp16/bf16
  // (hf_auto.h).
  EXPECT_EQ(lines, 11);
}

TEST(ConfigCommandTest, WorldSizeAndOverrides) {
  const std::string file =
      std::string(kConfigDir) + "hf_zero3_offload_filled.json";
  Result r = RunConfig({file, "--world-size", "2"});
  EXPECT_EQ(r.code, kExitUsage);
  // Each error names the file, its line and column.
  EXPECT_THAT(r.err, HasSubstr("error: " + file +
                               ": train_batch_size (line 53, column 25): "
                               "batch sizes are inconsistent: "
                               "train_batch_size 16 must equal"));
  r = RunConfig({file, "--world-size=2", "--set", "train_batch_size=32"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"train_batch_size\": 32,"));
  r = RunConfig({file, "--set", "zero_optimization.stage=1"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr(": zero_optimization.stage: zero3 "
                               "implements ZeRO stage 3 only, found 1"));
}

TEST(ConfigCommandTest, MalformedAndMissingFiles) {
  Result r = RunConfig({"/nonexistent.json"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(r.err,
            "error: cannot read configuration file /nonexistent.json: No "
            "such file or directory\n");
  r = RunConfig({});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("missing argument FILE"));
}

}  // namespace
}  // namespace cli
}  // namespace zero3
