// Copyright 2026 The zero3 Authors.
//
// "auto" through the loader: each key the Hugging Face Trainer fills, from
// each source, with its notice; and each error.

#include "core/config/hf_auto.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
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
using ::zero3::testing::StatusIs;

absl::StatusOr<LoadedConfig> Load(const std::string& json,
                                  const AutoValues& values,
                                  int64_t world_size = 1) {
  LoadOptions options;
  options.world_size = world_size;
  options.auto_values = values;
  return LoadConfigText(json, ConfigFormat::kJson, options);
}

TEST(HfAutoTest, BatchSizesFromTheFlags) {
  AutoValues v;
  v.micro_batch = 4;
  v.accumulation = 2;
  ASSERT_OK_AND_ASSIGN(LoadedConfig loaded, Load(R"({"train_batch_size": "auto",
               "train_micro_batch_size_per_gpu": "auto",
               "gradient_accumulation_steps": "auto"})",
                                                 v, 3));
  EXPECT_EQ(loaded.config.train_micro_batch_size_per_gpu(), 4);
  EXPECT_EQ(loaded.config.gradient_accumulation_steps(), 2);
  EXPECT_EQ(loaded.config.train_batch_size(), 24);  // 4 x 2 x 3 ranks
  EXPECT_THAT(
      loaded.notices,
      Contains("train_micro_batch_size_per_gpu: \"auto\" resolved to 4 from "
               "--micro-batch"));
  EXPECT_THAT(loaded.notices,
              Contains(HasSubstr("train_batch_size: \"auto\" resolved to 24 = "
                                 "train_micro_batch_size_per_gpu 4 x "
                                 "gradient_accumulation_steps 2 x 3 ranks")));
}

TEST(HfAutoTest, BatchFromTheFileAndFlagsForAbsentKeys) {
  // The file's micro-batch and the Trainer's default accumulation of 1.
  ASSERT_OK_AND_ASSIGN(LoadedConfig file, Load(R"({"train_batch_size": "auto",
               "train_micro_batch_size_per_gpu": 3})",
                                               {}, 2));
  EXPECT_EQ(file.config.train_batch_size(), 6);
  // A flag sets a key the file leaves out.
  AutoValues v;
  v.accumulation = 5;
  ASSERT_OK_AND_ASSIGN(LoadedConfig set,
                       Load(R"({"train_micro_batch_size_per_gpu": 2})", v));
  EXPECT_EQ(set.config.gradient_accumulation_steps(), 5);
  EXPECT_THAT(set.notices,
              Contains("gradient_accumulation_steps: not given; set to 5 by "
                       "--accumulation"));
}

TEST(HfAutoTest, FlagAndADifferentNumberInTheFileAreAnError) {
  AutoValues v;
  v.micro_batch = 4;
  v.lr = 1e-4;
  EXPECT_THAT(
      Load(R"({"train_micro_batch_size_per_gpu": 8,
               "optimizer": {"params": {"lr": 2e-5}}})",
           v),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("train_micro_batch_size_per_gpu (line 1, "
                               "column 36): 8 here, but --micro-batch is 4: "
                               "write \"auto\" to take --micro-batch"),
                     HasSubstr("optimizer.params.lr (line 2, column 47): "
                               "2e-5 here, but --lr is 0.0001"))));
  // The same number is no contradiction.
  EXPECT_OK(Load(R"({"train_micro_batch_size_per_gpu": 4})", v).status());
}

TEST(HfAutoTest, LearningRateAndSchedule) {
  AutoValues v;
  v.lr = 2e-5;
  v.warmup_steps = 100;
  v.steps = 1000;
  ASSERT_OK_AND_ASSIGN(LoadedConfig loaded,
                       Load(R"({"optimizer": {"params": {"lr": "auto"}},
               "scheduler": {"type": "WarmupDecayLR",
                             "params": {"warmup_min_lr": "auto",
                                        "warmup_max_lr": "auto",
                                        "warmup_num_steps": "auto",
                                        "total_num_steps": "auto"}}})",
                            v));
  const SchedulerParams& p = loaded.config.scheduler().params();
  EXPECT_EQ(loaded.config.optimizer().params().lr(), 2e-5);
  EXPECT_EQ(p.warmup_min_lr(), 0);
  EXPECT_EQ(p.warmup_max_lr(), 2e-5);
  EXPECT_EQ(p.warmup_num_steps(), 100);
  EXPECT_EQ(p.total_num_steps(), 1000);
  const std::string notices = absl::StrJoin(loaded.notices, "\n");
  EXPECT_THAT(notices, HasSubstr("optimizer.params.lr: \"auto\" resolved to "
                                 "2e-5 from --lr"));
  EXPECT_THAT(notices, HasSubstr("scheduler.params.warmup_min_lr: \"auto\" "
                                 "resolved to 0.0, as the Hugging Face "
                                 "Trainer fills it"));
  EXPECT_THAT(notices, HasSubstr("scheduler.params.warmup_num_steps: \"auto\" "
                                 "resolved to 100 from --warmup-steps"));
  EXPECT_THAT(notices, HasSubstr("scheduler.params.total_num_steps: \"auto\" "
                                 "resolved to 1000 from --steps"));
  // --lr and --warmup-steps set absent keys; a numeric total_num_steps is
  // kept whatever --steps says (a run may start a longer schedule).
  ASSERT_OK_AND_ASSIGN(LoadedConfig absent,
                       Load(R"({"scheduler": {"type": "WarmupCosineLR",
                             "params": {"total_num_steps": 5000}}})",
                            v));
  EXPECT_EQ(absent.config.optimizer().params().lr(), 2e-5);
  EXPECT_EQ(absent.config.scheduler().params().warmup_num_steps(), 100);
  EXPECT_EQ(absent.config.scheduler().params().total_num_steps(), 5000);
}

TEST(HfAutoTest, WarmupStepsNeedASchedulerSection) {
  AutoValues v;
  v.warmup_steps = 10;
  EXPECT_THAT(Load("{}", v),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("scheduler: not given: --warmup-steps sets "
                                 "scheduler.params.warmup_num_steps")));
}

TEST(HfAutoTest, HiddenSizeKeys) {
  AutoValues v;
  v.hidden_size = 896;  // Qwen2.5-0.5B
  ASSERT_OK_AND_ASSIGN(LoadedConfig loaded, Load(R"({"zero_optimization": {
                 "reduce_bucket_size": "auto",
                 "prefetch_bucket_size": "auto",
                 "stage3_param_persistence_threshold": "auto"}})",
                                                 v));
  const ZeroOptimization& z = loaded.config.zero_optimization();
  EXPECT_EQ(z.reduce_bucket_size(), 802816);                // 896²
  EXPECT_EQ(z.stage3_prefetch_bucket_size(), 722534);       // 0.9 x 802816
  EXPECT_EQ(z.stage3_param_persistence_threshold(), 8960);  // 10 x 896
  EXPECT_THAT(loaded.notices,
              Contains(HasSubstr("zero_optimization.reduce_bucket_size: "
                                 "\"auto\" resolved to 802816 = "
                                 "hidden_size² for the model's hidden size "
                                 "896")));
}

TEST(HfAutoTest, TrainerDefaultsWhereZero3HasNoFlag) {
  ASSERT_OK_AND_ASSIGN(LoadedConfig loaded,
                       Load(R"({"gradient_clipping": "auto",
               "optimizer": {"params": {"betas": "auto", "eps": "auto",
                                        "weight_decay": "auto"}}})",
                            {}));
  const Config& c = loaded.config;
  EXPECT_EQ(c.gradient_clipping(), 1.0);
  EXPECT_EQ(c.optimizer().params().betas(0), 0.9);
  EXPECT_EQ(c.optimizer().params().betas(1), 0.999);
  EXPECT_EQ(c.optimizer().params().eps(), 1e-8);
  EXPECT_EQ(c.optimizer().params().weight_decay(), 0.0);
  EXPECT_THAT(loaded.notices,
              Contains("gradient_clipping: \"auto\" resolved to 1.0, the "
                       "Hugging Face Trainer's default max_grad_norm (zero3 "
                       "has no flag for it)"));
  int resolved = 0;
  for (const std::string& n : loaded.notices) {
    resolved += absl::StrContains(n, "\"auto\" resolved to") ? 1 : 0;
  }
  EXPECT_EQ(resolved, 4);
}

TEST(HfAutoTest, UnknownValuesAreErrorsNamingTheirFlag) {
  struct Case {
    const char* json;
    const char* error;
  } cases[] = {
      {R"({"train_micro_batch_size_per_gpu": "auto"})",
       "zero3 train fills it from --micro-batch, which is not given"},
      {R"({"gradient_accumulation_steps": "auto"})", "from --accumulation"},
      {R"({"train_batch_size": "auto"})", "from --micro-batch"},
      {R"({"bf16": {"enabled": "auto"}})",
       "fills it from its --bf16 flag, which zero3 does not have: give --set "
       "bf16.enabled=true or --set bf16.enabled=false"},
      {R"({"fp16": {"enabled": "auto"}})", "--set fp16.enabled=true"},
      {R"({"optimizer": {"params": {"lr": "auto"}}})", "from --lr"},
      {R"({"scheduler": {"type": "WarmupLR",
                         "params": {"warmup_max_lr": "auto"}}})",
       "from --lr"},
      {R"({"scheduler": {"type": "WarmupLR",
                         "params": {"warmup_num_steps": "auto"}}})",
       "from --warmup-steps"},
      {R"({"scheduler": {"type": "WarmupDecayLR",
                         "params": {"total_num_steps": "auto"}}})",
       "from --steps"},
      {R"({"zero_optimization": {"reduce_bucket_size": "auto"}})",
       "from the hidden size of its --model"},
      // Not a key the Trainer fills.
      {R"({"zero_optimization": {"sub_group_size": "auto"}})",
       "zero3 needs an integer here (the default is 1000000000)"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(Load(c.json, {}), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr(c.error)))
        << c.json;
  }
}

TEST(HfAutoTest, HintsOnlyForTheKeysTheTrainerFills) {
  EXPECT_THAT(AutoHint("optimizer.params.lr"), HasSubstr("--lr"));
  EXPECT_EQ(AutoHint("zero_optimization.sub_group_size"), "");
}

}  // namespace
}  // namespace config
}  // namespace zero3
