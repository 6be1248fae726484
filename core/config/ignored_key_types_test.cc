// Copyright 2026 The zero3 Authors.

#include "core/config/ignored_key_types.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace config {
namespace {

using ::testing::HasSubstr;

// The errors for `json`, one per line, or "" when there are none.
std::string Errors(const std::string& json) {
  const absl::StatusOr<JsonValue> settings = ParseJson(json);
  EXPECT_TRUE(settings.ok()) << settings.status();
  Diagnostics diag;
  CheckIgnoredKeyTypes(*settings, &diag);
  return std::string(diag.ToStatus().message());
}

TEST(IgnoredKeyTypesTest, ValuesOfDeepSpeedsTypesPass) {
  EXPECT_EQ(Errors(R"({"zero_optimization": {"round_robin_gradients": "on",
      "allgather_bucket_size": 5e8, "mics_shard_size": -1,
      "zeropp_loco_param": null, "leaf_module": {},
      "offload_optimizer": {"cpuadam_cores_perc": "0.5"}},
      "bfloat16": {"check_grad_overflow": 0},
      "wandb": {"enabled": true, "team": null},
      "comms_logger": {"prof_ops": []}})"),
            "");
}

TEST(IgnoredKeyTypesTest, ValuesDeepSpeedRejectsAreErrors) {
  // runtime/zero/config.py and offload_config.py.
  EXPECT_THAT(
      Errors(R"({"zero_optimization": {"allgather_bucket_size": -1}})"),
      HasSubstr("zero_optimization.allgather_bucket_size (line 1, column 49): "
                "expected an "
                "integer >= 0, found -1"));
  EXPECT_THAT(
      Errors(R"({"bfloat16": {"check_grad_overflow": 2}})"),
      HasSubstr("bf16.check_grad_overflow (line 1, column 38): expected "
                "true or false"));
  EXPECT_THAT(Errors(R"({"zero_optimization": {"leaf_module": []}})"),
              HasSubstr("expected an object, found an array"));
  // monitor/config.py: extra keys are forbidden.
  EXPECT_THAT(
      Errors(R"({"comet": {"api_kye": "x"}})"),
      HasSubstr("comet.api_kye (line 1, column 12): unknown key (did you "
                "mean \"api_key\"?)"));
  EXPECT_THAT(Errors(R"({"wandb": null})"),
              HasSubstr("wandb: expected an object, found null"));
}

}  // namespace
}  // namespace config
}  // namespace zero3
