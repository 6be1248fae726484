// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/metrics/jsonl_sink.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "core/config/json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"
#include "tools/cli/internal/metrics/test_util.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace metrics {
namespace {

using ::testing::HasSubstr;
using ::zero3::testing::StatusIs;

constexpr const char* kKeys[] = {
    "step",         "samples",          "loss",      "lr",
    "grad_norm",    "loss_scale",       "skipped",   "skip_reason",
    "tokens",       "predicted_tokens", "eval_loss", "eval_ppl",
    "tokens_per_s", "fwd_ms",           "bwd_ms",    "step_ms",
    "total_ms",     "model_flops",      "mfu",       "pinned_host_bytes",
    "device_bytes", "device_peak_bytes"};

double Get(const config::JsonValue& line, const char* key) {
  return line.Find(key)->number_value();
}

TEST(JsonlSinkTest, OneObjectPerStepReadsBack) {
  const std::string path = FreshDir("jsonl") + ".jsonl";
  ASSERT_OK_AND_ASSIGN(auto sink, JsonlSink::Create(path));
  ASSERT_OK(sink->Write(TestStep(1, true)));
  // After each write the line is in the file (a crash keeps it).
  const std::string after_one = ReadFile(path);
  EXPECT_EQ(std::count(after_one.begin(), after_one.end(), '\n'), 1);
  ASSERT_OK(sink->Write(TestStep(2, false)));
  const std::string text = ReadFile(path);
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[2], "");
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK_AND_ASSIGN(config::JsonValue line, config::ParseJson(lines[i]));
    std::vector<std::string> keys;
    for (const auto& m : line.members()) keys.push_back(m.key);
    EXPECT_EQ(keys,
              std::vector<std::string>(std::begin(kKeys), std::end(kKeys)));
    const StepMetrics want = TestStep(i + 1, i == 0);
    EXPECT_EQ(Get(line, "step"), want.step);
    EXPECT_EQ(Get(line, "samples"), want.samples);
    EXPECT_EQ(Get(line, "lr"), want.lr);
    EXPECT_EQ(Get(line, "fwd_ms"), want.fwd_ms);
    EXPECT_EQ(Get(line, "tokens_per_s"), want.tokens_per_s);
    EXPECT_EQ(Get(line, "mfu"), want.mfu);
    EXPECT_EQ(Get(line, "model_flops"), want.model_flops);
    EXPECT_EQ(Get(line, "device_peak_bytes"), want.device_peak_bytes);
    EXPECT_EQ(line.Find("skipped")->bool_value(), want.skipped);
    EXPECT_EQ(Get(line, "predicted_tokens"), want.predicted_tokens);
    // Evaluated after step 2 only: null before.
    EXPECT_EQ(line.Find("eval_loss")->is_null(), !want.eval_loss.has_value());
  }
  ASSERT_OK_AND_ASSIGN(config::JsonValue evaluated,
                       config::ParseJson(lines[1]));
  EXPECT_EQ(Get(evaluated, "eval_loss"), 2.0);
  EXPECT_EQ(Get(evaluated, "eval_ppl"), std::exp(2.0));
  ASSERT_OK_AND_ASSIGN(config::JsonValue first, config::ParseJson(lines[0]));
  EXPECT_EQ(Get(first, "loss"), 4.5);
  EXPECT_EQ(Get(first, "grad_norm"), 0.25);
  EXPECT_TRUE(first.Find("skip_reason")->is_null());
  // Timing mode: no loss, no gradient norm.
  ASSERT_OK_AND_ASSIGN(config::JsonValue second, config::ParseJson(lines[1]));
  EXPECT_TRUE(second.Find("loss")->is_null());
  EXPECT_TRUE(second.Find("grad_norm")->is_null());
  EXPECT_EQ(second.Find("skip_reason")->string_value(), "gradient overflow");
}

// With the speculative step configured, every line carries its outcome
// after skip_reason: a string, or null where the step did not speculate.
TEST(JsonlSinkTest, SpeculationOnlyWhenConfigured) {
  StepMetrics m = TestStep(1, true);
  EXPECT_THAT(StepMetricsJson(m), ::testing::Not(HasSubstr("speculation")));
  m.speculation = "committed";
  EXPECT_THAT(StepMetricsJson(m),
              HasSubstr("\"skip_reason\": null, \"speculation\": "
                        "\"committed\", \"tokens\""));
  m.speculation = "";
  EXPECT_THAT(StepMetricsJson(m), HasSubstr("\"speculation\": null"));
}

TEST(JsonlSinkTest, TruncatesAnOldFile) {
  const std::string path = FreshDir("old") + ".jsonl";
  {
    ASSERT_OK_AND_ASSIGN(auto sink, JsonlSink::Create(path));
    ASSERT_OK(sink->Write(TestStep(1, true)));
  }
  ASSERT_OK_AND_ASSIGN(auto sink, JsonlSink::Create(path));
  EXPECT_EQ(ReadFile(path), "");
}

TEST(JsonlSinkTest, UnwritablePathIsAnErrorNamingIt) {
  const std::string path = FreshDir("missing") + "/m.jsonl";
  EXPECT_THAT(JsonlSink::Create(path).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--metrics: cannot write " + path +
                                 ": No such file or directory")));
}

// With the run's bound estimated, each line carries it, its parts and the
// share of the step it is; without, none of them.
TEST(JsonlSinkTest, CarriesTheBoundWhenEstimated) {
  const std::string path = FreshDir("jsonl_bound") + ".jsonl";
  ASSERT_OK_AND_ASSIGN(auto sink, JsonlSink::Create(path));
  StepMetrics m = TestStep(1, true);
  m.total_ms = 400;
  m.bound = whatif::StepBound{200, 300, 40, 41, 5};
  ASSERT_OK(sink->Write(m));
  const std::vector<std::string> lines = absl::StrSplit(ReadFile(path), '\n');
  ASSERT_OK_AND_ASSIGN(config::JsonValue line, config::ParseJson(lines[0]));
  std::vector<std::string> keys;
  for (const auto& member : line.members()) keys.push_back(member.key);
  std::vector<std::string> want(std::begin(kKeys), std::end(kKeys));
  for (const char* k :
       {"bound_ms", "bound_reached", "bound_device_ms", "bound_host_ms",
        "bound_h2d_ms", "bound_d2h_ms", "bound_comm_ms"}) {
    want.push_back(k);
  }
  EXPECT_EQ(keys, want);
  EXPECT_EQ(Get(line, "bound_ms"), 300);
  EXPECT_EQ(Get(line, "bound_reached"), 0.75);
  EXPECT_EQ(Get(line, "bound_host_ms"), 300);
  EXPECT_EQ(Get(line, "bound_d2h_ms"), 41);
  EXPECT_EQ(Get(line, "bound_comm_ms"), 5);
}

}  // namespace
}  // namespace metrics
}  // namespace internal
}  // namespace cli
}  // namespace zero3
