// Copyright 2026 The zero3 Authors.
//
// DeepSpeed's activation_checkpointing section and the recompute policy key
// through the loader: values read, a notice per given key, DeepSpeed's own
// rejections as errors.

#include "core/config/activation_checkpointing.h"

#include <string>

#include "core/config/config_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace config {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

absl::StatusOr<LoadedConfig> Load(absl::string_view json) {
  return LoadConfigText(json, ConfigFormat::kJson);
}

TEST(ActivationCheckpointingTest, SectionAloneTurnsNothingOn) {
  ASSERT_OK_AND_ASSIGN(LoadedConfig c, Load(R"({"activation_checkpointing": {
                           "partition_activations": true,
                           "cpu_checkpointing": true,
                           "number_checkpoints": 24,
                           "synchronize_checkpoint_boundary": true,
                           "profile": true}})"));
  EXPECT_EQ(c.config.zero3().activation_checkpoint_interval(), 0);
  EXPECT_EQ(c.config.activation_checkpointing().number_checkpoints(), 24);
  // Printed as given; a config without the section prints none.
  EXPECT_THAT(ConfigToJson(c.config), HasSubstr("\"number_checkpoints\": 24"));
  EXPECT_THAT(ConfigToJson(c.config),
              Not(HasSubstr("contiguous_memory_optimization")));
  ASSERT_OK_AND_ASSIGN(LoadedConfig plain, Load("{}"));
  EXPECT_THAT(ConfigToJson(plain.config),
              Not(HasSubstr("activation_checkpointing")));
  for (const char* key :
       {"activation_checkpointing: configures DeepSpeed's checkpoint",
        "partition_activations: changes nothing",
        "cpu_checkpointing: moves the kept layer inputs to host memory only",
        "number_checkpoints: changes nothing",
        "synchronize_checkpoint_boundary: not needed", "profile: ignored"}) {
    EXPECT_THAT(c.notices, Contains(HasSubstr(key)));
  }
}

TEST(ActivationCheckpointingTest, PolicyKeyIsReadAndBounded) {
  ASSERT_OK_AND_ASSIGN(LoadedConfig c,
                       Load(R"({"zero3": {"activation_checkpoint_interval": 2,
                                   "activation_checkpoint_mlp_only": true},
                         "activation_checkpointing": {}})"));
  EXPECT_EQ(c.config.zero3().activation_checkpoint_interval(), 2);
  EXPECT_TRUE(c.config.zero3().activation_checkpoint_mlp_only());
  EXPECT_THAT(c.notices, Not(Contains(HasSubstr("activation_checkpointing"))));
  const absl::Status negative =
      Load(R"({"zero3": {"activation_checkpoint_interval": -1}})").status();
  EXPECT_THAT(std::string(negative.message()),
              HasSubstr("zero3.activation_checkpoint_interval"));
}

TEST(ActivationCheckpointingTest, CpuCheckpointingIsHonouredWithRecompute) {
  ASSERT_OK_AND_ASSIGN(LoadedConfig c,
                       Load(R"({"zero3": {"activation_checkpoint_interval": 1},
                         "activation_checkpointing": {
                           "cpu_checkpointing": true}})"));
  EXPECT_TRUE(c.config.activation_checkpointing().cpu_checkpointing());
  EXPECT_THAT(c.notices, Not(Contains(HasSubstr("cpu_checkpointing"))));
}

TEST(ActivationCheckpointingTest, ContiguousNeedsPartitionAndCount) {
  const absl::Status alone = Load(R"({"activation_checkpointing":
        {"contiguous_memory_optimization": true}})")
                                 .status();
  EXPECT_THAT(std::string(alone.message()),
              HasSubstr("needs partition_activations true"));
  EXPECT_THAT(std::string(alone.message()),
              HasSubstr("needs number_checkpoints"));
  ASSERT_OK_AND_ASSIGN(LoadedConfig c, Load(R"(
      {"activation_checkpointing": {"contiguous_memory_optimization": true,
         "partition_activations": true, "number_checkpoints": 4}})"));
  EXPECT_THAT(c.notices,
              Contains(HasSubstr("contiguous_memory_optimization: changes "
                                 "nothing in zero3")));
}

}  // namespace
}  // namespace config
}  // namespace zero3
