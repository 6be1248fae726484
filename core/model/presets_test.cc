// Copyright 2026 The zero3 Authors.

#include "core/model/presets.h"

#include <cstdio>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace model {
namespace {

using ::testing::HasSubstr;
using ::zero3::testing::StatusIs;

// Published parameter counts (Hugging Face model cards / safetensors
// metadata of Qwen/Qwen2.5-* and meta-llama/Meta-Llama-3-70B).
TEST(PresetsTest, ParameterCountsMatchPublishedFigures) {
  const struct {
    const char* name;
    int64_t count;
  } kExpected[] = {
      {"qwen2.5-0.5b", 494032768},
      {"qwen2.5-1.5b", 1543714304},
      {"qwen2.5-3b", 3085938688},
      {"qwen2.5-7b", 7615616512},
      {"qwen2.5-72b", 72706203648},
      {"llama-3-70b", 70553706496},
      // transformers' num_parameters() of each family's config.
      {"llama-3.2-1b", 1235814400},
      {"llama-3.2-3b", 3212749824},
      {"llama-3.1-8b", 8030261248},
      {"qwen3-0.6b", 596049920},
      {"qwen3-1.7b", 1720574976},
      {"qwen3-4b", 4022468096},
      {"qwen3-8b", 8190735360},
      {"qwen3-14b", 14768307200},
      {"qwen3-32b", 32762123264},
      {"phi-3-mini", 3821079552},
      {"olmo-2-1b", 1484916736},
      {"olmo-2-7b", 7298617344},
      {"gemma-2-2b", 2614341888},
      {"gemma-2-9b", 9241705984},
      {"gemma-3-1b", 999885952},
      {"gemma-3-4b", 3880263168},
      {"gemma-3-12b", 11766034176},
  };
  for (const auto& e : kExpected) {
    ASSERT_OK_AND_ASSIGN(ModelSpec spec, LoadModelSpec(e.name));
    EXPECT_EQ(ParameterCount(spec), e.count) << e.name;
  }
}

TEST(PresetsTest, TinyIsSmallAndUneven) {
  ASSERT_OK_AND_ASSIGN(ModelSpec spec, LoadModelSpec("tiny"));
  EXPECT_EQ(spec.head_dim(), 6);
  EXPECT_LT(ParameterCount(spec), 100000);
  EXPECT_NE(spec.hidden_size() % 8, 0);  // exercises padding of shards
}

TEST(PresetsTest, SpecFromFile) {
  const std::string path = ::testing::TempDir() + "/spec.textproto";
  std::ofstream(path) << "vocab_size: 300 hidden_size: 64 intermediate_size: "
                         "96 num_layers: 3 num_heads: 8 num_kv_heads: 4\n";
  ASSERT_OK_AND_ASSIGN(ModelSpec spec, LoadModelSpec(path));
  EXPECT_EQ(spec.head_dim(), 8);
  EXPECT_EQ(spec.name(), path);
}

TEST(PresetsTest, ErrorsNameTheProblem) {
  EXPECT_THAT(LoadModelSpec("qwen9"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("qwen2.5-1.5b")));
  const std::string path = ::testing::TempDir() + "/bad.textproto";
  std::ofstream(path) << "vocab_size: 300\nhidden_sise: 64\n";
  EXPECT_THAT(LoadModelSpec(path), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr("line 2")));
  std::ofstream(path) << "vocab_size: 300 hidden_size: 96 intermediate_size: "
                         "96 num_layers: 3 num_heads: 6 num_kv_heads: 4\n";
  EXPECT_THAT(LoadModelSpec(path),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("multiple of num_kv_heads")));
  // Heads that do not divide hidden_size, without head_dim: the message
  // names those two, not the head_dim the user never set.
  std::ofstream(path) << "vocab_size: 300 hidden_size: 100 intermediate_size: "
                         "96 num_layers: 3 num_heads: 3 num_kv_heads: 1\n";
  EXPECT_THAT(LoadModelSpec(path),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("hidden_size 100 is not a multiple of "
                                 "num_heads 3")));
}

}  // namespace
}  // namespace model
}  // namespace zero3
