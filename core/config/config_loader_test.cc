// Copyright 2026 The zero3 Authors.

#include "core/config/config_loader.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/config/config.pb.h"
#include "core/config/modes.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace config {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::SizeIs;
using ::zero3::testing::IsOk;
using ::zero3::testing::StatusIs;

constexpr char kConfigDir[] = "testing/testdata/configs/";

absl::StatusOr<LoadedConfig> LoadJson(const std::string& json,
                                      int64_t world_size = 1) {
  LoadOptions options;
  options.world_size = world_size;
  return LoadConfigText(json, ConfigFormat::kJson, options);
}

// The error lines of a failed load.
std::vector<std::string> ErrorLines(const absl::Status& status) {
  return absl::StrSplit(std::string(status.message()), '\n');
}

std::string Notices(const LoadedConfig& loaded) {
  return absl::StrJoin(loaded.notices, "\n");
}

// Loading the printed configuration gives the same configuration.
void ExpectRoundTrip(const Config& config, int64_t world_size) {
  const std::string json = ConfigToJson(config);
  LoadOptions options;
  options.world_size = world_size;
  absl::StatusOr<LoadedConfig> again =
      LoadConfigText(json, ConfigFormat::kJson, options);
  ASSERT_THAT(again, IsOk()) << json;
  EXPECT_TRUE(MessageDifferencer::Equals(config, again->config))
      << "printed:\n"
      << json << "\nreloaded:\n"
      << ConfigToJson(again->config);
  EXPECT_EQ(ConfigToJson(again->config), json);
}

TEST(ConfigLoaderTest, DefaultConfig) {
  ASSERT_OK_AND_ASSIGN(LoadedConfig loaded, DefaultConfig());
  EXPECT_EQ(ConfigToJson(loaded.config),
            R"({
  "train_batch_size": 1,
  "train_micro_batch_size_per_gpu": 1,
  "gradient_accumulation_steps": 1,
  "gradient_clipping": 1.0,
  "bf16": {
    "enabled": false,
    "bf16_master_weights_and_grads": false,
    "bf16_optimizer_states": false
  },
  "fp16": {
    "enabled": false,
    "loss_scale": 0.0,
    "initial_scale_power": 16,
    "loss_scale_window": 1000,
    "hysteresis": 2,
    "consecutive_hysteresis": false,
    "min_loss_scale": 1
  },
  "optimizer": {
    "type": "AdamW",
    "params": {
      "lr": 0.001,
      "betas": [0.9, 0.999],
      "eps": 1e-8,
      "weight_decay": 0.0,
      "adam_w_mode": true,
      "bias_correction": true
    }
  },
  "zero_optimization": {
    "stage": 3,
    "contiguous_gradients": true,
    "reduce_scatter": true,
    "reduce_bucket_size": 500000000,
    "overlap_comm": true,
    "sub_group_size": 1000000000,
    "stage3_prefetch_bucket_size": 50000000,
    "stage3_param_persistence_threshold": 100000,
    "stage3_model_persistence_threshold": 9223372036854775807,
    "stage3_max_live_parameters": 1000000000,
    "stage3_max_reuse_distance": 1000000000,
    "stage3_gather_16bit_weights_on_model_save": false,
    "offload_optimizer": {
      "device": "none",
      "buffer_count": 4,
      "pin_memory": true,
      "pipeline_read": false,
      "pipeline_write": false,
      "fast_init": false,
      "ratio": 1.0
    },
    "offload_param": {
      "device": "none",
      "buffer_count": 5,
      "buffer_size": 100000000,
      "max_in_cpu": 1000000000,
      "pin_memory": true
    }
  },
  "zero3": {
    "grad_offload": "async",
    "optimizer_threads": 0,
    "weight_decay_exclude_bias_and_norm": false,
    "auto_offload_ratio": false,
    "checkpoint_write": "async",
    "checkpoint_on_failure": "stop",
    "max_pinned_bytes": 0,
    "pinned_fallback": "error",
    "grad_offload_copy": "bucketed",
    "activation_checkpoint_interval": 0,
    "activation_checkpoint_mlp_only": false,
    "lm_head_chunk_tokens": 0,
    "host_step_overlap": "none",
    "host_work_per_grad_us": 0.0,
    "collective_timeout_seconds": 1800,
    "offloaded_step": "host",
    "offloaded_step_buffers": 16
  },
  "steps_per_print": 1,
  "csv_monitor": {
    "enabled": false,
    "output_path": "",
    "job_name": "DeepSpeedJobName"
  },
  "tensorboard": {
    "enabled": false,
    "output_path": "",
    "job_name": "DeepSpeedJobName"
  }
})");
  // Every field is set explicitly (nvme_path has no default).
  const Config& c = loaded.config;
  EXPECT_TRUE(c.has_gradient_clipping());
  EXPECT_TRUE(c.zero_optimization().offload_optimizer().has_pin_memory());
  EXPECT_FALSE(c.zero_optimization().offload_optimizer().has_nvme_path());
  EXPECT_THAT(loaded.notices,
              Contains(HasSubstr("zero_optimization.stage: not given; zero3 "
                                 "runs ZeRO stage 3 (DeepSpeed's default")));
  ExpectRoundTrip(c, 1);
  // An empty JSON object is the same.
  ASSERT_OK_AND_ASSIGN(LoadedConfig empty, LoadJson("{}"));
  EXPECT_TRUE(MessageDifferencer::Equals(empty.config, c));
}

// A valid configuration and what must hold after loading it.
struct ValidCase {
  const char* name;
  const char* json;
  int64_t world_size;
  std::function<void(const Config&)> check;
  std::vector<std::string> notices;  // substrings, each in some notice
};

TEST(ConfigLoaderTest, ValidConfigs) {
  const ValidCase cases[] = {
      {"float-written integers",
       R"({"train_batch_size": 8.0, "zero_optimization": {
             "reduce_bucket_size": 5e8, "sub_group_size": 1E9,
             "stage3_prefetch_bucket_size": 5.0e7, "stage": 3.0,
             "stage3_param_persistence_threshold": 1e5}})",
       1,
       [](const Config& c) {
         EXPECT_EQ(c.train_batch_size(), 8);
         EXPECT_EQ(c.zero_optimization().reduce_bucket_size(), 500000000);
         EXPECT_EQ(c.zero_optimization().sub_group_size(), 1000000000);
         EXPECT_EQ(c.zero_optimization().stage3_prefetch_bucket_size(),
                   50000000);
         EXPECT_EQ(c.zero_optimization().stage(), 3);
       },
       {}},
      {"integers exact beyond 2^53",
       R"({"zero_optimization": {
             "stage3_model_persistence_threshold": 9007199254740993}})",
       1,
       [](const Config& c) {
         EXPECT_EQ(c.zero_optimization().stage3_model_persistence_threshold(),
                   9007199254740993);
       },
       {}},
      {"batch: micro and accumulation give the global batch",
       R"({"train_micro_batch_size_per_gpu": 4,
           "gradient_accumulation_steps": 2})",
       8,
       [](const Config& c) {
         EXPECT_EQ(c.train_batch_size(), 64);
         EXPECT_EQ(c.train_micro_batch_size_per_gpu(), 4);
         EXPECT_EQ(c.gradient_accumulation_steps(), 2);
       },
       {}},
      {"batch: global and micro give accumulation",
       R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4})",
       8,
       [](const Config& c) { EXPECT_EQ(c.gradient_accumulation_steps(), 2); },
       {}},
      {"batch: global and accumulation give micro",
       R"({"train_batch_size": 64, "gradient_accumulation_steps": 4})",
       8,
       [](const Config& c) {
         EXPECT_EQ(c.train_micro_batch_size_per_gpu(), 2);
       },
       {}},
      {"batch: only global means accumulation 1",
       R"({"train_batch_size": 32})",
       4,
       [](const Config& c) {
         EXPECT_EQ(c.train_micro_batch_size_per_gpu(), 8);
         EXPECT_EQ(c.gradient_accumulation_steps(), 1);
       },
       {}},
      {"batch: only micro means accumulation 1",
       R"({"train_micro_batch_size_per_gpu": 3})",
       4,
       [](const Config& c) {
         EXPECT_EQ(c.train_batch_size(), 12);
         EXPECT_EQ(c.gradient_accumulation_steps(), 1);
       },
       {}},
      {"batch: none given",
       "{}",
       4,
       [](const Config& c) {
         EXPECT_EQ(c.train_batch_size(), 4);
         EXPECT_EQ(c.train_micro_batch_size_per_gpu(), 1);
         EXPECT_EQ(c.gradient_accumulation_steps(), 1);
       },
       {"no batch size given"}},
      {"batch: all three consistent",
       R"({"train_batch_size": 48, "train_micro_batch_size_per_gpu": 2,
           "gradient_accumulation_steps": 3})",
       8,
       [](const Config& c) { EXPECT_EQ(c.train_batch_size(), 48); },
       {}},
      {"batch keys may be null",
       R"({"train_batch_size": null, "train_micro_batch_size_per_gpu": 2})",
       1,
       [](const Config& c) { EXPECT_EQ(c.train_batch_size(), 2); },
       {}},
      {"optimizer type is case-insensitive and printed canonically",
       R"({"optimizer": {"type": "adamw"}})",
       1,
       [](const Config& c) { EXPECT_EQ(c.optimizer().type(), "AdamW"); },
       {}},
      {"plain Adam keeps adam_w_mode true by default",
       R"({"optimizer": {"type": "ADAM", "params": {"lr": 3e-4}}})",
       1,
       [](const Config& c) {
         EXPECT_EQ(c.optimizer().type(), "Adam");
         EXPECT_TRUE(c.optimizer().params().adam_w_mode());
         EXPECT_DOUBLE_EQ(c.optimizer().params().lr(), 3e-4);
       },
       {}},
      {"Adam with adam_w_mode false is L2 Adam",
       R"({"optimizer": {"type": "Adam", "params": {"adam_w_mode": false}}})",
       1,
       [](const Config& c) {
         EXPECT_FALSE(c.optimizer().params().adam_w_mode());
       },
       {}},
      {"AdamW ignores adam_w_mode false, with a notice",
       R"({"optimizer": {"type": "AdamW", "params": {"adam_w_mode": false}}})",
       1,
       [](const Config& c) {
         EXPECT_TRUE(c.optimizer().params().adam_w_mode());
       },
       {"optimizer.params.adam_w_mode: false has no effect with type "
        "\"AdamW\""}},
      {"stage3 aliases",
       R"({"zero_optimization": {"prefetch_bucket_size": 7,
           "param_persistence_threshold": 8, "max_live_parameters": 9,
           "max_reuse_distance": 10, "model_persistence_threshold": 11,
           "gather_16bit_weights_on_model_save": false}})",
       1,
       [](const Config& c) {
         const ZeroOptimization& z = c.zero_optimization();
         EXPECT_EQ(z.stage3_prefetch_bucket_size(), 7);
         EXPECT_EQ(z.stage3_param_persistence_threshold(), 8);
         EXPECT_EQ(z.stage3_max_live_parameters(), 9);
         EXPECT_EQ(z.stage3_max_reuse_distance(), 10);
         EXPECT_EQ(z.stage3_model_persistence_threshold(), 11);
       },
       {"zero_optimization.prefetch_bucket_size: DeepSpeed's other name for "
        "zero_optimization.stage3_prefetch_bucket_size",
        "zero_optimization.max_reuse_distance: DeepSpeed's other name"}},
      {"alias given with the same value as its canonical key",
       R"({"zero_optimization": {"prefetch_bucket_size": 7,
           "stage3_prefetch_bucket_size": 7}})",
       1,
       [](const Config& c) {
         EXPECT_EQ(c.zero_optimization().stage3_prefetch_bucket_size(), 7);
       },
       {"given with the same value"}},
      {"bfloat16 is bf16",
       R"({"bfloat16": {"enabled": true}})",
       1,
       [](const Config& c) { EXPECT_TRUE(c.bf16().enabled()); },
       {"bfloat16: DeepSpeed's other name for bf16"}},
      {"cpu_offload true",
       R"({"zero_optimization": {"cpu_offload": true}})",
       1,
       [](const Config& c) {
         EXPECT_EQ(c.zero_optimization().offload_optimizer().device(), "cpu");
         EXPECT_TRUE(c.zero_optimization().offload_optimizer().pin_memory());
       },
       {"zero_optimization.cpu_offload: deprecated; read as "
        "zero_optimization.offload_optimizer.device = \"cpu\""}},
      {"cpu_offload false",
       R"({"zero_optimization": {"cpu_offload": false}})",
       1,
       [](const Config& c) {
         EXPECT_EQ(c.zero_optimization().offload_optimizer().device(), "none");
       },
       {"zero_optimization.cpu_offload: deprecated"}},
      {"cpu_offload_param and the plural cpu_offload_params",
       R"({"zero_optimization": {"cpu_offload_param": true,
           "cpu_offload_params": true}})",
       1,
       [](const Config& c) {
         EXPECT_EQ(c.zero_optimization().offload_param().device(), "cpu");
       },
       {"zero_optimization.cpu_offload_param: deprecated; read as "
        "zero_optimization.offload_param.device = \"cpu\"",
        "zero_optimization.cpu_offload_params: deprecated, and repeats"}},
      {"legacy opt-out: cpu_offload_use_pin_memory false unpins",
       R"({"zero_optimization": {"stage": 3, "cpu_offload": true,
           "cpu_offload_use_pin_memory": false}})",
       1,
       [](const Config& c) {
         EXPECT_EQ(c.zero_optimization().offload_optimizer().device(), "cpu");
         EXPECT_FALSE(c.zero_optimization().offload_optimizer().pin_memory());
         // Parameter offload is off; its flag keeps the default.
         EXPECT_EQ(c.zero_optimization().offload_param().device(), "none");
       },
       {"zero_optimization.cpu_offload_use_pin_memory: deprecated; read as "
        "zero_optimization.offload_optimizer.pin_memory = false",
        "DeepSpeed ignores this key"}},
      {"legacy opt-out applies to both offload sections",
       R"({"zero_optimization": {"cpu_offload": true, "cpu_offload_param": true,
           "cpu_offload_use_pin_memory": false}})",
       1,
       [](const Config& c) {
         EXPECT_FALSE(c.zero_optimization().offload_optimizer().pin_memory());
         EXPECT_FALSE(c.zero_optimization().offload_param().pin_memory());
       },
       {"read as zero_optimization.offload_param.pin_memory = false"}},
      {"super_offload is read, and runs the host step's rest in the forward",
       R"({"zero_optimization": {"offload_optimizer": {"device": "cpu",
           "super_offload": true}}})",
       1,
       [](const Config& c) {
         EXPECT_TRUE(c.zero_optimization().offload_optimizer().super_offload());
         EXPECT_EQ(c.zero3().host_step_overlap(), "forward");
       },
       {}},
      {"super_offload keeps a host_step_overlap given",
       R"({"zero_optimization": {"offload_optimizer": {"device": "cpu",
           "super_offload": true}}, "zero3": {"host_step_overlap": "none"}})",
       1,
       [](const Config& c) {
         EXPECT_EQ(c.zero3().host_step_overlap(), "none");
       },
       {}},
      {"super_offload where the speculative step does not apply",
       R"({"zero_optimization": {"offload_optimizer": {"device": "cpu",
           "super_offload": true}, "offload_param": {"device": "cpu"}}})",
       1,
       [](const Config& c) {
         EXPECT_TRUE(c.zero_optimization().offload_optimizer().super_offload());
         // Where the host step cannot move, the default stays.
         EXPECT_EQ(c.zero3().host_step_overlap(), "none");
       },
       {"zero_optimization.offload_optimizer.super_offload: the speculative "
        "host step stays off: offload_param"}},
      {"host_step_overlap is read",
       R"({"zero_optimization": {"offload_optimizer": {"device": "cpu"}},
           "zero3": {"host_step_overlap": "forward"}})",
       1,
       [](const Config& c) {
         EXPECT_EQ(c.zero3().host_step_overlap(), "forward");
       },
       {}},
      {"host_step_overlap delayed replaces super_offload",
       R"({"zero_optimization": {"offload_optimizer": {"device": "cpu",
           "super_offload": true}},
           "zero3": {"host_step_overlap": "delayed"}})",
       1,
       [](const Config& c) {
         EXPECT_EQ(c.zero3().host_step_overlap(), "delayed");
       },
       {"zero_optimization.offload_optimizer.super_offload: the speculative "
        "host step stays off: zero3.host_step_overlap \"delayed\" runs the "
        "host step during the next step instead"}},
      {"host_step_overlap delayed where the host step cannot move",
       R"({"zero3": {"host_step_overlap": "delayed"}})",
       1,
       [](const Config& c) {
         EXPECT_EQ(c.zero3().host_step_overlap(), "delayed");
       },
       {"zero3.host_step_overlap: the host step stays at the end of the "
        "step: the optimizer is not offloaded"}},
      {"host_step_overlap where the host step cannot move",
       R"({"zero3": {"host_step_overlap": "forward"}})",
       1,
       [](const Config& c) {
         EXPECT_EQ(c.zero3().host_step_overlap(), "forward");
       },
       {"zero3.host_step_overlap: the host step stays at the end of the "
        "step: the optimizer is not offloaded"}},
      {"offloaded_step is read",
       R"({"zero_optimization": {"offload_optimizer": {"device": "cpu"}},
           "zero3": {"offloaded_step": "auto"}})",
       1,
       [](const Config& c) {
         EXPECT_EQ(c.zero3().offloaded_step(), "auto");
         EXPECT_EQ(ModesOf(c).offloaded_step, OffloadedStep::kAuto);
         EXPECT_EQ(OffloadedStepStaysOnHost(c), nullptr);
       },
       {}},
      {"offloaded_step device without offload",
       R"({"zero3": {"offloaded_step": "device"}})",
       1,
       [](const Config& c) { EXPECT_NE(OffloadedStepStaysOnHost(c), nullptr); },
       {"zero3.offloaded_step: the step stays on the host: the optimizer is "
        "not offloaded"}},
      {"offloaded_step device with bf16 states",
       R"({"bf16": {"enabled": true, "bf16_master_weights_and_grads": true,
           "bf16_optimizer_states": true},
           "zero_optimization": {"offload_optimizer": {"device": "cpu"}},
           "zero3": {"offloaded_step": "device"}})",
       1,
       [](const Config& c) { EXPECT_EQ(OffloadedStepStaysOnHost(c), nullptr); },
       {}},
      {"offloaded_step device with offload_param",
       R"({"zero_optimization": {"offload_optimizer": {"device": "cpu"},
           "offload_param": {"device": "cpu"}},
           "zero3": {"offloaded_step": "device"}})",
       1,
       [](const Config& c) { EXPECT_NE(OffloadedStepStaysOnHost(c), nullptr); },
       {"zero3.offloaded_step: the step stays on the host: offload_param"}},
      {"legacy opt-out with the new-style device key",
       R"({"zero_optimization": {"offload_optimizer": {"device": "cpu"},
           "cpu_offload_use_pin_memory": false}})",
       1,
       [](const Config& c) {
         EXPECT_FALSE(c.zero_optimization().offload_optimizer().pin_memory());
       },
       {}},
      {"cpu_offload_use_pin_memory without offload has no effect",
       R"({"zero_optimization": {"cpu_offload_use_pin_memory": false}})",
       1,
       [](const Config& c) {
         EXPECT_TRUE(c.zero_optimization().offload_optimizer().pin_memory());
       },
       {"no offload section is enabled"}},
      {"stage3_gather_fp16_weights_on_model_save",
       R"({"zero_optimization": {
           "stage3_gather_fp16_weights_on_model_save": true}})",
       1,
       [](const Config& c) {
         EXPECT_TRUE(
             c.zero_optimization().stage3_gather_16bit_weights_on_model_save());
       },
       {"read as "
        "zero_optimization.stage3_gather_16bit_weights_on_model_save = "
        "true"}},
      {"unimplemented keys are named in notices",
       R"({"steps_per_print": 10, "wall_clock_breakdown": false,
           "activation_checkpointing": {}, "flops_profiler": {},
           "wandb": {}, "communication_data_type": "fp32",
           "zero_allow_untested_optimizer": true,
           "zero_optimization": {"allgather_bucket_size": 5e8,
             "allgather_partitions": true, "round_robin_gradients": false,
             "zero_quantized_weights": false},
           "bf16": {"check_grad_overflow": true},
           "optimizer": {"params": {"torch_adam": true, "amsgrad": false}}})",
       1,
       [](const Config&) {},
       {"wall_clock_breakdown: ", "activation_checkpointing: ",
        "flops_profiler: ", "wandb: this monitoring backend",
        "communication_data_type: ", "zero_allow_untested_optimizer: ",
        "zero_optimization.allgather_bucket_size: used by ZeRO stages 1 and "
        "2 only",
        "zero_optimization.allgather_partitions: ",
        "zero_optimization.round_robin_gradients: ",
        "zero_optimization.zero_quantized_weights: ZeRO++",
        "bf16.check_grad_overflow: ", "optimizer.params.torch_adam: ",
        "optimizer.params.amsgrad: false is what zero3 does"}},
      {"values DeepSpeed takes as something else",
       R"({"gradient_clipping": -1,
           "optimizer": {"type": "AdamW",
                         "params": {"lr": 1e-3, "weight_decay": -0.01}},
           "activation_checkpointing": {"number_checkpoints": null},
           "scheduler": {"type": "WarmupLR",
                         "params": {"warmup_num_steps": 0}}})",
       1,
       [](const Config& c) {
         EXPECT_EQ(c.gradient_clipping(), -1);
         EXPECT_EQ(c.optimizer().params().weight_decay(), -0.01);
         EXPECT_FALSE(c.activation_checkpointing().has_number_checkpoints());
         EXPECT_EQ(c.scheduler().params().warmup_num_steps(), 0);
       },
       {"gradient_clipping: -1 turns clipping off",
        "optimizer.params.weight_decay: -0.01 means no weight decay",
        "scheduler.params.warmup_num_steps: 0 acts as 2"}},
      {"the optimizer state and the parameters on nvme",
       R"({"zero_optimization": {"offload_optimizer": {"device": "nvme",
           "nvme_path": "/local_nvme", "buffer_count": 8,
           "pipeline_read": true},
           "offload_param": {"device": "nvme", "nvme_path": "/local_nvme",
           "buffer_size": 1e8, "max_in_cpu": 1e9}}})",
       1,
       [](const Config& c) {
         EXPECT_EQ(c.zero_optimization().offload_optimizer().device(), "nvme");
         EXPECT_EQ(c.zero_optimization().offload_optimizer().nvme_path(),
                   "/local_nvme");
         EXPECT_EQ(c.zero_optimization().offload_param().device(), "nvme");
         EXPECT_EQ(ModesOf(c).offload_optimizer, OffloadDevice::kNvme);
         EXPECT_EQ(ModesOf(c).offload_param, OffloadDevice::kNvme);
         EXPECT_NE(PlanHostStep(HostStepAskOf(ModesOf(c))).cannot_move,
                   nullptr);
       },
       {"zero_optimization.offload_optimizer.pipeline_read: changes nothing",
        "zero_optimization.offload_param.max_in_cpu: changes nothing"}},
      {"parameter nvme keys without nvme",
       R"({"zero_optimization": {"offload_optimizer": {"device": "cpu"},
           "offload_param": {"device": "cpu", "buffer_size": 1e8}}})",
       1,
       [](const Config& c) {
         EXPECT_EQ(c.zero_optimization().offload_param().device(), "cpu");
       },
       {"zero_optimization.offload_param.buffer_size: used by parameters on "
        "NVMe (device \"nvme\") only"}},
      {"nvme keys without nvme",
       R"({"zero_optimization": {"offload_optimizer": {"device": "cpu",
           "nvme_path": "/local_nvme", "buffer_count": 8}}})",
       1,
       [](const Config& c) {
         EXPECT_EQ(c.zero_optimization().offload_optimizer().device(), "cpu");
       },
       {"zero_optimization.offload_optimizer.nvme_path: used by NVMe offload "
        "(device \"nvme\") only",
        "zero_optimization.offload_optimizer.buffer_count: used by NVMe"}},
      {"aio, with DeepSpeed's documented thread_count",
       R"({"zero_optimization": {"offload_optimizer": {"device": "nvme",
           "nvme_path": "/local_nvme"}},
           "aio": {"block_size": 262144, "queue_depth": 32,
                   "thread_count": 2, "single_submit": false,
                   "use_gds": true}})",
       1,
       [](const Config& c) {
         EXPECT_EQ(c.aio().block_size(), 262144);
         EXPECT_EQ(c.aio().queue_depth(), 32);
         EXPECT_EQ(c.aio().intra_op_parallelism(), 2);
         EXPECT_FALSE(c.aio().has_overlap_events());
       },
       {"aio.thread_count: read as aio.intra_op_parallelism",
        "aio.intra_op_parallelism: changes nothing",
        "aio.single_submit: changes nothing", "aio.use_gds: GPUDirect"}},
      {"aio without nvme",
       R"({"aio": {"queue_depth": 16}})",
       1,
       [](const Config& c) { EXPECT_EQ(c.aio().queue_depth(), 16); },
       {"aio: used by NVMe offload only"}},
      {"partial offload ratio",
       R"({"zero_optimization": {"offload_optimizer": {"device": "cpu",
           "ratio": 0.3}}})",
       1,
       [](const Config& c) {
         EXPECT_EQ(c.zero_optimization().offload_optimizer().ratio(), 0.3);
         EXPECT_FALSE(c.zero3().auto_offload_ratio());
       },
       {}},
      {"offload ratio auto",
       R"({"zero_optimization": {"offload_optimizer": {"device": "cpu",
           "ratio": "auto"}}})",
       1,
       [](const Config& c) {
         EXPECT_EQ(c.zero_optimization().offload_optimizer().ratio(), 1.0);
         EXPECT_TRUE(c.zero3().auto_offload_ratio());
       },
       {"zero_optimization.offload_optimizer.ratio: \"auto\" resolved to "
        "1.0 here and chosen at start-up"}},
      {"async offload into pageable memory",
       R"({"zero_optimization": {"offload_optimizer": {"device": "cpu",
           "pin_memory": false}}})",
       1,
       [](const Config& c) { EXPECT_EQ(c.zero3().grad_offload(), "async"); },
       {"zero3.grad_offload: \"async\" with offload_optimizer.pin_memory "
        "false"}},
      {"our own section",
       R"({"zero3": {"grad_offload": "blocking", "optimizer_threads": 8,
           "max_pinned_bytes": 1073741824, "pinned_fallback": "pageable"}})",
       1,
       [](const Config& c) {
         EXPECT_EQ(c.zero3().grad_offload(), "blocking");
         EXPECT_EQ(c.zero3().optimizer_threads(), 8);
         EXPECT_EQ(c.zero3().max_pinned_bytes(), int64_t{1} << 30);
         EXPECT_EQ(c.zero3().pinned_fallback(), "pageable");
       },
       {}},
      {"null sections and overlap_comm mean absent",
       R"({"zero_optimization": {"offload_optimizer": null,
           "overlap_comm": null}, "fp16": null})",
       1,
       [](const Config& c) {
         EXPECT_TRUE(c.zero_optimization().overlap_comm());
         EXPECT_EQ(c.zero_optimization().offload_optimizer().device(), "none");
       },
       {}},
      {"static fp16 loss scale does not check dynamic-only keys",
       R"({"fp16": {"enabled": true, "loss_scale": 128,
           "loss_scale_window": 0, "min_loss_scale": 0}})",
       1,
       [](const Config& c) { EXPECT_EQ(c.fp16().loss_scale(), 128); },
       {}},
      {"comments and trailing commas, as hjson allows",
       "{\n  // micro-batch\n  \"train_micro_batch_size_per_gpu\": 2,\n}\n",
       1,
       [](const Config& c) {
         EXPECT_EQ(c.train_micro_batch_size_per_gpu(), 2);
       },
       {}},
  };
  for (const ValidCase& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<LoadedConfig> loaded = LoadJson(c.json, c.world_size);
    ASSERT_THAT(loaded, IsOk());
    c.check(loaded->config);
    for (const std::string& notice : c.notices) {
      EXPECT_THAT(loaded->notices, Contains(HasSubstr(notice)))
          << Notices(*loaded);
    }
    EXPECT_THAT(ValidateConfig(loaded->config, c.world_size), IsOk());
    ExpectRoundTrip(loaded->config, c.world_size);
  }
}

// An invalid configuration and the errors it must produce.
struct ErrorCase {
  const char* name;
  const char* json;
  int64_t world_size;
  // Substrings; each must be in its own error line, in this order.
  std::vector<std::string> errors;
};

TEST(ConfigLoaderTest, InvalidConfigs) {
  const ErrorCase cases[] = {
      // Numbers the DeepSpeed way.
      {"fraction for an integer",
       R"({"zero_optimization": {"reduce_bucket_size": 1.5}})",
       1,
       {"zero_optimization.reduce_bucket_size (line 1, column 46): expected "
        "an integer, found 1.5"}},
      {"integer beyond int64",
       R"({"train_batch_size": 1e19})",
       1,
       {"train_batch_size (line 1, column 22): 1e19 is out of range for an "
        "integer"}},
      {"integer beyond int32",
       R"({"fp16": {"hysteresis": 3e9}})",
       1,
       {"fp16.hysteresis (line 1, column 25): 3e9 is out of range for this "
        "key"}},
      {"quoted number",
       R"({"zero_optimization": {"sub_group_size": "1e9"}})",
       1,
       {"zero_optimization.sub_group_size (line 1, column 42): expected an "
        "integer, found the string \"1e9\"; write the number without "
        "quotes"}},
      // Wrong types.
      {"bool for a number",
       R"({"gradient_clipping": true})",
       1,
       {"gradient_clipping (line 1, column 23): expected a number, found "
        "true"}},
      {"string for a bool",
       R"({"zero_optimization": {"offload_optimizer": {"pin_memory": "nope"}}})",
       1,
       {"zero_optimization.offload_optimizer.pin_memory (line 1, column 60): "
        "expected true or false, found the string \"nope\""}},
      {"quoted bool outside DeepSpeed's pydantic sections",
       R"({"optimizer": {"params": {"bias_correction": "true"}}})",
       1,
       {"optimizer.params.bias_correction (line 1, column 46): expected true "
        "or false, found the "
        "string \"true\"; write true without quotes"}},
      {"number for a section",
       R"({"zero_optimization": 3})",
       1,
       {"zero_optimization (line 1, column 23): expected an object {...}, "
        "found 3"}},
      {"number for a string",
       R"({"optimizer": {"type": 1}})",
       1,
       {"optimizer.type (line 1, column 24): expected a string, found 1"}},
      {"betas not an array",
       R"({"optimizer": {"params": {"betas": 0.9}}})",
       1,
       {"optimizer.params.betas (line 1, column 36): expected an array of two "
        "numbers"}},
      {"betas element not a number",
       R"({"optimizer": {"params": {"betas": [0.9, "x"]}}})",
       1,
       {"optimizer.params.betas[1] (line 1, column 42): expected a number"}},
      {"null for a scalar",
       R"({"gradient_clipping": null})",
       1,
       {"gradient_clipping (line 1, column 23): null is not a value for this "
        "key; remove the key to use the default (1.0)"}},
      {"top level not an object",
       "[1, 2]",
       1,
       {"the configuration must be a JSON object ({...}), found an array"}},
      // Out of range.
      {"negative sizes",
       R"({"zero_optimization": {"reduce_bucket_size": -1,
           "stage3_prefetch_bucket_size": -5, "sub_group_size": -2,
           "offload_param": {"buffer_size": -3}}})",
       1,
       {"zero_optimization.reduce_bucket_size (line 1, column 46): must be "
        ">= 0, found -1",
        "zero_optimization.sub_group_size (line 2, column 65): must be >= 0",
        "zero_optimization.stage3_prefetch_bucket_size (line 2, column 43): "
        "must be >= 0, found -5",
        "zero_optimization.offload_param.buffer_size (line 3, column 45): "
        "must be >= 0"}},
      {"betas outside [0, 1)",
       R"({"optimizer": {"params": {"betas": [1.0, -0.1]}}})",
       1,
       {"optimizer.params.betas (line 1, column 36): beta1 must be in [0, 1), "
        "found 1.0",
        "optimizer.params.betas (line 1, column 36): beta2 must be in [0, 1), "
        "found -0.1"}},
      {"three betas",
       R"({"optimizer": {"params": {"betas": [0.9, 0.9, 0.9]}}})",
       1,
       {"optimizer.params.betas (line 1, column 36): needs exactly two"}},
      {"eps zero and negative lr",
       R"({"optimizer": {"params": {"eps": 0, "lr": -1e-3}}})",
       1,
       {"optimizer.params.lr (line 1, column 43): must be >= 0, found -0.001",
        "optimizer.params.eps (line 1, column 34): must be > 0"}},
      {"ratio outside [0, 1]",
       R"({"zero_optimization": {"offload_optimizer": {"ratio": 1.5}}})",
       1,
       {"zero_optimization.offload_optimizer.ratio (line 1, column 55): must "
        "be in [0, 1], found 1.5"}},
      {"hysteresis 0 never lowers the scale",
       R"({"fp16": {"enabled": true, "hysteresis": 0}})",
       1,
       {"fp16.hysteresis (line 1, column 42): must be >= 1 with dynamic loss "
        "scaling, found 0 (DeepSpeed takes 0 but then never lowers the scale "
        "after an overflow"}},
      {"dynamic loss scaling needs a window",
       R"({"fp16": {"enabled": true, "loss_scale_window": 0}})",
       1,
       {"fp16.loss_scale_window (line 1, column 49): must be >= 1 with "
        "dynamic loss scaling, found 0"}},
      {"initial scale power",
       R"({"fp16": {"initial_scale_power": 200}})",
       1,
       {"fp16.initial_scale_power (line 1, column 34): must be in [0, 127]"}},
      {"negative optimizer threads",
       R"({"zero3": {"optimizer_threads": -1}})",
       1,
       {"zero3.optimizer_threads (line 1, column 33): must be >= 0"}},
      {"bad grad_offload",
       R"({"zero3": {"grad_offload": "asynch"}})",
       1,
       {"zero3.grad_offload (line 1, column 28): must be \"async\" or "
        "\"blocking\", found \"asynch\"; did you mean \"async\"?"}},
      {"bad host_step_overlap",
       R"({"zero3": {"host_step_overlap": "forwards"}})",
       1,
       {"zero3.host_step_overlap (line 1, column 33): must be \"none\", "
        "\"forward\" or \"delayed\", found \"forwards\"; did you mean "
        "\"forward\"?"}},
      {"bad checkpoint_on_failure",
       R"({"zero3": {"checkpoint_on_failure": "warn"}})",
       1,
       {"zero3.checkpoint_on_failure (line 1, column 37): must be \"stop\" "
        "or \"continue\", found \"warn\""}},
      {"negative pinned budget",
       R"({"zero3": {"max_pinned_bytes": -1}})",
       1,
       {"zero3.max_pinned_bytes (line 1, column 32): must be >= 0"}},
      {"bad pinned fallback",
       R"({"zero3": {"pinned_fallback": "pagable"}})",
       1,
       {"zero3.pinned_fallback (line 1, column 31): must be \"error\" or "
        "\"pageable\", found \"pagable\"; did you mean \"pageable\"?"}},
      {"bad device",
       R"({"zero_optimization": {"offload_optimizer": {"device": "CPU"}}})",
       1,
       {"zero_optimization.offload_optimizer.device (line 1, column 56): "
        "must be \"none\", \"cpu\" or \"nvme\", found \"CPU\"; did you mean "
        "\"cpu\"?"}},
      // Stage.
      {"stage 2",
       R"({"zero_optimization": {"stage": 2}})",
       1,
       {"zero_optimization.stage (line 1, column 33): zero3 implements ZeRO "
        "stage 3 only, found 2; set \"stage\": 3 or remove the key"}},
      {"stage 0",
       R"({"zero_optimization": {"stage": 0}})",
       1,
       {"zero_optimization.stage (line 1, column 33): zero3 implements ZeRO "
        "stage 3 only, found 0"}},
      // Precision.
      {"bf16 and fp16",
       R"({"bf16": {"enabled": true},
           "fp16": {"enabled": true}})",
       1,
       {"fp16.enabled (line 2, column 32): bf16.enabled and fp16.enabled are "
        "both true"}},
      // Batch consistency, with every number shown.
      {"batch inconsistent",
       R"({"train_batch_size": 32, "train_micro_batch_size_per_gpu": 3,
           "gradient_accumulation_steps": 5})",
       2,
       {"train_batch_size (line 1, column 22): batch sizes are inconsistent: "
        "train_batch_size 32 must equal train_micro_batch_size_per_gpu 3 x "
        "gradient_accumulation_steps 5 x data-parallel size 2 = 30"}},
      {"batch not divisible",
       R"({"train_batch_size": 10, "train_micro_batch_size_per_gpu": 4})",
       1,
       {"train_batch_size 10 must equal train_micro_batch_size_per_gpu 4 x "
        "gradient_accumulation_steps 2 (derived) x data-parallel size 1 = "
        "8"}},
      {"global batch smaller than the world",
       R"({"train_batch_size": 4})",
       8,
       {"train_micro_batch_size_per_gpu 0 (derived)"}},
      {"zero micro-batch",
       R"({"train_micro_batch_size_per_gpu": 0})",
       1,
       {"train_micro_batch_size_per_gpu (line 1, column 36): must be at least "
        "1, found 0"}},
      // "auto".
      {"auto",
       R"({"train_batch_size": "auto",
           "zero_optimization": {"sub_group_size": "auto"},
           "optimizer": {"params": {"lr": "auto"}}})",
       1,
       {"train_batch_size (line 1, column 22): \"auto\" is a placeholder that "
        "only the Hugging Face Trainer fills in; zero3 train fills it from "
        "--micro-batch, which is not given: give --micro-batch, or replace "
        "\"auto\" with a value",
        "zero_optimization.sub_group_size (line 2, column 52): \"auto\" is a "
        "placeholder that only the Hugging Face Trainer fills in; zero3 needs "
        "an integer here (the default is 1000000000)",
        "optimizer.params.lr (line 3, column 43): \"auto\" is a placeholder "
        "that only the Hugging Face Trainer fills in; zero3 train fills it "
        "from --lr, which is not given: give --lr, or replace \"auto\" with "
        "a value"}},
      // Misplaced keys.
      {"offload section at the top level",
       R"({"offload_optimizer": {"device": "cpu"}})",
       1,
       {"offload_optimizer (line 1, column 2): misplaced: "
        "\"offload_optimizer\" is not a key of the top level; it belongs at "
        "zero_optimization.offload_optimizer. Move it there (DeepSpeed "
        "ignores unknown top-level keys without a word"}},
      {"offload section inside the other one",
       R"({"zero_optimization": {"offload_param": {"offload_optimizer": {}}}})",
       1,
       {"zero_optimization.offload_param.offload_optimizer (line 1, column "
        "42): misplaced: \"offload_optimizer\" is not a key of "
        "'zero_optimization.offload_param'; it belongs at "
        "zero_optimization.offload_optimizer"}},
      {"stage at the top level",
       R"({"stage": 3})",
       1,
       {"stage (line 1, column 2): misplaced: \"stage\" is not a key of the "
        "top level; it belongs at zero_optimization.stage"}},
      {"lr directly under optimizer",
       R"({"optimizer": {"lr": 0.1}})",
       1,
       {"optimizer.lr (line 1, column 16): misplaced: \"lr\" is not a key of "
        "'optimizer'; it belongs at optimizer.params.lr"}},
      {"pin_memory directly under zero_optimization",
       R"({"zero_optimization": {"pin_memory": false}})",
       1,
       {"it belongs at zero_optimization.offload_optimizer.pin_memory or "
        "zero_optimization.offload_param.pin_memory"}},
      {"stage-1/2 key at the top level",
       R"({"allgather_bucket_size": 5e8})",
       1,
       {"it belongs at zero_optimization.allgather_bucket_size"}},
      // Misspelled keys.
      {"misspelled key",
       R"({"zero_optimization": {"stage3_prefetch_bucket_sise": 1}})",
       1,
       {"zero_optimization.stage3_prefetch_bucket_sise (line 1, column 24): "
        "unknown key; did you mean \"stage3_prefetch_bucket_size\"?"}},
      {"a key holding a newline, shown escaped on one line",
       R"({"gradient_clipp\ng": 1.0})",
       1,
       {"gradient_clipp\\x0ag (line 1, column 2): unknown key; did you mean "
        "\"gradient_clipping\"?"}},
      {"misspelled section",
       R"({"zero_optimisation": {}})",
       1,
       {"zero_optimisation (line 1, column 2): unknown key; did you mean "
        "\"zero_optimization\"?"}},
      {"misspelled unimplemented key",
       R"({"wall_clock_breakdwn": false})",
       1,
       {"wall_clock_breakdwn (line 1, column 2): unknown key; did you mean "
        "\"wall_clock_breakdown\"?"}},
      {"misspelled key from another section",
       R"({"zero_optimization": {"pin_memroy": true}})",
       1,
       {"zero_optimization.pin_memroy (line 1, column 24): unknown key; did "
        "you mean zero_optimization.offload_optimizer.pin_memory?"}},
      {"unknown key",
       R"({"zero_optimization": {"frobnicate": 1}})",
       1,
       {"zero_optimization.frobnicate (line 1, column 24): unknown key: not a "
        "DeepSpeed or zero3 key that zero3 knows"}},
      // Deprecated keys that contradict their replacement.
      {"cpu_offload with offload_optimizer (DeepSpeed's config_utils.py "
       "asserts: \"Cannot provide deprecated parameter ... together\")",
       R"({"zero_optimization": {"cpu_offload": true,
           "offload_optimizer": {"device": "cpu"}}})",
       1,
       {"zero_optimization.cpu_offload (line 1, column 39): deprecated, and "
        "given together with its replacement "
        "zero_optimization.offload_optimizer: DeepSpeed rejects the pair"}},
      {"cpu_offload false with offload_optimizer",
       R"({"zero_optimization": {"cpu_offload": false,
           "offload_optimizer": {}}})",
       1,
       {"zero_optimization.cpu_offload (line 1, column 39): deprecated, and "
        "given together"}},
      {"cpu_offload_param with offload_param",
       R"({"zero_optimization": {"cpu_offload_param": true,
           "offload_param": {"device": "cpu"},
           "offload_optimizer": {"device": "cpu"}}})",
       1,
       {"zero_optimization.cpu_offload_param (line 1, column 45): "
        "deprecated, and given together with its replacement "
        "zero_optimization.offload_param"}},
      {"pin memory contradiction",
       R"({"zero_optimization": {"cpu_offload_use_pin_memory": false,
           "offload_optimizer": {"device": "cpu", "pin_memory": true}}})",
       1,
       {"zero_optimization.cpu_offload_use_pin_memory (line 1, column 54): "
        "false (deprecated: means "
        "zero_optimization.offload_optimizer.pin_memory = false) contradicts "
        "zero_optimization.offload_optimizer.pin_memory = true"}},
      {"two deprecated keys disagree",
       R"({"zero_optimization": {"cpu_offload_param": true,
           "cpu_offload_params": false}})",
       1,
       {"zero_optimization.cpu_offload_params (line 2, column 34): false "
        "(deprecated: means zero_optimization.offload_param.device = "
        "\"none\") contradicts zero_optimization.cpu_offload_param: true"}},
      {"gather fp16 contradiction",
       R"({"zero_optimization": {
           "stage3_gather_fp16_weights_on_model_save": true,
           "stage3_gather_16bit_weights_on_model_save": false}})",
       1,
       {"zero_optimization.stage3_gather_fp16_weights_on_model_save "}},
      {"deprecated key of the wrong type",
       R"({"zero_optimization": {"cpu_offload": "maybe"}})",
       1,
       {"zero_optimization.cpu_offload (line 1, column 39): expected true or "
        "false"}},
      {"alias contradicts its canonical key",
       R"({"zero_optimization": {"prefetch_bucket_size": 1,
           "stage3_prefetch_bucket_size": 2}})",
       1,
       {"zero_optimization.prefetch_bucket_size (line 1, column 48): another "
        "name for zero_optimization.stage3_prefetch_bucket_size, which is "
        "also given, with a different value (1 vs 2); keep one"}},
      // Rejected.
      {"max_grad_norm",
       R"({"optimizer": {"params": {"max_grad_norm": 1.0}}})",
       1,
       {"optimizer.params.max_grad_norm (line 1, column 44): not an "
        "optimizer parameter"}},
      {"amsgrad",
       R"({"optimizer": {"params": {"amsgrad": true}}})",
       1,
       {"optimizer.params.amsgrad (line 1, column 38): AMSGrad is not "
        "implemented"}},
      {"other optimizer",
       R"({"optimizer": {"type": "Lamb"}})",
       1,
       {"optimizer.type (line 1, column 24): \"Lamb\" is not implemented: "
        "zero3 implements \"Adam\" and \"AdamW\""}},
      {"optimizer misspelled",
       R"({"optimizer": {"type": "Adma"}})",
       1,
       {"did you mean \"Adam\"?"}},
      // Malformed JSON.
      {"malformed JSON",
       "{\n  \"zero_optimization\": {\n    \"stage\": 3\n    \"cpu_offload\": "
       "true\n  }\n}",
       1,
       {"line 4, column 5: expected ',' or '}' after an object member, found "
        "'\"'"}},
      {"duplicate key",
       "{\"bf16\": {}, \"bf16\": {}}",
       1,
       {"line 1, column 14: duplicate key \"bf16\" (first given at line 1, "
        "column 2)"}},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<LoadedConfig> loaded = LoadJson(c.json, c.world_size);
    ASSERT_THAT(loaded, StatusIs(absl::StatusCode::kInvalidArgument));
    const std::vector<std::string> lines = ErrorLines(loaded.status());
    // Each expected substring in a line of its own, in order.
    size_t next = 0;
    for (const std::string& want : c.errors) {
      while (next < lines.size() &&
             lines[next].find(want) == std::string::npos) {
        ++next;
      }
      EXPECT_LT(next, lines.size())
          << "no error line (in order) contains: " << want << "\nerrors:\n"
          << loaded.status().message();
    }
  }
}

TEST(ConfigLoaderTest, ReportsEveryErrorOncePerLine) {
  absl::StatusOr<LoadedConfig> loaded = LoadJson(R"({
    "train_batch_size": "auto",
    "stage": 3,
    "bf16": {"enabled": true},
    "fp16": {"enabled": true},
    "optimizer": {"type": "AdamW", "params": {"eps": -1}},
    "zero_optimization": {"stage": 2, "reduce_bucket_size": 1.5,
                          "offload_optimiser": {}}
  })");
  ASSERT_FALSE(loaded.ok());
  const std::vector<std::string> lines = ErrorLines(loaded.status());
  EXPECT_THAT(lines, ElementsAre(HasSubstr("train_batch_size (line 2"),
                                 HasSubstr("stage (line 3"),
                                 HasSubstr("zero_optimization.reduce_bucket_"
                                           "size (line 7"),
                                 HasSubstr("zero_optimization.offload_"
                                           "optimiser (line 8"),
                                 HasSubstr("fp16.enabled (line 5"),
                                 HasSubstr("optimizer.params.eps (line 6"),
                                 HasSubstr("zero_optimization.stage (line 7")))
      << loaded.status().message();
  // "auto" for the batch size does not cascade into a batch error.
  EXPECT_THAT(std::string(loaded.status().message()),
              Not(HasSubstr("inconsistent")));
}

TEST(ConfigLoaderTest, LegacyOptOutFile) {
  ASSERT_OK_AND_ASSIGN(
      LoadedConfig loaded,
      LoadConfigFile(std::string(kConfigDir) + "legacy_cpu_offload.json"));
  const ZeroOptimization& zero = loaded.config.zero_optimization();
  EXPECT_EQ(zero.offload_optimizer().device(), "cpu");
  EXPECT_FALSE(zero.offload_optimizer().pin_memory());
  EXPECT_EQ(zero.offload_param().device(), "none");
  EXPECT_EQ(zero.reduce_bucket_size(), 500000000);
  EXPECT_TRUE(loaded.config.fp16().enabled());
  EXPECT_EQ(loaded.config.optimizer().type(), "Adam");
  const std::string notices = Notices(loaded);
  EXPECT_THAT(notices, HasSubstr("zero_optimization.cpu_offload: deprecated"));
  EXPECT_THAT(notices, HasSubstr("zero_optimization.cpu_offload_use_pin_memory"
                                 ": deprecated; read as "
                                 "zero_optimization.offload_optimizer."
                                 "pin_memory = false"));
  EXPECT_THAT(notices,
              HasSubstr("zero_optimization.stage3_gather_fp16_weights_on_"
                        "model_save: deprecated"));
  ExpectRoundTrip(loaded.config, 1);
}

TEST(ConfigLoaderTest, ADirectoryIsNotAConfiguration) {
  EXPECT_THAT(LoadConfigFile(kConfigDir),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(": it is a directory; give the path of a")));
}

TEST(ConfigLoaderTest, HuggingFaceTemplateWithAuto) {
  absl::StatusOr<LoadedConfig> loaded =
      LoadConfigFile(std::string(kConfigDir) + "hf_zero3_offload.json");
  ASSERT_THAT(loaded, StatusIs(absl::StatusCode::kInvalidArgument));
  const std::vector<std::string> lines = ErrorLines(loaded.status());
  // One error per "auto" that zero3 has no value for without zero3 train's
  // flags and model, nothing else; the rest take the Hugging Face Trainer's
  // defaults (AutoResolution tests each).
  const char* const auto_keys[] = {
      "fp16.enabled",
      "bf16.enabled",
      "optimizer.params.lr",
      "scheduler.params.warmup_max_lr",
      "scheduler.params.warmup_num_steps",
      "zero_optimization.reduce_bucket_size",
      "zero_optimization.stage3_prefetch_bucket_size",
      "zero_optimization.stage3_param_persistence_threshold",
      "gradient_accumulation_steps",
      "train_batch_size",
      "train_micro_batch_size_per_gpu",
  };
  ASSERT_THAT(lines, SizeIs(std::size(auto_keys))) << loaded.status().message();
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_THAT(lines[i], AllOf(HasSubstr(auto_keys[i]),
                                HasSubstr("\"auto\" is a placeholder")));
  }
}

TEST(ConfigLoaderTest, HuggingFaceTemplateFilledIn) {
  ASSERT_OK_AND_ASSIGN(
      LoadedConfig loaded,
      LoadConfigFile(std::string(kConfigDir) + "hf_zero3_offload_filled.json"));
  const Config& c = loaded.config;
  EXPECT_TRUE(c.bf16().enabled());
  EXPECT_FALSE(c.fp16().enabled());
  EXPECT_EQ(c.train_batch_size(), 16);
  EXPECT_EQ(c.zero_optimization().offload_optimizer().device(), "cpu");
  EXPECT_TRUE(c.zero_optimization().offload_optimizer().pin_memory());
  EXPECT_EQ(c.zero_optimization().offload_param().device(), "cpu");
  EXPECT_EQ(c.zero_optimization().sub_group_size(), 1000000000);
  EXPECT_EQ(c.zero_optimization().stage3_prefetch_bucket_size(), 3774873);
  EXPECT_DOUBLE_EQ(c.optimizer().params().lr(), 2e-5);
  EXPECT_EQ(c.steps_per_print(), 2000);
  EXPECT_EQ(c.scheduler().type(), "WarmupLR");
  EXPECT_EQ(c.scheduler().params().warmup_num_steps(), 100);
  EXPECT_THAT(loaded.notices,
              ElementsAre(HasSubstr("wall_clock_breakdown: "),
                          HasSubstr("contiguous_gradients: changes nothing"),
                          HasSubstr("stage3_gather_16bit_weights_on_model_"
                                    "save: zero3 does not save")));
  // The same file needs its data-parallel size to match.
  LoadOptions two;
  two.world_size = 2;
  EXPECT_THAT(
      LoadConfigFile(std::string(kConfigDir) + "hf_zero3_offload_filled.json",
                     two),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("train_batch_size 16 must equal "
                         "train_micro_batch_size_per_gpu 4 x "
                         "gradient_accumulation_steps 4 x data-parallel size "
                         "2 = 32")));
  ExpectRoundTrip(c, 1);
}

TEST(ConfigLoaderTest, OverridesFillInAuto) {
  LoadOptions options;
  options.overrides = {
      "fp16.enabled=false",
      "bf16.enabled=true",
      "optimizer.params.lr=1e-4",
      "optimizer.params.betas=[0.9, 0.95]",
      "optimizer.params.eps=1e-8",
      "optimizer.params.weight_decay=0",
      "zero_optimization.reduce_bucket_size=5e8",
      "zero_optimization.prefetch_bucket_size=5e7",  // alias replaces
      "zero_optimization.stage3_param_persistence_threshold=1e5",
      "gradient_accumulation_steps=2",
      "gradient_clipping=1.0",
      "train_batch_size=8",
      "train_micro_batch_size_per_gpu=4",
      "scheduler.params.warmup_min_lr=0",
      "scheduler.params.warmup_max_lr=1e-4",
      "scheduler.params.warmup_num_steps=10",
  };
  ASSERT_OK_AND_ASSIGN(
      LoadedConfig loaded,
      LoadConfigFile(std::string(kConfigDir) + "hf_zero3_offload.json",
                     options));
  EXPECT_EQ(loaded.config.zero_optimization().stage3_prefetch_bucket_size(),
            50000000);
  EXPECT_DOUBLE_EQ(loaded.config.optimizer().params().betas(1), 0.95);
  EXPECT_EQ(loaded.config.train_batch_size(), 8);
}

TEST(ConfigLoaderTest, ApplyOverrides) {
  ASSERT_OK_AND_ASSIGN(
      LoadedConfig base,
      LoadConfigFile(std::string(kConfigDir) + "zero3_offload.json"));
  EXPECT_TRUE(base.config.zero_optimization().offload_optimizer().pin_memory());
  EXPECT_EQ(base.config.train_batch_size(), 8);

  LoadOptions options;
  options.world_size = 4;
  ASSERT_OK_AND_ASSIGN(
      LoadedConfig changed,
      ApplyOverrides(base,
                     {"zero_optimization.offload_optimizer.pin_memory=false",
                      "zero3.grad_offload=blocking",  // bare word: a string
                      "optimizer.type=\"Adam\"",
                      "zero_optimization.offload_param.device=cpu",
                      "train_micro_batch_size_per_gpu = 2"},
                     options));
  const Config& c = changed.config;
  EXPECT_FALSE(c.zero_optimization().offload_optimizer().pin_memory());
  EXPECT_EQ(c.zero3().grad_offload(), "blocking");
  EXPECT_EQ(c.optimizer().type(), "Adam");
  EXPECT_EQ(c.zero_optimization().offload_param().device(), "cpu");
  // Derived again from the file's micro-batch and accumulation: 2 x 2 x 4.
  EXPECT_EQ(c.train_batch_size(), 16);
  // The base is unchanged.
  EXPECT_TRUE(base.config.zero_optimization().offload_optimizer().pin_memory());

  // A bad value is reported by key like a bad value in the file.
  EXPECT_THAT(ApplyOverrides(base, {"zero_optimization.stage=2"}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("zero_optimization.stage: zero3 implements "
                                 "ZeRO stage 3 only, found 2")));
  EXPECT_THAT(
      ApplyOverrides(
          base, {"zero_optimization.offload_optimizer.pin_memory=nope"}, {}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("zero_optimization.offload_optimizer.pin_memory: "
                         "expected true or false, found the string \"nope\"")));
  // Bad keys: all of them reported, each with a suggestion.
  absl::StatusOr<LoadedConfig> bad = ApplyOverrides(
      base,
      {"zero_optimization.offload_optimiser.pin_memory=false", "stage=3",
       "nonsense", "=1", "zero_optimization.stage.x=1", "optimizer..type=1"},
      {});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(
      ErrorLines(bad.status()),
      ElementsAre(
          "override zero_optimization.offload_optimiser.pin_memory=false: "
          "zero_optimization.offload_optimiser: unknown key; did you mean "
          "\"offload_optimizer\"?",
          HasSubstr("override stage=3: stage: misplaced: \"stage\" is not a "
                    "key of the top level; it belongs at "
                    "zero_optimization.stage"),
          HasSubstr("override nonsense: expected KEY=VALUE"),
          HasSubstr("override =1: the key before '=' is empty"),
          "override zero_optimization.stage.x=1: zero_optimization.stage is "
          "a value, not a section; cannot set zero_optimization.stage.x",
          HasSubstr("override optimizer..type=1: empty component")));
}

TEST(ConfigLoaderTest, OverridesKeepDeprecationRules) {
  ASSERT_OK_AND_ASSIGN(
      LoadedConfig base,
      LoadConfigFile(std::string(kConfigDir) + "legacy_cpu_offload.json"));
  // An override that adds the replacement section makes the pair DeepSpeed
  // rejects: an error naming both keys.
  EXPECT_THAT(
      ApplyOverrides(
          base, {"zero_optimization.offload_optimizer.pin_memory=true"}, {}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("zero_optimization.cpu_offload "),
                     HasSubstr("given together with its replacement "
                               "zero_optimization.offload_optimizer"))));
  // Overriding the deprecated key itself works.
  ASSERT_OK_AND_ASSIGN(
      LoadedConfig pinned,
      ApplyOverrides(
          base, {"zero_optimization.cpu_offload_use_pin_memory=true"}, {}));
  EXPECT_TRUE(
      pinned.config.zero_optimization().offload_optimizer().pin_memory());
  // Keys inside an ignored section are not checked.
  ASSERT_OK_AND_ASSIGN(
      LoadedConfig ignored,
      ApplyOverrides(base, {"flops_profiler.anything=10"}, {}));
  EXPECT_THAT(ignored.notices, Contains(HasSubstr("flops_profiler: ")));
  ASSERT_OK_AND_ASSIGN(LoadedConfig scheduled,
                       ApplyOverrides(base,
                                      {"scheduler.type=WarmupLR",
                                       "scheduler.params.warmup_num_steps=10"},
                                      {}));
  EXPECT_EQ(scheduled.config.scheduler().params().warmup_num_steps(), 10);
}

TEST(ConfigLoaderTest, SetConfigKeyReplacesAliases) {
  JsonValue settings = JsonValue::Object();
  ASSERT_OK(
      SetConfigKey(&settings, "zero_optimization.max_live_parameters", "1e8"));
  ASSERT_OK(SetConfigKey(&settings,
                         "zero_optimization.stage3_max_live_parameters", "5"));
  EXPECT_EQ(WriteJson(settings, JsonStyle::kCompact),
            R"({"zero_optimization": {"stage3_max_live_parameters": 5}})");
  ASSERT_OK(SetConfigKey(&settings, "bfloat16.enabled", "true"));
  ASSERT_OK(SetConfigKey(&settings, "bf16.enabled", "false"));
  EXPECT_EQ(WriteJson(settings, JsonStyle::kCompact),
            R"({"zero_optimization": {"stage3_max_live_parameters": 5}, )"
            R"("bfloat16": {"enabled": false}})");
  EXPECT_THAT(
      SetConfigKey(&settings, "zero_optimization.stage3_max_live_params", "1"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("did you mean "
                         "\"stage3_max_live_parameters\"?")));
}

TEST(ConfigLoaderTest, TextFormat) {
  ASSERT_OK_AND_ASSIGN(
      LoadedConfig text,
      LoadConfigFile(std::string(kConfigDir) + "zero3_offload.textproto"));
  ASSERT_OK_AND_ASSIGN(
      LoadedConfig json,
      LoadConfigFile(std::string(kConfigDir) + "zero3_offload.json"));
  EXPECT_TRUE(MessageDifferencer::Equals(text.config, json.config))
      << ConfigToJson(text.config) << "\nvs\n"
      << ConfigToJson(json.config);
  EXPECT_EQ(text.config.zero_optimization().offload_optimizer().device(),
            "cpu");

  // The printed text format of a resolved config reads back the same.
  std::string printed;
  ASSERT_TRUE(
      google::protobuf::TextFormat::PrintToString(text.config, &printed));
  ASSERT_OK_AND_ASSIGN(LoadedConfig again,
                       LoadConfigText(printed, ConfigFormat::kTextProto));
  EXPECT_TRUE(MessageDifferencer::Equals(text.config, again.config));

  // Text-format input goes through the same validation.
  EXPECT_THAT(LoadConfigText("zero_optimization { stage: 1 }",
                             ConfigFormat::kTextProto),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("zero_optimization.stage: zero3 implements "
                                 "ZeRO stage 3 only, found 1")));
  EXPECT_THAT(
      LoadConfigText("gradient_clipping: inf", ConfigFormat::kTextProto),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("gradient_clipping: must be a finite "
                         "number")));
  // Parse errors carry line and column and a suggestion.
  EXPECT_THAT(LoadConfigText("zero_optimization {\n  stgae: 3\n}",
                             ConfigFormat::kTextProto),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("line 2, column "),
                             HasSubstr("no field named \"stgae\""),
                             HasSubstr("Did you mean \"stage\"?"))));
  EXPECT_THAT(
      LoadConfigText("zero_optimization {\n  prefetch_bucket_size: 3\n}",
                     ConfigFormat::kTextProto),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("canonical names only: write "
                         "stage3_prefetch_bucket_size")));
  EXPECT_THAT(LoadConfigText("train_batch_size: 1.5", ConfigFormat::kTextProto),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("line 1, column 19")));
  // Overrides apply to text-format input too.
  LoadOptions options;
  options.overrides = {"zero_optimization.offload_optimizer.pin_memory=false"};
  ASSERT_OK_AND_ASSIGN(
      LoadedConfig overridden,
      LoadConfigFile(std::string(kConfigDir) + "zero3_offload.textproto",
                     options));
  EXPECT_FALSE(
      overridden.config.zero_optimization().offload_optimizer().pin_memory());
}

TEST(ConfigLoaderTest, ReadsMonitorsAndStepsPerPrint) {
  ASSERT_OK_AND_ASSIGN(LoadedConfig defaults, LoadJson("{}"));
  EXPECT_EQ(defaults.config.steps_per_print(), 1);
  EXPECT_FALSE(defaults.config.csv_monitor().enabled());
  EXPECT_EQ(defaults.config.tensorboard().output_path(), "");
  EXPECT_EQ(defaults.config.tensorboard().job_name(), "DeepSpeedJobName");
  ASSERT_OK_AND_ASSIGN(LoadedConfig loaded, LoadJson(R"({"steps_per_print": 5,
                   "csv_monitor": {"enabled": true, "output_path": "logs/"},
                   "tensorboard": {"enabled": true, "job_name": "run1"}})"));
  const Config& c = loaded.config;
  EXPECT_EQ(c.steps_per_print(), 5);
  EXPECT_TRUE(c.csv_monitor().enabled());
  EXPECT_EQ(c.csv_monitor().output_path(), "logs/");
  EXPECT_EQ(c.csv_monitor().job_name(), "DeepSpeedJobName");
  EXPECT_TRUE(c.tensorboard().enabled());
  EXPECT_EQ(c.tensorboard().job_name(), "run1");
  EXPECT_THAT(Notices(loaded), Not(HasSubstr("tensorboard")));
  ExpectRoundTrip(c, 1);
  EXPECT_THAT(LoadJson(R"({"steps_per_print": 0})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("steps_per_print (line 1, column 21): must "
                                 "be >= 1")));
  EXPECT_THAT(LoadJson(R"({"tensorboard": {"enable": true}})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tensorboard.enable")));
}

TEST(ConfigLoaderTest, DetectsFormat) {
  EXPECT_EQ(DetectConfigFormat("a.json", "x"), ConfigFormat::kJson);
  EXPECT_EQ(DetectConfigFormat("a.textproto", "{"), ConfigFormat::kTextProto);
  EXPECT_EQ(DetectConfigFormat("a.txtpb", ""), ConfigFormat::kTextProto);
  EXPECT_EQ(DetectConfigFormat("a.pbtxt", ""), ConfigFormat::kTextProto);
  EXPECT_EQ(DetectConfigFormat("a.cfg", "  // c\n{}"), ConfigFormat::kJson);
  EXPECT_EQ(DetectConfigFormat("a.cfg", "# c\nbf16 {}"),
            ConfigFormat::kTextProto);
  ASSERT_OK_AND_ASSIGN(
      LoadedConfig loaded,
      LoadConfigText("bf16 { enabled: true }", ConfigFormat::kAuto));
  EXPECT_TRUE(loaded.config.bf16().enabled());
}

TEST(ConfigLoaderTest, FileErrors) {
  EXPECT_THAT(LoadConfigFile("/nonexistent/ds_config.json"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("cannot read configuration file "
                                 "/nonexistent/ds_config.json")));
  LoadOptions zero_world;
  zero_world.world_size = 0;
  EXPECT_THAT(DefaultConfig(zero_world),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("world size) must be at least 1, found 0")));
}

TEST(ConfigLoaderTest, ShippedExamplesLoadAndRoundTrip) {
  for (const char* name :
       {"zero3_offload.json", "zero3_offload.textproto",
        "hf_zero3_offload_filled.json", "legacy_cpu_offload.json"}) {
    SCOPED_TRACE(name);
    ASSERT_OK_AND_ASSIGN(LoadedConfig loaded,
                         LoadConfigFile(std::string(kConfigDir) + name));
    EXPECT_THAT(ValidateConfig(loaded.config, 1), IsOk());
    ExpectRoundTrip(loaded.config, 1);
  }
}

TEST(ValidateConfigTest, ChecksHandBuiltConfigs) {
  ASSERT_OK_AND_ASSIGN(LoadedConfig loaded, DefaultConfig());
  Config c = loaded.config;
  EXPECT_THAT(ValidateConfig(c, 1), IsOk());
  // The batch sizes of the default config are for one rank.
  EXPECT_THAT(ValidateConfig(c, 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("train_batch_size: batch sizes are "
                                 "inconsistent")));
  c.mutable_zero_optimization()->mutable_offload_optimizer()->set_device(
      "nvme");
  c.mutable_zero_optimization()->mutable_offload_optimizer()->set_ratio(0.5);
  c.mutable_zero_optimization()->mutable_offload_param()->set_device("cpu");
  c.mutable_zero_optimization()->set_stage(1);
  c.mutable_optimizer()->mutable_params()->clear_betas();
  EXPECT_THAT(
      ErrorLines(ValidateConfig(c, 1)),
      ElementsAre(HasSubstr("optimizer.params.betas: needs exactly two"),
                  HasSubstr("zero_optimization.stage: zero3 implements"),
                  HasSubstr("zero_optimization.offload_optimizer.nvme_path: "
                            "needed with device \"nvme\""),
                  HasSubstr("zero_optimization.offload_optimizer.ratio: "
                            "a ratio below 1 (or \"auto\") needs "
                            "offload_param.device \"none\"")));
}

TEST(ConfigToJsonTest, PrintsNonFiniteAsStrings) {
  Config c;
  c.set_gradient_clipping(std::numeric_limits<double>::infinity());
  EXPECT_THAT(ConfigToJson(c), HasSubstr("\"gradient_clipping\": \"inf\""));
  EXPECT_THAT(LoadJson(ConfigToJson(c)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("gradient_clipping (line 2, column 24): must "
                                 "be a finite number")));
}

}  // namespace
}  // namespace config
}  // namespace zero3
