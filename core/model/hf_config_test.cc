// Copyright 2026 The zero3 Authors.

#include "core/model/hf_config.h"

#include <string>

#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace model {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::zero3::testing::StatusIs;

// A Qwen2.5-style config.json of the classic layout (top-level rope_theta,
// rope_scaling null, a sliding window that is off).
constexpr char kClassicQwen2[] = R"({
  "architectures": ["Qwen2ForCausalLM"],
  "hidden_act": "silu",
  "hidden_size": 64,
  "intermediate_size": 160,
  "num_attention_heads": 8,
  "num_hidden_layers": 3,
  "num_key_value_heads": 2,
  "rms_norm_eps": 1e-05,
  "rope_scaling": null,
  "rope_theta": 1000000.0,
  "sliding_window": 32768,
  "use_sliding_window": false,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "vocab_size": 200
})";

absl::StatusOr<ModelSpec> FromText(const std::string& text) {
  absl::StatusOr<config::JsonValue> root = config::ParseJson(text);
  if (!root.ok()) return root.status();
  return ModelSpecFromHfConfig(*root, "dir/config.json", "m");
}

TEST(HfConfigTest, MapsTransformers5Qwen2) {
  ASSERT_OK_AND_ASSIGN(
      ModelSpec s,
      LoadHfConfig("testing/testdata/hf/qwen2_tied/config.json", "qwen2_tied"));
  EXPECT_EQ(s.name(), "qwen2_tied");
  EXPECT_EQ(s.vocab_size(), 96);
  EXPECT_EQ(s.hidden_size(), 32);
  EXPECT_EQ(s.intermediate_size(), 64);
  EXPECT_EQ(s.num_layers(), 2);
  EXPECT_EQ(s.num_heads(), 4);
  EXPECT_EQ(s.num_kv_heads(), 2);
  EXPECT_EQ(s.head_dim(), 8);
  EXPECT_EQ(s.rope_theta(), 10000.0);
  EXPECT_EQ(s.rms_norm_eps(), 1e-6);
  EXPECT_TRUE(s.tie_word_embeddings());
  EXPECT_TRUE(s.qkv_bias());
}

TEST(HfConfigTest, MapsLlamaWithHeadDim) {
  ASSERT_OK_AND_ASSIGN(
      ModelSpec s, LoadHfConfig("testing/testdata/hf/llama/config.json", "l"));
  EXPECT_EQ(s.head_dim(), 16);  // not hidden / heads = 8
  EXPECT_FALSE(s.tie_word_embeddings());
  EXPECT_FALSE(s.qkv_bias());
}

TEST(HfConfigTest, ModelArgumentTakesAConfigJsonWithoutWeights) {
  ASSERT_OK_AND_ASSIGN(
      ModelSpec s,
      LoadModelSpecOrHfConfig("testing/testdata/hf/llama/config.json"));
  EXPECT_EQ(s.name(), "llama");
  EXPECT_EQ(s.head_dim(), 16);
  EXPECT_FALSE(s.qkv_bias());
  ASSERT_OK_AND_ASSIGN(ModelSpec preset,
                       LoadModelSpecOrHfConfig("qwen2.5-72b"));
  EXPECT_EQ(preset.hidden_size(), 8192);
  EXPECT_FALSE(
      LoadModelSpecOrHfConfig("testing/testdata/none/config.json").ok());
  // The model's directory reads as its config.json, as train takes it.
  ASSERT_OK_AND_ASSIGN(ModelSpec dir,
                       LoadModelSpecOrHfConfig("testing/testdata/hf/llama/"));
  EXPECT_EQ(dir.DebugString(), s.DebugString());
}

TEST(HfConfigTest, MapsClassicTopLevelRopeTheta) {
  ASSERT_OK_AND_ASSIGN(ModelSpec s, FromText(kClassicQwen2));
  EXPECT_EQ(s.rope_theta(), 1e6);
  EXPECT_EQ(s.rms_norm_eps(), 1e-5);
  EXPECT_EQ(s.head_dim(), 8);
  EXPECT_EQ(s.num_kv_heads(), 2);
}

TEST(HfConfigTest, AcceptsMistralWithoutWindow) {
  const std::string text = absl::StrReplaceAll(
      kClassicQwen2,
      {{"Qwen2ForCausalLM", "MistralForCausalLM"},
       {"\"sliding_window\": 32768", "\"sliding_window\": null"}});
  ASSERT_OK_AND_ASSIGN(ModelSpec s, FromText(text));
  EXPECT_FALSE(s.qkv_bias());
}

struct BadCase {
  std::string from, to, message;
};

// Writing a spec's config.json and reading it back gives the spec (but for
// its name and the initialization scale, which config.json does not carry).
TEST(HfConfigTest, WrittenConfigReadsBackAsTheSpec) {
  for (bool qwen2 : {true, false}) {
    ModelSpec spec;
    spec.set_vocab_size(300);
    spec.set_hidden_size(48);
    spec.set_intermediate_size(80);
    spec.set_num_layers(3);
    spec.set_num_heads(6);
    spec.set_num_kv_heads(2);
    spec.set_head_dim(8);
    spec.set_rope_theta(500000);
    spec.set_rms_norm_eps(1e-5);
    spec.set_tie_word_embeddings(!qwen2);
    spec.set_qkv_bias(qwen2);
    const config::JsonValue json = HfConfigFromModelSpec(spec, "float32");
    absl::StatusOr<ModelSpec> back = ModelSpecFromHfConfig(json, "x", "back");
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->vocab_size(), 300);
    EXPECT_EQ(back->hidden_size(), 48);
    EXPECT_EQ(back->intermediate_size(), 80);
    EXPECT_EQ(back->num_layers(), 3);
    EXPECT_EQ(back->num_heads(), 6);
    EXPECT_EQ(back->num_kv_heads(), 2);
    EXPECT_EQ(back->head_dim(), 8);
    EXPECT_EQ(back->rope_theta(), 500000);
    EXPECT_EQ(back->rms_norm_eps(), 1e-5);
    EXPECT_EQ(back->tie_word_embeddings(), !qwen2);
    EXPECT_EQ(back->qkv_bias(), qwen2);
  }
}

// The families beyond Qwen2 and Llama, with scaled RoPE, written and read
// back: architecture, q/k norms, norm placement, fused projections, RoPE.
TEST(HfConfigTest, FamiliesReadBackAsTheirSpec) {
  for (const char* arch :
       {"Qwen3ForCausalLM", "Olmo2ForCausalLM", "Phi3ForCausalLM"}) {
    SCOPED_TRACE(arch);
    const std::string text = absl::StrReplaceAll(
        kClassicQwen2,
        {{"Qwen2ForCausalLM", arch},
         {"\"rope_scaling\": null",
          "\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8, "
          "\"low_freq_factor\": 1, \"high_freq_factor\": 4, "
          "\"original_max_position_embeddings\": 64}"},
         {"\"sliding_window\": 32768,", ""}});
    ASSERT_OK_AND_ASSIGN(ModelSpec spec, FromText(text));
    EXPECT_EQ(spec.hf_architecture(), arch);
    EXPECT_EQ(spec.rope_scaling().type(), RopeScaling::LLAMA3);
    const config::JsonValue json = HfConfigFromModelSpec(spec, "float32");
    ASSERT_OK_AND_ASSIGN(ModelSpec back,
                         ModelSpecFromHfConfig(json, "x", spec.name()));
    EXPECT_EQ(back.DebugString(), spec.DebugString());
  }
  ASSERT_OK_AND_ASSIGN(
      ModelSpec qwen3,
      FromText(absl::StrReplaceAll(
          kClassicQwen2, {{"Qwen2ForCausalLM", "Qwen3ForCausalLM"}})));
  EXPECT_EQ(qwen3.qk_norm(), ModelSpec::QK_NORM_PER_HEAD);
  EXPECT_FALSE(qwen3.qkv_bias());
  ASSERT_OK_AND_ASSIGN(
      ModelSpec olmo2,
      FromText(absl::StrReplaceAll(kClassicQwen2,
                                   {{"Qwen2ForCausalLM", "Olmo2ForCausalLM"},
                                    {"\"sliding_window\": 32768,", ""}})));
  EXPECT_EQ(olmo2.qk_norm(), ModelSpec::QK_NORM_WHOLE);
  EXPECT_EQ(olmo2.norm_placement(), ModelSpec::NORM_POST);
}

// Qwen2's window as transformers applies it: only with use_sliding_window,
// on the layers from max_window_layers on (layer_types, where written,
// says it per layer); Mistral's on every layer. Written back the same.
TEST(HfConfigTest, SlidingWindowLayers) {
  ASSERT_OK_AND_ASSIGN(ModelSpec off, FromText(kClassicQwen2));
  EXPECT_EQ(off.sliding_window(), 0);
  const std::string on = absl::StrReplaceAll(
      kClassicQwen2,
      {{"\"use_sliding_window\": false",
        "\"use_sliding_window\": true, \"max_window_layers\": 1"},
       {"32768", "8"}});
  ASSERT_OK_AND_ASSIGN(ModelSpec qwen, FromText(on));
  EXPECT_EQ(qwen.sliding_window(), 8);
  EXPECT_THAT(qwen.sliding_layers(), ElementsAre(false, true, true));
  ASSERT_OK_AND_ASSIGN(
      ModelSpec back,
      ModelSpecFromHfConfig(HfConfigFromModelSpec(qwen, "float32"), "x", "m"));
  EXPECT_EQ(back.DebugString(), qwen.DebugString());
  ASSERT_OK_AND_ASSIGN(
      ModelSpec typed,
      FromText(absl::StrReplaceAll(
          on, {{"\"max_window_layers\": 1",
                "\"layer_types\": [\"sliding_attention\", "
                "\"full_attention\", \"sliding_attention\"]"}})));
  EXPECT_THAT(typed.sliding_layers(), ElementsAre(true, false, true));
  // Every layer windowed: no per-layer list.
  ASSERT_OK_AND_ASSIGN(
      ModelSpec all,
      FromText(absl::StrReplaceAll(
          on, {{"\"max_window_layers\": 1", "\"max_window_layers\": 0"}})));
  EXPECT_EQ(all.sliding_window(), 8);
  EXPECT_EQ(all.sliding_layers_size(), 0);
  ASSERT_OK_AND_ASSIGN(
      ModelSpec mistral,
      FromText(absl::StrReplaceAll(
          kClassicQwen2, {{"Qwen2ForCausalLM", "MistralForCausalLM"}})));
  EXPECT_EQ(mistral.sliding_layers_size(), 0);
}

TEST(HfConfigTest, RejectsWhatTheModelDoesNotComputeNamingKeyAndValue) {
  const std::vector<BadCase> cases = {
      {"Qwen2ForCausalLM", "GPT2LMHeadModel",
       "\"architectures\" is [\"GPT2LMHeadModel\"]"},
      {"\"rope_scaling\": null",
       "\"rope_scaling\": {\"type\": \"mrope\", \"factor\": 4.0}",
       "\"rope_scaling.type\" is \"mrope\""},
      {"\"rope_scaling\": null",
       "\"rope_parameters\": {\"rope_type\": \"llama3\", \"factor\": 8}",
       "original_max_position_embeddings (or max_position_embeddings) is "
       "required"},
      {"\"rope_scaling\": null", "\"partial_rotary_factor\": 0.5",
       "\"partial_rotary_factor\" is 0.5: only Phi3ForCausalLM"},
      {"\"rope_scaling\": null",
       "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 5e5}",
       "\"rope_theta\" is 1000000.0: disagrees"},
      {"\"use_sliding_window\": false",
       "\"use_sliding_window\": true, \"max_window_layers\": -1",
       "\"max_window_layers\" is -1: expected a non-negative integer"},
      {"\"use_sliding_window\": false",
       "\"use_sliding_window\": true, \"layer_types\": [\"full_attention\"]",
       "\"layer_types\" is [\"full_attention\"]: expected one entry per "
       "layer (3)"},
      {"\"silu\"", "\"gelu\"", "\"hidden_act\" is \"gelu\""},
      {"\"hidden_size\": 64,", "", "\"hidden_size\": missing"},
      {"\"num_hidden_layers\": 3", "\"num_hidden_layers\": 2.5",
       "\"num_hidden_layers\" is 2.5: expected a positive integer"},
      {"\"rope_scaling\": null", "\"attention_bias\": true",
       "\"attention_bias\" is true: it adds an o_proj bias"},
      {"\"rope_scaling\": null", "\"mlp_bias\": true", "\"mlp_bias\" is true"},
      {"\"rope_scaling\": null",
       "\"layer_types\": [\"full_attention\", \"chunked_attention\"]",
       "\"layer_types[1]\" is \"chunked_attention\""},
      {"\"hidden_size\": 64,", "\"hidden_size\": 66,",
       "\"hidden_size\" is 66: not divisible by num_attention_heads"},
      {"\"rope_scaling\": null", "\"attention_dropout\": 0.1",
       "\"attention_dropout\" is 0.1"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.to);
    const std::string text =
        absl::StrReplaceAll(kClassicQwen2, {{c.from, c.to}});
    ASSERT_NE(text, kClassicQwen2);
    EXPECT_THAT(
        FromText(text).status(),
        StatusIs(absl::StatusCode::kInvalidArgument,
                 AllOf(HasSubstr("dir/config.json"), HasSubstr(c.message))));
  }
  const std::string mistral = absl::StrReplaceAll(
      kClassicQwen2, {{"Qwen2ForCausalLM", "MistralForCausalLM"}});
  // Mistral's window: kept, for Transformer::Create to hold sequences to.
  absl::StatusOr<ModelSpec> windowed = FromText(mistral);
  ASSERT_TRUE(windowed.ok()) << windowed.status();
  EXPECT_EQ(windowed->sliding_window(), 32768);
  EXPECT_THAT(LoadHfConfig("no/such/config.json", "x").status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no/such")));
}

}  // namespace
}  // namespace model
}  // namespace zero3
