// Copyright 2026 The zero3 Authors.

#include "core/model/hf_checkpoint.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/io/safetensors.h"
#include "core/kernels/dtype.h"
#include "core/util/check.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace model {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::zero3::testing::StatusIs;

constexpr char kUntied[] = "testing/testdata/hf/qwen2_untied";

// A checkpoint's tensors as written: name -> (dtype, shape, bytes).
struct Stored {
  io::TensorDType dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};
using Tensors = std::map<std::string, Stored>;

Tensors ReadAll(const std::string& path) {
  Tensors out;
  auto file = io::SafetensorsFile::Open(path);
  ZR_CHECK(file.ok()) << file.status();
  for (const io::TensorEntry& t : (*file)->tensors()) {
    std::string bytes(t.bytes(), '\0');
    ZR_CHECK((*file)->Read(t, 0, t.bytes(), &bytes[0]).ok());
    out[t.name] = Stored{t.dtype, t.shape, bytes};
  }
  return out;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// A fresh checkpoint directory with `config` and the files of `shards`
// (file name -> tensors).
std::string MakeDir(const std::string& name, const std::string& config,
                    const std::map<std::string, Tensors>& shards) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir =
      absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/", name);
  mkdir(dir.c_str(), 0755);
  std::ofstream(dir + "/config.json") << config;
  for (const auto& [file, tensors] : shards) {
    std::vector<io::TensorToWrite> w;
    for (const auto& [n, t] : tensors)
      w.push_back({n, t.dtype, t.shape, t.bytes});
    ZR_CHECK(io::WriteSafetensors(absl::StrCat(dir, "/", file), w).ok());
  }
  return dir;
}

// Every parameter's values through Fill, in pieces of 5 elements.
std::vector<std::vector<float>> FillAll(const HfCheckpoint& c) {
  std::vector<std::vector<float>> out;
  for (const ParamInfo& p : ModelParams(c.spec())) {
    std::vector<float> v(p.numel());
    for (int64_t i = 0; i < p.numel(); i += 5) {
      const int64_t n = std::min<int64_t>(5, p.numel() - i);
      ZR_CHECK(c.Fill(p, i, n, v.data() + i).ok());
    }
    out.push_back(v);
  }
  return out;
}

TEST(HfCheckpointTest, NamesFollowTransformers) {
  EXPECT_EQ(HfTensorName("embed_tokens"), "model.embed_tokens.weight");
  EXPECT_EQ(HfTensorName("layers.3.k_proj.bias"),
            "model.layers.3.self_attn.k_proj.bias");
  EXPECT_EQ(HfTensorName("layers.0.down_proj.weight"),
            "model.layers.0.mlp.down_proj.weight");
  EXPECT_EQ(HfTensorName("layers.1.post_attention_layernorm"),
            "model.layers.1.post_attention_layernorm.weight");
  EXPECT_EQ(HfTensorName("norm"), "model.norm.weight");
  EXPECT_EQ(HfTensorName("lm_head"), "lm_head.weight");
}

TEST(HfCheckpointTest, FillsExactValuesInAnyRange) {
  ASSERT_OK_AND_ASSIGN(auto c, HfCheckpoint::Open(kUntied));
  EXPECT_EQ(c->spec().name(), "qwen2_untied");
  const Tensors stored = ReadAll(absl::StrCat(kUntied, "/model.safetensors"));
  const std::vector<ParamInfo> params = ModelParams(c->spec());
  const std::vector<std::vector<float>> got = FillAll(*c);
  for (const ParamInfo& p : params) {
    const Stored& s = stored.at(HfTensorName(p.name));
    ASSERT_EQ(s.bytes.size(), got[p.id].size() * 4) << p.name;
    EXPECT_EQ(std::memcmp(s.bytes.data(), got[p.id].data(), s.bytes.size()), 0)
        << p.name;
  }
  EXPECT_EQ(c->read_stats().largest_buffer, 0);  // fp32 goes straight in
}

TEST(HfCheckpointTest, ConvertsBf16AndF16ExactlyAndReadsShards) {
  const std::string config = Slurp(absl::StrCat(kUntied, "/config.json"));
  Tensors half = ReadAll(absl::StrCat(kUntied, "/model.safetensors"));
  int i = 0;
  std::string index = "{\"metadata\": {}, \"weight_map\": {";
  std::map<std::string, Tensors> shards;
  for (auto& [name, t] : half) {
    const bool bf16 = i % 2 == 0;
    const int64_t n = static_cast<int64_t>(t.bytes.size() / 4);
    std::string out(n * 2, '\0');
    for (int64_t k = 0; k < n; ++k) {
      float v;
      std::memcpy(&v, &t.bytes[k * 4], 4);
      const uint16_t h =
          bf16 ? kernels::FloatToBF16(v) : kernels::FloatToF16(v);
      std::memcpy(&out[k * 2], &h, 2);
    }
    t = Stored{bf16 ? io::TensorDType::kBF16 : io::TensorDType::kF16, t.shape,
               out};
    const std::string file =
        absl::StrCat("model-0000", i % 3 + 1, "-of-00003.safetensors");
    shards[file][name] = t;
    absl::StrAppend(&index, i > 0 ? ", " : "", "\"", name, "\": \"", file,
                    "\"");
    ++i;
  }
  index += "}}";
  const std::string dir = MakeDir("sharded", config, shards);
  std::ofstream(dir + "/model.safetensors.index.json") << index;
  ASSERT_OK_AND_ASSIGN(auto c, HfCheckpoint::Open(dir));
  const std::vector<std::vector<float>> got = FillAll(*c);
  for (const ParamInfo& p : ModelParams(c->spec())) {
    const Stored& s = half.at(HfTensorName(p.name));
    for (int64_t k = 0; k < p.numel(); ++k) {
      uint16_t h;
      std::memcpy(&h, &s.bytes[k * 2], 2);
      const float want = s.dtype == io::TensorDType::kBF16
                             ? kernels::BF16ToFloat(h)
                             : kernels::F16ToFloat(h);
      ASSERT_EQ(got[p.id][k], want) << p.name << " element " << k;
    }
  }
  EXPECT_EQ(c->read_stats().largest_buffer, 5 * 2);
}

TEST(HfCheckpointTest, RejectsBadTensorsNamingFileAndTensor) {
  const std::string config = Slurp(absl::StrCat(kUntied, "/config.json"));
  const Tensors good = ReadAll(absl::StrCat(kUntied, "/model.safetensors"));
  const std::string norm = "model.norm.weight";
  struct Case {
    std::string name;
    Tensors tensors;
    std::string config;
    std::string message;
  };
  std::vector<Case> cases;
  Tensors missing = good;
  missing.erase(norm);
  cases.push_back({"missing", missing, config,
                   "missing tensor 'model.norm.weight' (shape [32])"});
  Tensors extra = good;
  extra["model.layers.0.self_attn.o_proj.bias"] = good.at(norm);
  cases.push_back({"extra", extra, config,
                   "extra tensor 'model.layers.0.self_attn.o_proj.bias'"});
  Tensors shape = good;
  shape[norm].shape = {2, 16};
  cases.push_back({"shape", shape, config,
                   "tensor 'model.norm.weight' has shape [2, 16]; config.json "
                   "gives [32]"});
  Tensors dtype = good;
  dtype[norm].dtype = io::TensorDType::kI32;
  cases.push_back({"dtype", dtype, config,
                   "tensor 'model.norm.weight' is I32; zero3 reads F32"});
  std::string tied = config;
  tied.replace(tied.find("\"tie_word_embeddings\": false"), 28,
               "\"tie_word_embeddings\": true");
  cases.push_back(
      {"tied_with_head", good, tied, "extra tensor 'lm_head.weight'"});
  Tensors headless = good;
  headless.erase("lm_head.weight");
  cases.push_back({"untied_without_head", headless, config,
                   "missing tensor 'lm_head.weight'"});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string dir =
        MakeDir(c.name, c.config, {{"model.safetensors", c.tensors}});
    EXPECT_THAT(HfCheckpoint::Open(dir).status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr(c.name), HasSubstr(c.message))));
  }
  const std::string empty = MakeDir("no_weights", config, {});
  EXPECT_THAT(HfCheckpoint::Open(empty).status(),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("neither model.safetensors nor")));
  // A truncated file: the safetensors reader's check, naming the file.
  const std::string cut =
      MakeDir("truncated", config, {{"model.safetensors", good}});
  const std::string bytes = Slurp(cut + "/model.safetensors");
  std::ofstream(cut + "/model.safetensors", std::ios::trunc)
      << bytes.substr(0, bytes.size() - 100);
  EXPECT_THAT(HfCheckpoint::Open(cut).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("truncated/model.safetensors"),
                             HasSubstr("reach past the data section"))));
}

}  // namespace
}  // namespace model
}  // namespace zero3
