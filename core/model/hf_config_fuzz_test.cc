// Copyright 2026 The zero3 Authors.
//
// Randomized test of the Hugging Face config.json reader: mutated configs
// of every family zero3 reads never crash it; what it accepts is a valid
// ModelSpec whose parameters can be laid out and counted, and whose
// written-back config.json reads back as an equivalent spec. Seeds are fixed,
// so a failure reproduces; the failing input is printed.

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/config/json.h"
#include "core/model/hf_config.h"
#include "core/model/presets.h"
#include "core/model/transformer.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "testing/text_mutation.h"

namespace zero3 {
namespace model {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::zero3::testing::MutateText;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The oracle checkpoints' config.json: every family, both RoPE layouts.
std::vector<std::string> Samples() {
  std::vector<std::string> samples;
  for (const char* name :
       {"gemma2", "gemma3", "llama", "llama3_rope", "mistral_window", "olmo2",
        "phi3", "qwen2_bytes", "qwen2_tied", "qwen2_untied", "qwen2_window",
        "qwen2_yarn", "qwen3"}) {
    samples.push_back(
        ReadFile(absl::StrCat("testing/testdata/hf/", name, "/config.json")));
    EXPECT_FALSE(samples.back().empty()) << name;
  }
  return samples;
}

// Tokens that reach the reader's interesting paths when spliced in.
std::vector<std::string> Tokens() {
  std::vector<std::string> tokens = {
      "null",
      "true",
      "false",
      "0",
      "-1",
      "1.5",
      "1e309",
      "-1e309",
      "1e-400",
      "9223372036854775808",
      "{",
      "}",
      "[",
      "]",
      ",",
      ":",
      "\"",
      "\"\"",
      "[]",
      "{}",
      "NaN",
      "inf",
      std::string(1, '\0'),
      "\xff",
      "\"sliding_attention\"",
      "\"full_attention\"",
      "\"linear\"",
      "\"yarn\"",
      "\"llama3\"",
      "\"longrope\"",
      "\"default\"",
      "\"gelu_pytorch_tanh\"",
      "\"silu\"",
      "\"Gemma2ForCausalLM\"",
      "\"Gemma3ForCausalLM\"",
      "\"Qwen3ForCausalLM\"",
      "\"Phi3ForCausalLM\"",
      "\"Olmo2ForCausalLM\"",
      std::string(5000, '['),
  };
  for (const char* key : {"hidden_size",
                          "intermediate_size",
                          "num_hidden_layers",
                          "num_attention_heads",
                          "num_key_value_heads",
                          "head_dim",
                          "vocab_size",
                          "sliding_window",
                          "sliding_window_pattern",
                          "max_window_layers",
                          "query_pre_attn_scalar",
                          "attn_logit_softcapping",
                          "final_logit_softcapping",
                          "rope_theta",
                          "rope_local_base_freq",
                          "partial_rotary_factor",
                          "factor",
                          "original_max_position_embeddings",
                          "max_position_embeddings",
                          "rms_norm_eps"}) {
    for (const char* value : {"0", "-3", "1", "7", "1e3", "null", "\"x\""}) {
      tokens.push_back(absl::StrCat("\"", key, "\": ", value, ","));
    }
  }
  tokens.push_back(
      "\"layer_types\": [\"sliding_attention\", \"full_attention\"],");
  tokens.push_back("\"layer_types\": [\"sliding_attention\"],");
  tokens.push_back(
      "\"rope_parameters\": {\"full_attention\": {\"rope_type\": "
      "\"linear\", \"factor\": 2}, \"sliding_attention\": {\"rope_theta\": "
      "100}},");
  tokens.push_back("\"rope_scaling\": {\"rope_type\": \"yarn\"},");
  tokens.push_back("\"use_sliding_window\": true,");
  tokens.push_back("\"tie_word_embeddings\": false,");
  return tokens;
}

TEST(HfConfigFuzzTest, MutatedConfigsNeverCrash) {
  const std::vector<std::string> samples = Samples();
  const std::vector<std::string> tokens = Tokens();
  std::mt19937_64 rng(20261205);
  int accepted = 0, rejected = 0;
  for (int i = 0; i < 3000; ++i) {
    const std::string input =
        MutateText(samples[i % samples.size()], tokens, rng);
    absl::StatusOr<config::JsonValue> json = config::ParseJson(input);
    if (!json.ok()) {
      ++rejected;
      continue;
    }
    absl::StatusOr<ModelSpec> spec =
        ModelSpecFromHfConfig(*json, "dir/config.json", "m");
    if (!spec.ok()) {
      ++rejected;
      EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument)
          << spec.status() << "\ninput:\n"
          << input;
      EXPECT_NE(spec.status().message().find("dir/config.json"),
                std::string::npos)
          << spec.status();
      continue;
    }
    ++accepted;
    EXPECT_TRUE(ValidateModelSpec(*spec).ok()) << "input:\n" << input;
    // The parameters lay out and count as the spec says.
    int64_t laid_out = 0;
    for (const ParamInfo& p : ModelParams(*spec)) laid_out += p.numel();
    EXPECT_EQ(laid_out, ParameterCount(*spec)) << "input:\n" << input;
    // Written back, it reads as the same spec.
    absl::StatusOr<ModelSpec> back = ModelSpecFromHfConfig(
        HfConfigFromModelSpec(*spec, "float32"), "x", spec->name());
    ASSERT_TRUE(back.ok()) << back.status() << "\ninput:\n" << input;
    // (Defaults the export writes out read back as set: equivalent.)
    EXPECT_TRUE(MessageDifferencer::Equivalent(*back, *spec))
        << back->DebugString() << "\nvs\n"
        << spec->DebugString() << "\ninput:\n"
        << input;
  }
  // Both outcomes are exercised.
  EXPECT_GT(accepted, 100);
  EXPECT_GT(rejected, 100);
}

}  // namespace
}  // namespace model
}  // namespace zero3
