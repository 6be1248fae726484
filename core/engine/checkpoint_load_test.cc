// Copyright 2026 The zero3 Authors.
//
// Loading a Hugging Face checkpoint into ZeRO-3: each rank reads only the
// bytes of its own partitions, in small host buffers, and ends up with
// exactly the checkpoint's values.

#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/engine/engine.h"
#include "core/io/safetensors.h"
#include "core/kernels/dtype.h"
#include "core/model/data.h"
#include "core/model/hf_checkpoint.h"
#include "core/model/param_source.h"
#include "core/util/check.h"
#include "core/util/status_macros.h"
#include "gtest/gtest.h"
#include "sim/simulator.h"
#include "sim/testing/test_profile.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace engine {
namespace {

constexpr char kConfig[] = R"({
  "architectures": ["LlamaForCausalLM"],
  "hidden_act": "silu",
  "vocab_size": 4096,
  "hidden_size": 64,
  "intermediate_size": 96,
  "num_hidden_layers": 2,
  "num_attention_heads": 4,
  "num_key_value_heads": 2,
  "tie_word_embeddings": false
})";

// A BF16 checkpoint of seeded values in a fresh directory; `values` gets
// each parameter's values as fp32.
std::string WriteCheckpoint(std::vector<std::vector<float>>* values,
                            int64_t* file_bytes) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/ckpt");
  mkdir(dir.c_str(), 0755);
  std::ofstream(dir + "/config.json") << kConfig;
  model::ModelSpec spec;
  spec.set_vocab_size(4096);
  spec.set_hidden_size(64);
  spec.set_intermediate_size(96);
  spec.set_num_layers(2);
  spec.set_num_heads(4);
  spec.set_num_kv_heads(2);
  spec.set_head_dim(16);
  spec.set_tie_word_embeddings(false);
  spec.set_qkv_bias(false);
  const model::SeededInit seeded(spec, 7);
  std::vector<std::string> bytes;
  std::vector<io::TensorToWrite> tensors;
  const std::vector<model::ParamInfo> params = model::ModelParams(spec);
  bytes.reserve(params.size());
  for (const model::ParamInfo& p : params) {
    std::vector<float> v(p.numel());
    ZR_CHECK(seeded.Fill(p, 0, p.numel(), v.data()).ok());
    std::string raw(p.numel() * 2, '\0');
    for (int64_t i = 0; i < p.numel(); ++i) {
      const uint16_t h = kernels::FloatToBF16(v[i]);
      std::memcpy(&raw[i * 2], &h, 2);
      v[i] = kernels::BF16ToFloat(h);
    }
    values->push_back(v);
    bytes.push_back(std::move(raw));
    std::vector<int64_t> shape = {p.rows, p.cols};
    if (p.init != model::Init::kNormal) shape = {p.cols};
    tensors.push_back({model::HfTensorName(p.name), io::TensorDType::kBF16,
                       shape, bytes.back()});
  }
  ZR_CHECK(io::WriteSafetensors(dir + "/model.safetensors", tensors).ok());
  struct stat st;
  stat((dir + "/model.safetensors").c_str(), &st);
  *file_bytes = st.st_size;
  return dir;
}

TEST(CheckpointLoadTest, EachRankReadsOnlyItsPartitions) {
  std::vector<std::vector<float>> values;
  int64_t file_bytes = 0;
  const std::string dir = WriteCheckpoint(&values, &file_bytes);
  constexpr int kRanks = 4;
  sim::SimOptions so;
  so.profile = sim::TestProfile();
  so.world_size = kRanks;
  so.mode = sim::SimMode::kData;
  ASSERT_OK_AND_ASSIGN(auto world, sim::SimWorld::Create(so));
  auto data = model::SyntheticBatches(4096, 1);
  std::vector<model::HfCheckpoint::ReadStats> stats(kRanks);
  std::vector<int64_t> own_bytes(kRanks, 0);
  std::vector<std::vector<std::vector<float>>> shards(kRanks);
  ASSERT_OK(world->Run([&](runtime::Runtime& rt) -> absl::Status {
    // Every rank opens the checkpoint itself, as separate processes do.
    ZR_ASSIGN_OR_RETURN(auto checkpoint, model::HfCheckpoint::Open(dir));
    zero::ZeroOptions o;
    o.seq = 8;
    o.offload_optimizer = rt.rank() % 2 == 0;  // both paths; same layout
    ZR_ASSIGN_OR_RETURN(auto e,
                        Engine::Create(checkpoint->spec(), o, data.get(), rt,
                                       checkpoint.get()));
    stats[rt.rank()] = checkpoint->read_stats();
    for (int p = 0; p < e->layout().num_params(); ++p) {
      own_bytes[rt.rank()] += 2 * e->layout().ValidElements(p);
      ZR_ASSIGN_OR_RETURN(std::vector<float> shard, e->MasterParam(p));
      shards[rt.rank()].push_back(std::move(shard));
    }
    return absl::OkStatus();
  }));
  int64_t total_read = 0;
  for (int r = 0; r < kRanks; ++r) {
    SCOPED_TRACE(absl::StrCat("rank ", r));
    EXPECT_EQ(stats[r].bytes_read, own_bytes[r]);
    EXPECT_LT(stats[r].bytes_read * 3, file_bytes);  // a quarter of the model
    EXPECT_LE(stats[r].largest_buffer, int64_t{2} << 16);  // 64 Ki elements
    EXPECT_LT(stats[r].largest_buffer * 8, file_bytes);
    total_read += stats[r].bytes_read;
  }
  // Every tensor byte was read exactly once over all ranks.
  int64_t tensor_bytes = 0;
  for (const auto& v : values)
    tensor_bytes += 2 * static_cast<int64_t>(v.size());
  EXPECT_EQ(total_read, tensor_bytes);
  for (size_t p = 0; p < values.size(); ++p) {
    std::vector<float> full;
    for (int r = 0; r < kRanks; ++r) {
      full.insert(full.end(), shards[r][p].begin(), shards[r][p].end());
    }
    ASSERT_EQ(full, values[p]) << "parameter " << p;
  }
}

}  // namespace
}  // namespace engine
}  // namespace zero3
