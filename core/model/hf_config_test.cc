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

// gemma-2-2b's config.json as the hub ships it (transformers 4.x layout,
// hidden_act beside hidden_activation, no layer_types), scaled down.
constexpr char kGemma2[] = R"({
  "architectures": ["Gemma2ForCausalLM"],
  "attn_logit_softcapping": 50.0,
  "final_logit_softcapping": 30.0,
  "head_dim": 16,
  "hidden_act": "gelu_pytorch_tanh",
  "hidden_activation": "gelu_pytorch_tanh",
  "hidden_size": 64,
  "intermediate_size": 160,
  "max_position_embeddings": 8192,
  "model_type": "gemma2",
  "num_attention_heads": 8,
  "num_hidden_layers": 4,
  "num_key_value_heads": 4,
  "query_pre_attn_scalar": 256,
  "rms_norm_eps": 1e-06,
  "rope_theta": 10000.0,
  "sliding_window": 4096,
  "torch_dtype": "float32",
  "vocab_size": 256
})";

// gemma-3-1b-pt's (4.x layout: rope_local_base_freq, sliding_window_pattern,
// and here a linear rope_scaling as the 4B and 12B text models have).
constexpr char kGemma3[] = R"({
  "architectures": ["Gemma3ForCausalLM"],
  "attn_logit_softcapping": null,
  "final_logit_softcapping": null,
  "head_dim": 16,
  "hidden_activation": "gelu_pytorch_tanh",
  "hidden_size": 64,
  "intermediate_size": 160,
  "max_position_embeddings": 32768,
  "model_type": "gemma3_text",
  "num_attention_heads": 4,
  "num_hidden_layers": 7,
  "num_key_value_heads": 1,
  "query_pre_attn_scalar": 256,
  "rms_norm_eps": 1e-06,
  "rope_local_base_freq": 10000,
  "rope_scaling": {"rope_type": "linear", "factor": 8.0},
  "rope_theta": 1000000,
  "sliding_window": 512,
  "sliding_window_pattern": 6,
  "vocab_size": 256
})";

// Gemma 2 and 3 as transformers reads them: sandwich norms scaling by
// (1 + weight), GeGLU, scaled embeddings, the attention scalar, Gemma 2's
// soft-capping and alternating windows, Gemma 3's q/k norms, one local
// layer RoPE base and five windowed layers in six; tied heads by default.
// Each is written back and read again as the same spec.
TEST(HfConfigTest, MapsGemma2AndGemma3) {
  ASSERT_OK_AND_ASSIGN(ModelSpec g2, FromText(kGemma2));
  EXPECT_EQ(g2.norm_placement(), ModelSpec::NORM_SANDWICH);
  EXPECT_TRUE(g2.norm_unit_offset());
  EXPECT_EQ(g2.mlp_activation(), ModelSpec::GELU_TANH);
  EXPECT_TRUE(g2.scale_embeddings());
  EXPECT_EQ(g2.query_pre_attn_scalar(), 256);
  EXPECT_EQ(g2.attn_logit_softcapping(), 50);
  EXPECT_EQ(g2.final_logit_softcapping(), 30);
  EXPECT_EQ(g2.qk_norm(), ModelSpec::QK_NORM_NONE);
  EXPECT_TRUE(g2.tie_word_embeddings());
  EXPECT_FALSE(g2.qkv_bias());
  EXPECT_EQ(g2.sliding_window(), 4096);
  EXPECT_THAT(g2.sliding_layers(), ElementsAre(true, false, true, false));
  EXPECT_FALSE(g2.has_local_rope_theta());
  ASSERT_OK_AND_ASSIGN(ModelSpec g3, FromText(kGemma3));
  EXPECT_EQ(g3.qk_norm(), ModelSpec::QK_NORM_PER_HEAD);
  EXPECT_FALSE(g3.has_attn_logit_softcapping());
  EXPECT_FALSE(g3.has_final_logit_softcapping());
  EXPECT_EQ(g3.rope_theta(), 1e6);
  EXPECT_EQ(g3.local_rope_theta(), 10000);
  EXPECT_EQ(g3.rope_scaling().type(), RopeScaling::LINEAR);
  EXPECT_THAT(g3.sliding_layers(),
              ElementsAre(true, true, true, true, true, false, true));
  for (const ModelSpec& spec : {g2, g3}) {
    SCOPED_TRACE(spec.hf_architecture());
    ASSERT_OK_AND_ASSIGN(ModelSpec back,
                         ModelSpecFromHfConfig(
                             HfConfigFromModelSpec(spec, "float32"), "x", "m"));
    EXPECT_EQ(back.DebugString(), spec.DebugString());
  }
  // Gemma 2's defaults where its keys are absent: caps 50 and 30; null
  // turns a cap off.
  ASSERT_OK_AND_ASSIGN(ModelSpec defaults,
                       FromText(absl::StrReplaceAll(
                           kGemma2, {{"\"attn_logit_softcapping\": 50.0,", ""},
                                     {"\"final_logit_softcapping\": 30.0,",
                                      "\"final_logit_softcapping\": null,"}})));
  EXPECT_EQ(defaults.attn_logit_softcapping(), 50);
  EXPECT_FALSE(defaults.has_final_logit_softcapping());
}

// transformers 5.x writes Gemma 3's RoPE per layer type.
TEST(HfConfigTest, MapsGemma3RopePerLayerType) {
  const std::string v5 = absl::StrReplaceAll(
      kGemma3,
      {{"\"rope_local_base_freq\": 10000,", ""},
       {"\"rope_theta\": 1000000,", ""},
       {"\"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 8.0},",
        "\"rope_parameters\": {\"full_attention\": {\"rope_type\": "
        "\"linear\", \"factor\": 8.0, \"rope_theta\": 1000000.0}, "
        "\"sliding_attention\": {\"rope_type\": \"default\", "
        "\"rope_theta\": 20000.0}},"}});
  ASSERT_OK_AND_ASSIGN(ModelSpec s, FromText(v5));
  EXPECT_EQ(s.rope_theta(), 1e6);
  EXPECT_EQ(s.rope_scaling().type(), RopeScaling::LINEAR);
  EXPECT_EQ(s.rope_scaling().factor(), 8);
  EXPECT_EQ(s.local_rope_theta(), 20000);
}

TEST(HfConfigTest, RejectsWhatGemmaDoesNotComputeNamingKeyAndValue) {
  const std::vector<BadCase> cases = {
      {"\"hidden_activation\": \"gelu_pytorch_tanh\"",
       "\"hidden_activation\": \"gelu\"",
       "\"hidden_activation\" is \"gelu\": zero3's Gemma MLP is GeGLU"},
      {"\"model_type\": \"gemma3_text\",",
       "\"use_bidirectional_attention\": true,",
       "\"use_bidirectional_attention\" is true"},
      {"Gemma3ForCausalLM", "Gemma3ForConditionalGeneration",
       "a vision-language model"},
      {"\"rope_local_base_freq\": 10000,",
       "\"rope_parameters\": {\"sliding_attention\": {\"rope_type\": "
       "\"linear\", \"factor\": 2}},",
       "\"rope_parameters.sliding_attention.rope_type\" is \"linear\""},
      {"\"query_pre_attn_scalar\": 256", "\"query_pre_attn_scalar\": -1",
       "\"query_pre_attn_scalar\" is -1: expected a positive number"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.to);
    const std::string text = absl::StrReplaceAll(kGemma3, {{c.from, c.to}});
    ASSERT_NE(text, kGemma3);
    EXPECT_THAT(
        FromText(text).status(),
        StatusIs(absl::StatusCode::kInvalidArgument,
                 AllOf(HasSubstr("dir/config.json"), HasSubstr(c.message))));
  }
  // RoPE per layer type is Gemma 3's only.
  EXPECT_THAT(
      FromText(absl::StrReplaceAll(
                   kClassicQwen2, {{"\"rope_scaling\": null",
                                    "\"rope_parameters\": {\"full_attention\": "
                                    "{\"rope_type\": \"default\"}}"}}))
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("RoPE per layer type is Gemma 3's")));
}

}  // namespace
}  // namespace model
}  // namespace zero3
