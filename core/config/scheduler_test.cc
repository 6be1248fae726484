// Copyright 2026 The zero3 Authors.
//
// The scheduler section through the loader: each type's parameters and
// DeepSpeed's defaults, and each error.

#include "core/config/scheduler.h"

#include <string>

#include "absl/strings/match.h"
#include "core/config/config_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace config {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using ::zero3::testing::StatusIs;

absl::StatusOr<LoadedConfig> Load(const std::string& json) {
  return LoadConfigText(json, ConfigFormat::kJson);
}

TEST(SchedulerTest, AbsentMeansConstantAndIsNotPrinted) {
  ASSERT_OK_AND_ASSIGN(LoadedConfig loaded, Load("{}"));
  EXPECT_FALSE(loaded.config.has_scheduler());
  EXPECT_THAT(ConfigToJson(loaded.config), Not(HasSubstr("scheduler")));
}

TEST(SchedulerTest, WarmupLRDefaults) {
  // DeepSpeed's WarmupLR: min 0, max the optimizer's lr, 1000 log steps.
  ASSERT_OK_AND_ASSIGN(LoadedConfig loaded,
                       Load(R"({"optimizer": {"params": {"lr": 3e-4}},
               "scheduler": {"type": "WarmupLR"}})"));
  const SchedulerParams& p = loaded.config.scheduler().params();
  EXPECT_EQ(p.warmup_min_lr(), 0);
  EXPECT_EQ(p.warmup_max_lr(), 3e-4);
  EXPECT_EQ(p.warmup_num_steps(), 1000);
  EXPECT_EQ(p.warmup_type(), "log");
  EXPECT_EQ(p.last_batch_iteration(), -1);
  EXPECT_FALSE(p.has_total_num_steps());
  EXPECT_FALSE(p.has_cos_min_ratio());
  // Printed with exactly its parameters, and read back the same.
  const std::string json = ConfigToJson(loaded.config);
  EXPECT_THAT(json, HasSubstr("\"warmup_max_lr\": 0.0003"));
  EXPECT_THAT(json, Not(HasSubstr("cos_min_ratio")));
  ASSERT_OK_AND_ASSIGN(LoadedConfig again, Load(json));
  EXPECT_EQ(ConfigToJson(again.config), json);
}

TEST(SchedulerTest, WarmupDecayAndCosineDefaults) {
  ASSERT_OK_AND_ASSIGN(LoadedConfig decay,
                       Load(R"({"scheduler": {"type": "WarmupDecayLR",
                             "params": {"total_num_steps": 50}}})"));
  EXPECT_EQ(decay.config.scheduler().params().warmup_max_lr(), 0.001);
  EXPECT_EQ(decay.config.scheduler().params().total_num_steps(), 50);
  // total_num_steps < warmup_num_steps: DeepSpeed warns; so does zero3.
  EXPECT_THAT(decay.notices,
              Contains(HasSubstr("scheduler.params.total_num_steps: 50 is "
                                 "less than warmup_num_steps 1000")));
  ASSERT_OK_AND_ASSIGN(LoadedConfig cosine,
                       Load(R"({"scheduler": {"type": "WarmupCosineLR",
                             "params": {"total_num_steps": 5000,
                                        "warmup_type": "linear"}}})"));
  const SchedulerParams& p = cosine.config.scheduler().params();
  EXPECT_EQ(p.cos_min_ratio(), 0.0001);
  EXPECT_EQ(p.warmup_min_ratio(), 0);
  EXPECT_EQ(p.warmup_type(), "linear");
  EXPECT_FALSE(p.has_warmup_max_lr());
  EXPECT_TRUE(cosine.notices.empty() ||
              !absl::StrContains(cosine.notices.back(), "total_num_steps"));
}

TEST(SchedulerTest, Errors) {
  struct Case {
    const char* json;
    const char* error;
  } cases[] = {
      {R"({"scheduler": {"params": {"warmup_num_steps": 10}}})",
       "scheduler.type: missing: the scheduler section needs a type"},
      {R"({"scheduler": {"type": "WarmupLr"}})",
       "\"WarmupLr\" is not one of DeepSpeed's schedules: \"WarmupLR\", "
       "\"WarmupDecayLR\", \"WarmupCosineLR\", \"OneCycle\", \"LRRangeTest\"; "
       "did you mean \"WarmupLR\"?"},
      {R"({"scheduler": {"type": "OneCycle"}})",
       "scheduler.params.cycle_min_lr: missing: OneCycle needs cycle_min_lr "
       "and cycle_max_lr"},
      {R"({"scheduler": {"type": "OneCycle",
                         "params": {"cycle_min_lr": 1e-4, "cycle_max_lr": 1e-3,
                                    "decay_step_size": 10,
                                    "decay_mom_rate": 0.1}}})",
       "scheduler.params.decay_mom_rate (line 4, column 55): must be 0 with "
       "cycle_momentum"},
      {R"({"scheduler": {"type": "OneCycle",
                         "params": {"cycle_min_lr": 1e-4, "cycle_max_lr": 1e-3,
                                    "warmup_num_steps": 10}}})",
       "OneCycle takes no warmup_num_steps"},
      {R"({"scheduler": {"type": "LRRangeTest",
                         "params": {"lr_range_test_step_size": 0}}})",
       "must be >= 1 (DeepSpeed requires a positive step size)"},
      {R"({"scheduler": {"type": "WarmupLR",
                         "params": {"cos_min_ratio": 0.1}}})",
       "scheduler.params.cos_min_ratio (line 2, column 54): WarmupLR takes no "
       "cos_min_ratio"},
      {R"({"scheduler": {"type": "WarmupDecayLR"}})",
       "scheduler.params.total_num_steps: missing: WarmupDecayLR needs"},
      {R"({"scheduler": {"type": "WarmupLR",
                         "params": {"warmup_type": "Linear"}}})",
       "must be \"log\" or \"linear\", found \"Linear\"; did you mean "
       "\"linear\"?"},
      {R"({"scheduler": {"type": "WarmupLR",
                         "params": {"warmup_num_steps": -1}}})",
       "scheduler.params.warmup_num_steps (line 2, column 57): must be >= 0, "
       "found -1"},
      {R"({"scheduler": {"type": "WarmupCosineLR",
                         "params": {"total_num_steps": 10,
                                    "cos_min_ratio": 1.5}}})",
       "scheduler.params.cos_min_ratio (line 3, column 54): must be in [0, 1]"},
      {R"({"scheduler": {"type": "WarmupLR",
                         "params": {"warmup_max_lr": [1e-3, 1e-4]}}})",
       "scheduler.params.warmup_max_lr (line 2, column 54): expected a number"},
      {R"({"scheduler": {"type": "WarmupLR",
                         "params": {"last_batch_iteration": -2}}})",
       "must be >= -1"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(Load(c.json), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr(c.error)))
        << c.json;
  }
}

TEST(SchedulerTest, TypesAndTheirParameters) {
  for (const std::string& type : SchedulerTypes()) {
    EXPECT_THAT(SchedulerParamNames(type), Contains("last_batch_iteration"));
  }
  EXPECT_THAT(SchedulerParamNames("WarmupCosineLR"),
              AllOf(Contains("cos_min_ratio"), Not(Contains("warmup_max_lr"))));
  EXPECT_THAT(SchedulerParamNames("OneCycle"),
              AllOf(Contains("cycle_momentum"), Not(Contains("warmup_type"))));
  EXPECT_TRUE(SchedulerParamNames("CyclicLR").empty());
}

// DeepSpeed's constructor defaults, the second half's size and stairs from
// the first's.
TEST(SchedulerTest, OneCycleAndRangeTestDefaults) {
  ASSERT_OK_AND_ASSIGN(LoadedConfig one, Load(R"({"scheduler": {
      "type": "OneCycle", "params": {"cycle_min_lr": 1e-4, "cycle_max_lr": 1e-3,
      "cycle_first_step_size": 50, "cycle_first_stair_count": 5}}})"));
  const SchedulerParams& p = one.config.scheduler().params();
  EXPECT_EQ(p.cycle_second_step_size(), 50);
  EXPECT_EQ(p.cycle_second_stair_count(), 5);
  EXPECT_TRUE(p.has_cycle_momentum());
  EXPECT_TRUE(p.cycle_momentum());
  EXPECT_EQ(p.cycle_min_mom(), 0.8);
  EXPECT_EQ(p.decay_step_size(), 0);
  EXPECT_FALSE(p.has_warmup_num_steps());
  ASSERT_OK_AND_ASSIGN(LoadedConfig range,
                       Load(R"({"scheduler": {"type": "LRRangeTest"}})"));
  const SchedulerParams& r = range.config.scheduler().params();
  EXPECT_EQ(r.lr_range_test_min_lr(), 0.001);
  EXPECT_EQ(r.lr_range_test_step_size(), 2000);
  EXPECT_TRUE(r.has_lr_range_test_staircase());
  EXPECT_FALSE(r.has_cycle_min_lr());
}

}  // namespace
}  // namespace config
}  // namespace zero3
