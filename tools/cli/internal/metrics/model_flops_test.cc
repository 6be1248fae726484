// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/metrics/model_flops.h"

#include "core/model/presets.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace metrics {
namespace {

model::ModelSpec Small(bool tied) {
  model::ModelSpec s;
  s.set_vocab_size(100);
  s.set_hidden_size(8);
  s.set_intermediate_size(12);
  s.set_num_layers(3);
  s.set_num_heads(4);
  s.set_num_kv_heads(2);
  s.set_head_dim(2);
  s.set_tie_word_embeddings(tied);
  s.set_qkv_bias(true);
  return s;
}

// N counted weight by weight from the shapes: per layer q 8x8 (+8 bias),
// k and v 8x4 (+4 bias each), o 8x8, gate and up 8x12, down 12x8, two norms
// of 8; a final norm of 8; the output layer 100x8.
TEST(ModelFlopsTest, CountsMatmulParametersByHand) {
  const int64_t layer = (64 + 8) + 2 * (32 + 4) + 64 + 3 * 96 + 2 * 8;
  const int64_t n = 3 * layer + 8 + 800;
  EXPECT_EQ(MatmulParameterCount(Small(true)), n);
  // Untied: a second table, the input embedding, which is a lookup.
  EXPECT_EQ(MatmulParameterCount(Small(false)), n);
  EXPECT_EQ(model::ParameterCount(Small(false)), n + 800);
}

TEST(ModelFlopsTest, SixNPlusAttention) {
  const model::ModelSpec s = Small(true);
  const double n = static_cast<double>(MatmulParameterCount(s));
  // 12 * L * H * D * S = 12 * 3 * 4 * 2 * 16 per token.
  EXPECT_DOUBLE_EQ(TrainingFlops(s, 16, 64),
                   64 * (6 * n + 12 * 3 * 4 * 2 * 16));
  EXPECT_DOUBLE_EQ(TrainingFlops(s, 16, 0), 0);
}

// Qwen2.5-1.5B: 1.54 B parameters (tied); at 2048 tokens per sequence
// attention adds 12 * 28 * 1536 * 2048 = 1.06 GFLOP per token to
// 6 * 1.54 G = 9.3 GFLOP.
TEST(ModelFlopsTest, Qwen15B) {
  const model::ModelSpec s = model::LoadModelSpec("qwen2.5-1.5b").value();
  const double per_token = TrainingFlops(s, 2048, 1);
  EXPECT_NEAR(per_token / 1e9, 6 * 1.5437 + 1.0570, 0.01);
}

TEST(ModelFlopsTest, Mfu) {
  // 989 TFLOP/s for 2 s on 4 GPUs is 7.912e15 FLOPs.
  EXPECT_DOUBLE_EQ(Mfu(7.912e15 / 2, 2, 4, 989), 0.5);
  EXPECT_EQ(Mfu(1e12, 0, 4, 989), 0);
}

}  // namespace
}  // namespace metrics
}  // namespace internal
}  // namespace cli
}  // namespace zero3
