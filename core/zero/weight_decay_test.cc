// Copyright 2026 The zero3 Authors.

#include "core/zero/weight_decay.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace zero {
namespace {

TEST(WeightDecayTest, TrainerGroupingByName) {
  // Hugging Face names (Qwen2, Llama; Qwen3's q_norm) and zero3's own.
  for (const char* name :
       {"model.layers.0.input_layernorm.weight",
        "model.layers.3.post_attention_layernorm.weight", "model.norm.weight",
        "model.layers.0.self_attn.q_proj.bias",
        "model.layers.1.mlp.up_proj.bias",
        "model.layers.0.self_attn.q_norm.weight", "encoder.LayerNorm.weight",
        "h.0.ln_f_rmsnorm", "layers.0.input_layernorm", "norm",
        "layers.2.k_proj.bias"}) {
    EXPECT_FALSE(TrainerDecays(name)) << name;
  }
  for (const char* name :
       {"model.embed_tokens.weight", "lm_head.weight",
        "model.layers.0.self_attn.q_proj.weight",
        "model.layers.0.mlp.down_proj.weight", "embed_tokens", "lm_head",
        "layers.0.o_proj.weight",
        // Not a component "norm" nor one ending in "_norm".
        "model.normalizer.weight", "model.enorm.weight", "a.norm_in.weight"}) {
    EXPECT_TRUE(TrainerDecays(name)) << name;
  }
}

TEST(WeightDecayTest, ParamWeightDecays) {
  const std::vector<std::string> names = {"embed_tokens",
                                          "layers.0.q_proj.bias", "norm"};
  EXPECT_THAT(ParamWeightDecays(names, 0.1f, false),
              ::testing::ElementsAre(0.1f, 0.1f, 0.1f));
  EXPECT_THAT(ParamWeightDecays(names, 0.1f, true),
              ::testing::ElementsAre(0.1f, 0.0f, 0.0f));
}

TEST(WeightDecayTest, RunsSplitAtChangesOfDecay) {
  // Two ranks: partitions 5, 1, 3, 2 (numels 10, 2, 5, 3).
  const ShardLayout layout({10, 2, 5, 3}, 2, 0);
  const std::vector<float> decays = {0.1f, 0.0f, 0.0f, 0.1f};
  const std::vector<DecayRun> runs =
      DecayRuns(layout, decays, layout.Range(0, 3));
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].offset, 0);
  EXPECT_EQ(runs[0].elements, 5);
  EXPECT_EQ(runs[0].weight_decay, 0.1f);
  EXPECT_EQ(runs[1].offset, 5);
  EXPECT_EQ(runs[1].elements, 4);  // parameters 1 and 2 together
  EXPECT_EQ(runs[1].weight_decay, 0.0f);
  EXPECT_EQ(runs[2].offset, 9);
  EXPECT_EQ(runs[2].elements, 2);
  // Equal decays: one run of the whole range.
  const std::vector<DecayRun> one =
      DecayRuns(layout, {0.1f, 0.1f, 0.1f, 0.1f}, layout.Range(1, 3));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].offset, 5);
  EXPECT_EQ(one[0].elements, 6);

  const std::vector<DecayRun> clipped = ClipRuns(runs, 3, 5);  // [3, 8)
  ASSERT_EQ(clipped.size(), 2u);
  EXPECT_EQ(clipped[0].offset, 3);
  EXPECT_EQ(clipped[0].elements, 2);
  EXPECT_EQ(clipped[1].offset, 5);
  EXPECT_EQ(clipped[1].elements, 3);
  EXPECT_EQ(clipped[1].weight_decay, 0.0f);
}

}  // namespace
}  // namespace zero
}  // namespace zero3
