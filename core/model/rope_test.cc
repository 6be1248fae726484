// Copyright 2026 The zero3 Authors.

#include "core/model/rope.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/config/json.h"
#include "core/model/hf_config.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace model {
namespace {

using config::JsonValue;

JsonValue Golden() {
  std::ifstream in("testing/testdata/rope/rope_golden.json");
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<JsonValue> root = config::ParseJson(text.str());
  EXPECT_TRUE(root.ok()) << root.status();
  return root.ok() ? *root : JsonValue::Object();
}

// Every rope_type in both config layouts: the config read as zero3 reads a
// config.json, the frequencies for the case's sequence length against
// transformers' (tools/oracle/make_rope_golden.py), to float32 rounding.
TEST(RopeTest, MatchesTransformers) {
  const JsonValue golden = Golden();
  const JsonValue* cases = golden.Find("cases");
  ASSERT_NE(cases, nullptr);
  ASSERT_GE(cases->array().size(), 10u);
  for (const JsonValue& c : cases->array()) {
    const std::string name = c.Find("name")->string_value();
    const int64_t seq = *c.Find("seq")->AsExactInt64();
    SCOPED_TRACE(absl::StrCat(name, ", seq ", seq));
    absl::StatusOr<ModelSpec> spec =
        ModelSpecFromHfConfig(*c.Find("config"), "config.json", name);
    ASSERT_TRUE(spec.ok()) << spec.status();
    const RopeFrequencies rope = ComputeRope(*spec, seq);
    const auto& want = c.Find("inv_freq")->array();
    ASSERT_EQ(rope.inv_freq.size(), want.size());
    EXPECT_EQ(rope.rotary_dim, 2 * static_cast<int64_t>(want.size()));
    for (size_t i = 0; i < want.size(); ++i) {
      const double w = want[i].number_value();
      EXPECT_NEAR(rope.inv_freq[i], w, 1e-6 * std::abs(w)) << "pair " << i;
    }
    EXPECT_NEAR(rope.attention_scaling,
                c.Find("attention_scaling")->number_value(), 1e-6);
    EXPECT_EQ(rope.is_default,
              c.Find("rope_type")->string_value() == "default" &&
                  rope.rotary_dim == spec->head_dim());
  }
}

// The kernels' arguments: no table for the default rotation (the kernels
// compute theta^(-2i/d) as they always have), the table otherwise.
TEST(RopeTest, RotaryArgs) {
  ModelSpec spec;
  spec.set_head_dim(8);
  spec.set_rope_theta(10000);
  kernels::RotaryArgs args;
  SetRotaryFrequencies(spec, ComputeRope(spec, 4), &args);
  EXPECT_FALSE(args.has_inv_freq);
  EXPECT_EQ(args.rotary_dim, 0);
  EXPECT_EQ(args.attention_scaling, 1.0f);

  spec.mutable_rope_scaling()->set_type(RopeScaling::LINEAR);
  spec.mutable_rope_scaling()->set_factor(2);
  spec.set_partial_rotary_factor(0.5);
  ASSERT_TRUE(ValidateRope(spec).ok());
  SetRotaryFrequencies(spec, ComputeRope(spec, 4), &args);
  EXPECT_TRUE(args.has_inv_freq);
  EXPECT_EQ(args.rotary_dim, 4);
  EXPECT_FLOAT_EQ(args.inv_freq[0], 0.5f);
  EXPECT_FLOAT_EQ(args.inv_freq[1], 0.5f / 100.0f);
}

TEST(RopeTest, RefusesWhatItCannotCompute) {
  ModelSpec spec;
  spec.set_head_dim(8);
  spec.set_partial_rotary_factor(0.1);  // 0 dimensions
  EXPECT_FALSE(ValidateRope(spec).ok());
  spec.set_partial_rotary_factor(1.5);
  EXPECT_FALSE(ValidateRope(spec).ok());
  spec.set_partial_rotary_factor(1);
  RopeScaling* r = spec.mutable_rope_scaling();
  r->set_type(RopeScaling::LLAMA3);
  r->set_factor(8);
  EXPECT_FALSE(ValidateRope(spec).ok()) << "no pretrained context";
  r->set_original_max_position_embeddings(8192);
  EXPECT_FALSE(ValidateRope(spec).ok()) << "no frequency factors";
  r->set_low_freq_factor(1);
  r->set_high_freq_factor(4);
  EXPECT_TRUE(ValidateRope(spec).ok());
  r->set_type(RopeScaling::LONGROPE);
  r->add_short_factor(1);
  EXPECT_FALSE(ValidateRope(spec).ok()) << "one factor for four pairs";
  r->set_type(RopeScaling::LINEAR);
  r->set_factor(-1);
  EXPECT_FALSE(ValidateRope(spec).ok());
  spec.set_head_dim(1024);
  r->set_factor(2);
  EXPECT_FALSE(ValidateRope(spec).ok()) << "more pairs than the table";
}

// hf_config: an unknown rope_type names the key and the types zero3 knows.
TEST(RopeTest, UnknownTypeNamesTheKey) {
  absl::StatusOr<JsonValue> c = config::ParseJson(R"({
    "architectures": ["LlamaForCausalLM"], "vocab_size": 8,
    "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1,
    "num_attention_heads": 2, "rope_scaling": {"rope_type": "mrope"}})");
  ASSERT_TRUE(c.ok());
  absl::StatusOr<ModelSpec> spec = ModelSpecFromHfConfig(*c, "c.json", "x");
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("rope_scaling.rope_type"),
            std::string::npos)
      << spec.status();
  EXPECT_NE(spec.status().message().find("mrope"), std::string::npos);
}

}  // namespace
}  // namespace model
}  // namespace zero3
