// Copyright 2026 The zero3 Authors.
//
// Every combination of the modes that decide where the host share's
// optimizer step runs, loaded from DeepSpeed JSON as a user writes it: the
// plan (PlanHostStep) and the loader's notices, against a table written
// out by hand.

#include "core/config/modes.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/config/config_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace config {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Expected {
  bool delayed, speculative, in_forward, carries_over;
};

// Where the step can move, by (super_offload, host_step_overlap).
Expected Movable(bool super, const std::string& overlap) {
  if (overlap == "delayed") return {true, false, false, false};
  if (overlap == "forward") return {false, super, true, super};
  return {false, super, false, false};
}

TEST(ModesTest, EveryCombinationPlansTheHostStepAndNamesWhatStaysPut) {
  int cases = 0;
  for (const char* optimizer : {"none", "cpu"}) {
    for (const char* param : {"none", "cpu"}) {
      for (const char* copy : {"bucketed", "per_param_fp32"}) {
        for (const bool super : {false, true}) {
          for (const char* overlap : {"none", "forward", "delayed"}) {
            const std::string json = absl::StrCat(
                R"({"zero_optimization": {"offload_optimizer": {"device": ")",
                optimizer, R"(", "super_offload": )", super ? "true" : "false",
                R"(}, "offload_param": {"device": ")", param,
                R"("}}, "zero3": {"grad_offload_copy": ")", copy,
                R"(", "host_step_overlap": ")", overlap, R"("}})");
            SCOPED_TRACE(json);
            ++cases;
            absl::StatusOr<LoadedConfig> loaded =
                LoadConfigText(json, ConfigFormat::kJson);
            ASSERT_TRUE(loaded.ok()) << loaded.status();
            const HostStepPlan plan =
                PlanHostStep(HostStepAskOf(ModesOf(loaded->config)));
            const std::string notices = absl::StrJoin(loaded->notices, "\n");
            // Why it cannot move, in the rule's order; "" where it can.
            const std::string why =
                std::string(optimizer) == "none"
                    ? "the optimizer is not offloaded"
                : std::string(param) != "none"
                    ? "offload_param keeps the working shards on the host"
                : std::string(copy) == "per_param_fp32"
                    ? "\"per_param_fp32\" sends the fp32 master back"
                    : "";
            if (!why.empty()) {
              EXPECT_THAT(plan.cannot_move, HasSubstr(why));
              EXPECT_FALSE(plan.moves());
              EXPECT_FALSE(plan.carries_over);
              const bool asked = super || std::string(overlap) != "none";
              if (asked) {
                EXPECT_THAT(notices, HasSubstr(why));
              }
              EXPECT_EQ(notices.find("the speculative host step stays off") !=
                            std::string::npos,
                        super);
              EXPECT_EQ(notices.find("the host step stays at the end of the "
                                     "step") != std::string::npos,
                        std::string(overlap) != "none");
              continue;
            }
            EXPECT_EQ(plan.cannot_move, nullptr);
            const Expected want = Movable(super, overlap);
            EXPECT_EQ(plan.delayed, want.delayed);
            EXPECT_EQ(plan.speculative, want.speculative);
            EXPECT_EQ(plan.in_forward, want.in_forward);
            EXPECT_EQ(plan.carries_over, want.carries_over);
            EXPECT_EQ(plan.moves(), super || std::string(overlap) != "none");
            EXPECT_THAT(notices, Not(HasSubstr("stays at the end")));
            if (super && std::string(overlap) == "delayed") {
              EXPECT_THAT(notices, HasSubstr("\"delayed\" runs the host step "
                                             "during the next step instead"));
            } else {
              EXPECT_THAT(notices, Not(HasSubstr("stays off")));
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 48);
}

// DeepSpeed's strings map to the modes; an absent key is its default.
TEST(ModesTest, StringsMapToTheirModes) {
  absl::StatusOr<LoadedConfig> loaded = LoadConfigText(
      R"({"zero_optimization": {"offload_optimizer": {"device": "cpu"}},
          "zero3": {"grad_offload": "blocking", "checkpoint_write": "blocking",
                    "checkpoint_on_failure": "continue",
                    "pinned_fallback": "pageable"}})",
      ConfigFormat::kJson);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const Modes m = ModesOf(loaded->config);
  EXPECT_EQ(m.offload_optimizer, OffloadDevice::kCpu);
  EXPECT_EQ(m.offload_param, OffloadDevice::kNone);
  EXPECT_EQ(m.grad_offload, GradOffload::kBlocking);
  EXPECT_EQ(m.grad_offload_copy, GradOffloadCopy::kBucketed);
  EXPECT_EQ(m.checkpoint_write, CheckpointWrite::kBlocking);
  EXPECT_EQ(m.checkpoint_on_failure, CheckpointOnFailure::kContinue);
  EXPECT_EQ(m.pinned_fallback, PinnedFallback::kPageable);
  const Modes defaults = ModesOf(Config());
  EXPECT_EQ(defaults.grad_offload, GradOffload::kAsync);
  EXPECT_EQ(defaults.checkpoint_write, CheckpointWrite::kAsync);
  EXPECT_EQ(defaults.pinned_fallback, PinnedFallback::kError);
}

// The offloaded step leaves the host only with the optimizer offloaded in
// host memory (fp32 or bf16 states), the working shards on the device and
// a fixed ratio; each exception names itself.
TEST(ModesTest, OffloadedStepLeavesTheHostOnlyWhereItMay) {
  OffloadedStepAsk ok;
  ok.offload_optimizer = true;
  EXPECT_EQ(OffloadedStepCannotLeaveHost(ok), nullptr);
  const std::vector<std::pair<bool OffloadedStepAsk::*, const char*>> stops = {
      {&OffloadedStepAsk::offload_param, "offload_param"},
      {&OffloadedStepAsk::nvme, "NVMe"},
      {&OffloadedStepAsk::auto_offload_ratio, "auto_offload_ratio"}};
  for (const auto& [field, name] : stops) {
    OffloadedStepAsk ask = ok;
    ask.*field = true;
    const char* why = OffloadedStepCannotLeaveHost(ask);
    ASSERT_NE(why, nullptr) << name;
    EXPECT_THAT(why, HasSubstr(name));
  }
  EXPECT_THAT(OffloadedStepCannotLeaveHost(OffloadedStepAsk()),
              HasSubstr("not offloaded"));
}

}  // namespace
}  // namespace config
}  // namespace zero3
