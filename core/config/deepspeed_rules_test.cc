// Copyright 2026 The zero3 Authors.
//
// What DeepSpeed accepts and rejects, key by key, through the loader: quoted
// scalars its pydantic sections convert, the keys it judges by value
// (deepspeed_rules.h), and the values that must not slip through (empty
// betas, numbers that underflow to 0, a loss scale that overflows every
// step). Each case names the DeepSpeed source it mirrors.

#include <string>

#include "absl/strings/str_cat.h"
#include "core/config/config.pb.h"
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
using ::testing::IsEmpty;
using ::testing::Not;
using ::zero3::testing::StatusIs;

absl::StatusOr<LoadedConfig> Load(const std::string& json) {
  return LoadConfigText(json, ConfigFormat::kJson, LoadOptions{});
}

// The error text of `json`, or "accepted".
std::string Error(const std::string& json) {
  const absl::StatusOr<LoadedConfig> loaded = Load(json);
  return loaded.ok() ? "accepted" : std::string(loaded.status().message());
}

TEST(DeepSpeedRulesTest, QuotedScalarsInPydanticSectionsAreConverted) {
  // test_precision_config_loss_scale.py accepts {"loss_scale": "3"};
  // transformers' DeepSpeed docs write "fp16": {"enabled": "false"}.
  ASSERT_OK_AND_ASSIGN(LoadedConfig c,
                       Load(R"({"fp16": {"enabled": "true", "loss_scale": "3"},
               "zero_optimization": {"stage": "3",
                 "contiguous_gradients": "true", "overlap_comm": 0,
                 "reduce_bucket_size": "5_000", "offload_optimizer": {
                   "device": "cpu", "pin_memory": "off"}}})"));
  EXPECT_TRUE(c.config.fp16().enabled());
  EXPECT_EQ(c.config.fp16().loss_scale(), 3);
  EXPECT_EQ(c.config.zero_optimization().stage(), 3);
  EXPECT_FALSE(c.config.zero_optimization().overlap_comm());
  EXPECT_EQ(c.config.zero_optimization().reduce_bucket_size(), 5000);
  EXPECT_FALSE(c.config.zero_optimization().offload_optimizer().pin_memory());
  EXPECT_THAT(c.notices,
              Contains("fp16.loss_scale: the string \"3\" is read as 3.0, as "
                       "DeepSpeed's pydantic reads it; write 3.0"));
  EXPECT_THAT(c.notices, Contains(HasSubstr("zero_optimization.overlap_comm: "
                                            "0 is read as false")));
  EXPECT_THAT(c.notices,
              Contains(HasSubstr("zero_optimization.stage: the string \"3\" "
                                 "is read as 3")));
  // One notice per conversion.
  int conversions = 0;
  for (const std::string& n : c.notices) {
    conversions +=
        n.find("as DeepSpeed's pydantic reads it") != std::string::npos;
  }
  EXPECT_EQ(conversions, 7);
}

TEST(DeepSpeedRulesTest, ConversionsPydanticRefusesStayErrors) {
  EXPECT_THAT(Error(R"({"zero_optimization": {"reduce_bucket_size": "3.5"}})"),
              HasSubstr("expected an integer, found the string \"3.5\""));
  EXPECT_THAT(Error(R"({"zero_optimization": {"reduce_bucket_size": 2.5}})"),
              HasSubstr("expected an integer, found 2.5"));
  EXPECT_EQ(Error(R"({"zero_optimization": {"reduce_bucket_size": 2.0}})"),
            "accepted");
  EXPECT_THAT(Error(R"({"fp16": {"enabled": "maybe"}})"),
              HasSubstr("expected true or false"));
  // DeepSpeed's _validate_loss_scale: "must be a number, not bool".
  EXPECT_THAT(Error(R"({"fp16": {"loss_scale": true}})"),
              HasSubstr("fp16.loss_scale"));
  // _reject_non_integer_scale_params: int("3.0") fails in Python.
  EXPECT_THAT(Error(R"({"fp16": {"loss_scale_window": "3.0"}})"),
              HasSubstr("fp16.loss_scale_window"));
  // Top-level keys are not pydantic: DeepSpeed compares the string with
  // numbers and fails (runtime/config.py, _batch_assertion).
  EXPECT_THAT(Error(R"({"train_batch_size": "8"})"),
              HasSubstr("train_batch_size"));
}

TEST(DeepSpeedRulesTest, SequenceParallelSizeSaysWhatDeepSpeedDoes) {
  const std::string e = Error(R"({"sequence_parallel_size": 2})");
  EXPECT_THAT(e, AllOf(HasSubstr("divides the data-parallel size by it"),
                       HasSubstr("zero3 has no sequence parallelism")));
  EXPECT_THAT(e, Not(HasSubstr("silently")));
  EXPECT_EQ(Error(R"({"sequence_parallel_size": 1})"), "accepted");
}

TEST(DeepSpeedRulesTest, SuggestionsStayInTheirSection) {
  // tests/unit/ops/muon: Muon's momentum is no zero_optimization key.
  const std::string muon = Error(
      R"({"optimizer": {"type": "Muon", "params": {"lr": 0.02,
          "momentum": 0.95}}})");
  EXPECT_THAT(muon, HasSubstr("\"Muon\" is not implemented"));
  EXPECT_THAT(muon, Not(HasSubstr("save_muon_momentum_buffer_in_memory")));
  EXPECT_THAT(muon, Not(HasSubstr("optimizer.params.momentum")));
  // With Adam the unknown parameter is reported, without a guess from
  // another section.
  EXPECT_THAT(Error(R"({"optimizer": {"params": {"momentum": 0.9}}})"),
              AllOf(HasSubstr("optimizer.params.momentum"),
                    Not(HasSubstr("zero_optimization"))));
  EXPECT_THAT(Error(R"({"zero_optimization": {"stage3_prefetch_bucket_sise":
                        1}})"),
              HasSubstr("did you mean \"stage3_prefetch_bucket_size\"?"));
}

TEST(DeepSpeedRulesTest, ManyOrHugeUnknownKeysAnswerQuickly) {
  std::string json = "{";
  for (int i = 0; i < 20000; ++i) {
    absl::StrAppend(&json, i ? "," : "", "\"unknown_key_", i, "\": 1");
  }
  absl::StrAppend(&json, ", \"", std::string(100000, 'k'), "\": 1}");
  const std::string e = Error(json);
  // 20 described, the rest counted; the long key shown cut, with its length.
  EXPECT_THAT(e, HasSubstr("and 19981 more unknown keys"));
  EXPECT_LT(e.size(), 20000u);
  ASSERT_OK_AND_ASSIGN(LoadedConfig unused, Load("{}"));
  EXPECT_THAT(Error(absl::StrCat("{\"", std::string(100000, 'k'), "\": 1}")),
              HasSubstr("(100000 characters)"));
}

TEST(DeepSpeedRulesTest, RejectionsDeepSpeedMakes) {
  struct Case {
    const char* json;
    const char* error;
  };
  const Case cases[] = {
      // runtime/config.py _do_error_check: 'sum' is not supported with ZeRO
      // stage 3; get_gradient_allreduce_op: only mean or sum.
      {R"({"gradient_allreduce_op": "sum"})", "DeepSpeed rejects a summed"},
      {R"({"gradient_allreduce_op": "max"})",
       "DeepSpeed accepts only \"mean\" or \"sum\""},
      // runtime/engine.py _do_optimizer_sanity_check.
      {R"({"amp": {"enabled": true}})",
       "amp.enabled (line 1, column 21): Apex AMP with ZeRO: DeepSpeed rejects "
       "it (\"Amp and ZeRO are not currently compatible\""},
      // runtime/config.py get_amp_params pops "enabled".
      {R"({"amp": {"opt_level": "O1"}})", "with \"enabled\""},
      // runtime/config.py _do_error_check.
      {R"({"bf16": {"enabled": true, "bf16_optimizer_states": true}})",
       "requires bf16_master_weights_and_grads"},
      // runtime/zero/config.py: zenflow is Optional[ZenFlowConfig].
      {R"({"zero_optimization": {"zenflow": true}})",
       "DeepSpeed needs an object here"},
      // runtime/config.py get_communication_data_type.
      {R"({"communication_data_type": "fp8"})",
       "DeepSpeed accepts \"fp16\", \"bf16\" or \"fp32\""},
      // runtime/zero/stage3.py with reduce_scatter.
      {R"({"gradient_predivide_factor": 2.0})", "ZeRO-3 requires 1"},
      {R"({"prescale_gradients": true})", "does not pre-scale"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(Error(c.json), HasSubstr(c.error)) << c.json;
  }
  // runtime/zero/stage3.py: master weights need optimizer offload.
  EXPECT_THAT(Error(R"({"fp16": {"fp16_master_weights_and_grads": true}})"),
              HasSubstr("Master weights feature requires ZeRO-3 Offload"));
  EXPECT_EQ(Error(R"({"fp16": {"fp16_master_weights_and_grads": true},
                      "zero_optimization": {"cpu_offload": true}})"),
            "accepted");
  // zero3's bf16 master and states are the host AdamW's: what they need.
  const struct {
    const char* json;
    const char* error;
  } bf16_cases[] = {
      {R"({"bf16": {"enabled": true, "bf16_master_weights_and_grads": true,
           "bf16_optimizer_states": true}})",
       "true without optimizer offload: DeepSpeed"},
      {R"({"bf16": {"enabled": false, "bf16_master_weights_and_grads": true},
           "zero_optimization": {"offload_optimizer": {"device": "cpu"}}})",
       "true without bf16.enabled"},
      {R"({"bf16": {"enabled": true, "bf16_master_weights_and_grads": true},
           "zero_optimization": {"offload_optimizer": {"device": "cpu",
                                                       "ratio": 0.5}}})",
       "part of the optimizer on the device"},
      {R"({"bf16": {"enabled": true, "bf16_master_weights_and_grads": true},
           "zero_optimization": {"offload_optimizer": {"device": "cpu",
                                                       "ratio": "auto"}}})",
       "part of the optimizer on the device"},
      {R"({"bf16": {"enabled": true, "bf16_master_weights_and_grads": true},
           "zero_optimization": {"offload_optimizer": {"device": "cpu"}},
           "zero3": {"grad_offload_copy": "per_param_fp32"}})",
       "sends the fp32 master back"},
  };
  for (const auto& c : bf16_cases) {
    EXPECT_THAT(Error(c.json), HasSubstr(c.error)) << c.json;
  }
  EXPECT_EQ(Error(R"({"bf16": {"enabled": true,
                               "bf16_master_weights_and_grads": true},
                      "zero_optimization": {"offload_optimizer":
                                            {"device": "cpu"}}})"),
            "accepted");
  for (const char* ok :
       {R"({"gradient_allreduce_op": "MEAN"})",
        R"({"amp": {"enabled": false}})",
        // runtime/engine.py builds the CPU Adam with bf16 moments itself.
        R"({"bf16": {"enabled": true, "bf16_master_weights_and_grads": true,
            "bf16_optimizer_states": true},
            "zero_optimization": {"offload_optimizer": {"device": "cpu"}}})",
        R"({"zero_optimization": {"zenflow": {"topk_ratio": 0.1}}})",
        R"({"communication_data_type": "BF16"})",
        R"({"gradient_predivide_factor": 1})",
        R"({"gradient_predivide_factor": 2.0,
            "zero_optimization": {"reduce_scatter": false}})"}) {
    EXPECT_EQ(Error(ok), "accepted") << ok;
  }
}

TEST(DeepSpeedRulesTest, IgnoredKeysKeepDeepSpeedsTypes) {
  // runtime/zero/config.py: round_robin_gradients: bool,
  // allgather_bucket_size: int = Field(ge=0); offload_config.py:
  // cpuadam_cores_perc: float = Field(ge=0.0, le=1.0).
  EXPECT_THAT(
      Error(R"({"zero_optimization": {"round_robin_gradients": "maybe"}})"),
      HasSubstr("zero_optimization.round_robin_gradients (line 1, column 49): "
                "expected true or false, found the string \"maybe\": "
                "DeepSpeed's config model rejects it"));
  EXPECT_THAT(Error(R"({"zero_optimization": {"allgather_bucket_size": -1}})"),
              HasSubstr("expected an integer >= 0, found -1"));
  EXPECT_THAT(Error(R"({"zero_optimization": {"offload_optimizer": {
                  "cpuadam_cores_perc": 2}}})"),
              HasSubstr("expected a number in [0, 1], found 2"));
  EXPECT_EQ(Error(R"({"zero_optimization": {"round_robin_gradients": "yes",
                      "allgather_bucket_size": 5e8,
                      "zeropp_loco_param": null}})"),
            "accepted");
}

TEST(DeepSpeedRulesTest, ValuesThatMustNotBecomeDefaults) {
  EXPECT_THAT(Error(R"({"optimizer": {"params": {"betas": []}}})"),
              HasSubstr("optimizer.params.betas (line 1, column 36): an "
                        "empty array"));
  EXPECT_THAT(Error(R"({"gradient_clipping": 1e-400})"),
              HasSubstr("1e-400 is too small for a double and would read as "
                        "0 (the value 0); write 0 if that is what you mean"));
  EXPECT_THAT(Error(R"({"fp16": {"enabled": true, "loss_scale": 1e-400}})"),
              HasSubstr("would read as 0 (0 selects dynamic loss scaling"));
  EXPECT_THAT(Error(R"({"fp16": {"enabled": true, "loss_scale": 1e308}})"),
              HasSubstr("every step overflow"));
  EXPECT_EQ(Error(R"({"fp16": {"enabled": true, "loss_scale": 65536}})"),
            "accepted");
  // A huge value is shown cut, with its length.
  const std::string e = Error(absl::StrCat(R"({"optimizer": {"type": ")",
                                           std::string(1000000, 'x'), "\"}}"));
  EXPECT_THAT(e, HasSubstr("(1000000 characters)"));
  EXPECT_LT(e.size(), 1000u);
}

TEST(DeepSpeedRulesTest, KeysThatChangeNothingSaySo) {
  ASSERT_OK_AND_ASSIGN(
      LoadedConfig c,
      Load(R"({"zero_optimization": {"contiguous_gradients": true,
               "reduce_scatter": true,
               "stage3_model_persistence_threshold": 1000}})"));
  for (const char* key : {"contiguous_gradients", "reduce_scatter",
                          "stage3_model_persistence_threshold"}) {
    EXPECT_THAT(c.notices,
                Contains(AllOf(HasSubstr(key), HasSubstr("changes nothing"))));
  }
}

// The optimizer state and the parameters on NVMe stay there, each with a
// directory to swap to.
TEST(DeepSpeedRulesTest, NvmeOptimizerAndParametersStay) {
  ASSERT_OK_AND_ASSIGN(
      LoadedConfig c,
      Load(R"({"zero_optimization": {"offload_optimizer": {"device": "nvme",
               "nvme_path": "/local_nvme"},
               "offload_param": {"device": "nvme",
               "nvme_path": "/local_nvme"}}})"));
  EXPECT_EQ(c.config.zero_optimization().offload_optimizer().device(), "nvme");
  EXPECT_EQ(c.config.zero_optimization().offload_param().device(), "nvme");
  EXPECT_THAT(c.warnings, IsEmpty());
  EXPECT_THAT(
      Load(R"({"zero_optimization": {"offload_optimizer": {"device": "cpu"},
               "offload_param": {"device": "nvme"}}})")
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("zero_optimization.offload_param.nvme_path")));
  EXPECT_THAT(
      Load(R"({"zero_optimization": {"offload_optimizer": {"device": "cpu"},
               "offload_param": {"device": "nvme", "nvme_path": "/x",
               "buffer_count": 1}}})")
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("zero_optimization.offload_param.buffer_count")));
  EXPECT_THAT(
      Load(
          R"({"zero_optimization": {"offload_optimizer": {"device": "nvme"}}})")
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("nvme_path: needed with device \"nvme\"")));
}

}  // namespace
}  // namespace config
}  // namespace zero3
