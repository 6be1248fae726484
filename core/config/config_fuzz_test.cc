// Copyright 2026 The zero3 Authors.
//
// Randomized test of the loader: mutated configurations never crash it, and
// whatever it accepts is valid and prints back to itself.
//
// Seeds are fixed, so a failure reproduces; the failing input is printed.

#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/config/config.pb.h"
#include "core/config/config_loader.h"
#include "core/config/deepspeed_keys.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "testing/text_mutation.h"

namespace zero3 {
namespace config {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::zero3::testing::MutateText;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> Samples() {
  std::vector<std::string> samples;
  for (const char* name :
       {"zero3_offload.json", "hf_zero3_offload.json",
        "hf_zero3_offload_filled.json", "legacy_cpu_offload.json",
        "zero3_offload.textproto"}) {
    samples.push_back(
        ReadFile(absl::StrCat("testing/testdata/configs/", name)));
    EXPECT_FALSE(samples.back().empty()) << name;
  }
  samples.push_back("{}");
  samples.push_back(
      R"({"zero_optimization": {"cpu_offload": true, "cpu_offload_param": true,
          "cpu_offload_use_pin_memory": false, "prefetch_bucket_size": 1,
          "offload_optimizer": {"device": "nvme", "ratio": 0.5}},
          "bfloat16": {"enabled": true}, "optimizer": {"type": "adam"}})");
  return samples;
}

// Tokens that reach the loader's interesting paths when spliced in.
std::vector<std::string> Tokens() {
  std::vector<std::string> tokens = {
      "\"auto\"",
      "auto",
      "-1",
      "1e309",
      "-1e309",
      "1e-400",
      "1.5",
      "5e8",
      "9223372036854775808",
      "-9223372036854775809",
      "null",
      "true",
      "false",
      "{",
      "}",
      "[",
      "]",
      ",",
      ":",
      "\"",
      "\\u",
      "\\ud800",
      "NaN",
      "//",
      "/*",
      "#",
      "\xff",
      std::string(1, '\0'),
      "0",
      "\"cpu\"",
      "\"nvme\"",
      "\"none\"",
      "\"AdamW\"",
      "[0.9, 0.999]",
      "[1, 2, 3]",
      "{}",
      "[]",
      std::string(10000, '['),
      std::string(10000, '{'),
      "\"stage\": 2,",
      "\"stage\": 3,",
      "\"offload_optimizer\": {},",
      "\"offload_param\": {\"device\": \"cpu\"},",
      "inf",
      "nan",
  };
  // Every key zero3 knows, as a member with a random-ish value.
  for (const DeepSpeedKey& key : DeepSpeedKeys()) {
    tokens.push_back(absl::StrCat("\"", key.name, "\": true,"));
    tokens.push_back(absl::StrCat("\"", key.name, "\": \"auto\","));
  }
  for (const char* key :
       {"train_batch_size", "train_micro_batch_size_per_gpu",
        "gradient_accumulation_steps", "pin_memory", "device", "ratio", "betas",
        "lr", "eps", "grad_offload", "optimizer_threads", "type", "enabled",
        "loss_scale", "initial_scale_power", "hysteresis"}) {
    tokens.push_back(absl::StrCat("\"", key, "\": 0,"));
    tokens.push_back(absl::StrCat("\"", key, "\": -3,"));
    tokens.push_back(absl::StrCat("\"", key, "\": 1e3,"));
  }
  return tokens;
}

// A loaded configuration must validate again and round-trip through its
// printed JSON.
void CheckAccepted(const LoadedConfig& loaded, int64_t world_size,
                   const std::string& input) {
  EXPECT_TRUE(ValidateConfig(loaded.config, world_size).ok())
      << ValidateConfig(loaded.config, world_size) << "\ninput:\n"
      << input;
  LoadOptions options;
  options.world_size = world_size;
  const std::string json = ConfigToJson(loaded.config);
  absl::StatusOr<LoadedConfig> again =
      LoadConfigText(json, ConfigFormat::kJson, options);
  ASSERT_TRUE(again.ok()) << again.status() << "\nprinted:\n"
                          << json << "\ninput:\n"
                          << input;
  EXPECT_TRUE(MessageDifferencer::Equals(loaded.config, again->config))
      << "input:\n"
      << input;
}

TEST(ConfigFuzzTest, MutatedConfigsNeverCrash) {
  const std::vector<std::string> samples = Samples();
  const std::vector<std::string> tokens = Tokens();
  std::mt19937_64 rng(20261130);
  int accepted = 0;
  int rejected = 0;
  constexpr int kIterations = 4000;
  for (int i = 0; i < kIterations; ++i) {
    const std::string& sample = samples[i % samples.size()];
    const std::string input = MutateText(sample, tokens, rng);
    LoadOptions options;
    options.world_size = 1 + static_cast<int64_t>(rng() % 4);
    const ConfigFormat format =
        (rng() % 3 == 0) ? ConfigFormat::kAuto
                         : (sample[0] == '#' ? ConfigFormat::kTextProto
                                             : ConfigFormat::kJson);
    absl::StatusOr<LoadedConfig> loaded =
        LoadConfigText(input, format, options);
    if (loaded.ok()) {
      ++accepted;
      CheckAccepted(*loaded, options.world_size, input);
    } else {
      ++rejected;
      EXPECT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument)
          << loaded.status();
      EXPECT_FALSE(loaded.status().message().empty());
    }
    if (HasFailure()) {
      ADD_FAILURE() << "iteration " << i;
      return;
    }
  }
  // The mutations must leave some inputs valid, or the accepted path is not
  // being exercised.
  EXPECT_GT(accepted, kIterations / 50);
  EXPECT_GT(rejected, kIterations / 2);
}

TEST(ConfigFuzzTest, RandomOverridesNeverCrash) {
  const std::vector<std::string> tokens = Tokens();
  absl::StatusOr<LoadedConfig> base =
      LoadConfigText(ReadFile("testing/testdata/configs/zero3_offload.json"),
                     ConfigFormat::kJson);
  ASSERT_TRUE(base.ok()) << base.status();
  // Key paths: real ones, then mutated.
  const std::vector<std::string> keys = {
      "train_batch_size",
      "zero_optimization.stage",
      "zero_optimization.offload_optimizer.pin_memory",
      "zero_optimization.offload_optimizer",
      "zero_optimization.cpu_offload",
      "zero_optimization.cpu_offload_use_pin_memory",
      "zero_optimization.prefetch_bucket_size",
      "bfloat16.enabled",
      "bf16",
      "optimizer.params.betas",
      "scheduler.params.x",
      "zero3.grad_offload",
  };
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string key = keys[rng() % keys.size()];
    if (rng() % 4 == 0) key = MutateText(key, {".", "..", "x", "stage"}, rng);
    const std::string value = MutateText("", tokens, rng);
    const std::string override = absl::StrCat(key, "=", value);
    absl::StatusOr<LoadedConfig> loaded =
        ApplyOverrides(*base, {override}, LoadOptions());
    if (loaded.ok()) {
      CheckAccepted(*loaded, 1, override);
    } else {
      EXPECT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument);
    }
    if (HasFailure()) {
      ADD_FAILURE() << "iteration " << i << ": " << override;
      return;
    }
  }
}

}  // namespace
}  // namespace config
}  // namespace zero3
