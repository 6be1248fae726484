// Copyright 2026 The zero3 Authors.
//
// OptionsFromConfig: how zero3.host_step_overlap and super_offload reach the
// engine's options, and which of the modes then applies.

#include "core/engine/config_options.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "core/config/config_loader.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace engine {
namespace {

zero::ZeroOptions Options(const std::string& json) {
  auto loaded = config::LoadConfigText(json, config::ConfigFormat::kJson);
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  auto o = OptionsFromConfig(loaded->config, 64, 0);
  EXPECT_TRUE(o.ok()) << o.status();
  return *o;
}

constexpr char kOffloaded[] =
    R"("zero_optimization": {"offload_optimizer": {"device": "cpu",
       "super_offload": true}})";

TEST(ConfigOptionsTest, HostStepOverlapPicksOneMode) {
  // super_offload's default: the speculation's rest under the next forward.
  const zero::ZeroOptions given = Options(absl::StrCat("{", kOffloaded, "}"));
  EXPECT_TRUE(zero::HostStepPlanOf(given).carries_over);
  EXPECT_FALSE(zero::HostStepPlanOf(given).delayed);

  const zero::ZeroOptions none = Options(absl::StrCat(
      "{", kOffloaded, R"(, "zero3": {"host_step_overlap": "none"}})"));
  EXPECT_TRUE(zero::HostStepPlanOf(none).speculative);
  EXPECT_FALSE(zero::HostStepPlanOf(none).in_forward);
  EXPECT_FALSE(zero::HostStepPlanOf(none).delayed);

  const zero::ZeroOptions forward = Options(absl::StrCat(
      "{", kOffloaded, R"(, "zero3": {"host_step_overlap": "forward"}})"));
  EXPECT_TRUE(zero::HostStepPlanOf(forward).in_forward);
  EXPECT_FALSE(zero::HostStepPlanOf(forward).delayed);

  // The delayed update replaces both others.
  const zero::ZeroOptions delayed = Options(absl::StrCat(
      "{", kOffloaded, R"(, "zero3": {"host_step_overlap": "delayed"}})"));
  EXPECT_TRUE(delayed.host_step_delayed);
  EXPECT_TRUE(zero::HostStepPlanOf(delayed).delayed);
  EXPECT_FALSE(zero::HostStepPlanOf(delayed).speculative);
  EXPECT_FALSE(zero::HostStepPlanOf(delayed).in_forward);
}

TEST(ConfigOptionsTest, DelayedNeedsTheOptimizerOffloaded) {
  const zero::ZeroOptions o =
      Options(R"({"zero3": {"host_step_overlap": "delayed"}})");
  EXPECT_TRUE(o.host_step_delayed);
  EXPECT_FALSE(zero::HostStepPlanOf(o).delayed);
}

}  // namespace
}  // namespace engine
}  // namespace zero3
