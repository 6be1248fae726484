// Copyright 2026 The zero3 Authors.
//
// Exporting a checkpoint as a Hugging Face directory: the directory loads
// as a model whose every value is the checkpoint's master (fp32) or its
// rounding (bf16), and training from it computes the same first loss as
// resuming the checkpoint.

#include "core/engine/checkpoint_export.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/config/json.h"
#include "core/engine/checkpoint.h"
#include "core/engine/checkpoint_manifest.h"
#include "core/engine/checkpoint_test_util.h"
#include "core/engine/engine.h"
#include "core/kernels/dtype.h"
#include "core/model/hf_checkpoint.h"
#include "core/model/presets.h"
#include "core/util/check.h"
#include "core/util/crc32c.h"
#include "core/util/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/simulator.h"
#include "sim/testing/test_profile.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace engine {
namespace {

using ::testing::HasSubstr;
using ::zero3::testing::IsOk;
using ::zero3::testing::StatusIs;

constexpr int kWorld = 2;

zero::ZeroOptions Options() {
  zero::ZeroOptions o;
  o.micro_batch = 2;
  o.seq = 16;
  o.seed = 5;
  o.offload_optimizer = true;
  return o;
}

// Runs `body` on every rank of a fresh simulated world.
absl::Status OnRanks(
    const std::function<absl::Status(runtime::Runtime&)>& body) {
  sim::SimOptions so;
  so.profile = sim::TestProfile();
  so.world_size = kWorld;
  so.mode = sim::SimMode::kData;
  ZR_ASSIGN_OR_RETURN(auto world, sim::SimWorld::Create(so));
  return world->Run(body);
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// `shard` (a safetensors file's bytes) with __metadata__ key `key` set to
// `value`: the header rewritten, its length prefix updated; "" if the key
// is not there.
std::string ForgeMetadata(const std::string& shard, const std::string& key,
                          const std::string& value) {
  uint64_t n = 0;
  std::memcpy(&n, shard.data(), 8);
  std::string header = shard.substr(8, n);
  const std::string quoted = "\"" + key + "\": \"";
  const size_t at = header.find(quoted);
  if (at == std::string::npos) return "";
  const size_t begin = at + quoted.size();
  const size_t end = header.find('"', begin);
  header = header.substr(0, begin) + value + header.substr(end);
  while (header.size() % 8 != 0) header += ' ';
  const uint64_t length = header.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &length, 8);
  return out + header + shard.substr(8 + n);
}

// `manifest` with the size and checksum of file `name` set to `bytes`'s.
std::string WithFile(const std::string& manifest, const std::string& name,
                     const std::string& bytes) {
  absl::StatusOr<config::JsonValue> tree = config::ParseJson(manifest);
  ZR_CHECK(tree.ok());
  config::JsonValue files = *tree->Find("files");
  config::JsonValue updated = config::JsonValue::Array();
  for (config::JsonValue f : files.array()) {
    if (f.Find("name")->string_value() == name) {
      f.Set("bytes",
            config::JsonValue::Int(static_cast<int64_t>(bytes.size())));
      f.Set("crc32c",
            config::JsonValue::String(absl::StrFormat("%08x", Crc32c(bytes))));
    }
    updated.Append(std::move(f));
  }
  tree->Set("files", std::move(updated));
  return config::WriteJson(*tree);
}

// Trains 2 steps and saves; returns the step directory, and each
// parameter's full master in `full`. `options` as Options() by default.
std::string SaveTwoSteps(const std::string& name,
                         std::vector<std::vector<float>>* full,
                         const zero::ZeroOptions& options = Options()) {
  const model::ModelSpec spec = model::LoadModelSpec("tiny").value();
  auto data = CorpusBatches(16);
  SaveOptions save;
  save.dir = FreshTestDir(name);
  std::vector<std::vector<std::vector<float>>> parts(kWorld);
  ZR_CHECK_OK(OnRanks([&](runtime::Runtime& rt) -> absl::Status {
    ZR_ASSIGN_OR_RETURN(auto e, Engine::Create(spec, options, data.get(), rt));
    for (int s = 0; s < 2; ++s) ZR_RETURN_IF_ERROR(e->Step().status());
    ZR_RETURN_IF_ERROR(SaveCheckpoint(*e, rt, save).status());
    for (int p = 0; p < e->layout().num_params(); ++p) {
      ZR_ASSIGN_OR_RETURN(std::vector<float> v, e->MasterParam(p));
      parts[rt.rank()].push_back(std::move(v));
    }
    return absl::OkStatus();
  }));
  for (size_t p = 0; p < parts[0].size(); ++p) {
    full->emplace_back();
    for (int r = 0; r < kWorld; ++r) {
      full->back().insert(full->back().end(), parts[r][p].begin(),
                          parts[r][p].end());
    }
  }
  return save.dir + "/step_2";
}

// Trains 2 steps with `options`, saves, exports in fp32 and expects every
// parameter of the export to be the master bit for bit.
void ExpectFp32ExportHoldsTheMaster(const std::string& name,
                                    const zero::ZeroOptions& options) {
  std::vector<std::vector<float>> full;
  const std::string step_dir =
      SaveTwoSteps(absl::StrCat("export_", name), &full, options);
  const CheckpointManifest m = ReadManifest(step_dir).value();
  const std::string out = FreshTestDir(absl::StrCat("hf_", name));
  ASSERT_THAT(ExportHfDirectory(step_dir, m, out, kernels::DType::kF32),
              IsOk());
  auto hf = model::HfCheckpoint::Open(out);
  ASSERT_THAT(hf.status(), IsOk());
  EXPECT_EQ((*hf)->spec().hidden_size(), m.spec.hidden_size());
  EXPECT_EQ((*hf)->spec().qkv_bias(), m.spec.qkv_bias());
  const std::vector<model::ParamInfo> params = model::ModelParams(m.spec);
  ASSERT_EQ(params.size(), full.size());
  for (size_t p = 0; p < params.size(); ++p) {
    std::vector<float> v(params[p].numel());
    ASSERT_THAT((*hf)->Fill(params[p], 0, v.size(), v.data()), IsOk());
    ASSERT_EQ(v.size(), full[p].size());
    EXPECT_EQ(std::memcmp(v.data(), full[p].data(), v.size() * 4), 0)
        << params[p].name;
  }
}

TEST(CheckpointExportTest, Fp32ExportHoldsTheMasterBitwise) {
  ExpectFp32ExportHoldsTheMaster("fp32", Options());
}

// bf16 master weights and optimizer states, saved as BF16: the export
// holds the master exactly.
TEST(CheckpointExportTest, ExportOfBf16StatesHoldsTheMasterBitwise) {
  zero::ZeroOptions o = Options();
  o.dtype = runtime::DType::kBF16;
  o.offload_optimizer = true;
  o.host_master_dtype = runtime::DType::kBF16;
  o.host_moments_dtype = runtime::DType::kBF16;
  ExpectFp32ExportHoldsTheMaster("bf16_states", o);
}

TEST(CheckpointExportTest, Bf16ExportIsTheRoundedMaster) {
  std::vector<std::vector<float>> full;
  const std::string step_dir = SaveTwoSteps("export_bf16", &full);
  const std::string out = FreshTestDir("hf_bf16");
  ASSERT_THAT(ExportHfDirectory(step_dir, ReadManifest(step_dir).value(), out,
                                kernels::DType::kBF16),
              IsOk());
  auto hf = model::HfCheckpoint::Open(out);
  ASSERT_THAT(hf.status(), IsOk());
  const model::ParamInfo p = model::ModelParams((*hf)->spec())[0];
  std::vector<float> v(p.numel());
  ASSERT_THAT((*hf)->Fill(p, 0, v.size(), v.data()), IsOk());
  for (size_t i = 0; i < v.size(); ++i) {
    ASSERT_EQ(v[i], kernels::BF16ToFloat(kernels::FloatToBF16(full[0][i])));
  }
}

// Above the shard size, the weights go to numbered files with an index,
// which the checkpoint reader follows to the same values.
TEST(CheckpointExportTest, LargeExportsAreShardedWithAnIndex) {
  std::vector<std::vector<float>> full;
  const std::string step_dir = SaveTwoSteps("export_sharded", &full);
  const std::string out = FreshTestDir("hf_sharded");
  ASSERT_THAT(ExportHfDirectory(step_dir, ReadManifest(step_dir).value(), out,
                                kernels::DType::kF32, false, 40'000),
              IsOk());
  std::error_code ec;
  EXPECT_FALSE(std::filesystem::exists(out + "/model.safetensors", ec));
  EXPECT_TRUE(
      std::filesystem::exists(out + "/model.safetensors.index.json", ec));
  int shards = 0;
  for (const auto& entry : std::filesystem::directory_iterator(out)) {
    const std::string name = entry.path().filename().string();
    shards += absl::StartsWith(name, "model-") &&
              absl::EndsWith(name, ".safetensors");
  }
  EXPECT_GE(shards, 2);
  auto hf = model::HfCheckpoint::Open(out);
  ASSERT_THAT(hf.status(), IsOk());
  const std::vector<model::ParamInfo> params =
      model::ModelParams((*hf)->spec());
  for (size_t p = 0; p < params.size(); ++p) {
    std::vector<float> v(params[p].numel());
    ASSERT_THAT((*hf)->Fill(params[p], 0, v.size(), v.data()), IsOk());
    EXPECT_EQ(std::memcmp(v.data(), full[p].data(), v.size() * 4), 0)
        << params[p].name;
  }
}

// A non-empty directory is replaced only when asked, and then an earlier
// export's shards go while the user's other files stay.
TEST(CheckpointExportTest, OverwriteReplacesOnlyTheModelFiles) {
  std::vector<std::vector<float>> full;
  const std::string step_dir = SaveTwoSteps("export_overwrite", &full);
  const CheckpointManifest m = ReadManifest(step_dir).value();
  const std::string out = FreshTestDir("hf_overwrite");
  ASSERT_THAT(
      ExportHfDirectory(step_dir, m, out, kernels::DType::kF32, false, 40'000),
      IsOk());
  std::ofstream(out + "/tokenizer.json") << "{}";
  EXPECT_THAT(
      ExportHfDirectory(step_dir, m, out, kernels::DType::kF32),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--overwrite")));
  ASSERT_THAT(ExportHfDirectory(step_dir, m, out, kernels::DType::kF32, true),
              IsOk());
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(out)) {
    names.push_back(entry.path().filename().string());
  }
  EXPECT_THAT(names, ::testing::UnorderedElementsAre(
                         "config.json", "model.safetensors", "tokenizer.json"));
  EXPECT_TRUE(model::HfCheckpoint::Open(out).ok());
}

// Whatever a manifest or a shard's __metadata__ says, reading the
// checkpoint (as resume and export do) returns or fails; it never aborts or
// reads out of bounds (the sanitized CI stage runs this too). Each case
// replaces one number of the manifest, or one counter of rank 0's shard
// (its size and checksum in the manifest updated to match, so that the
// value itself is what is read), with a value a broken or hostile file
// might hold.
TEST(CheckpointFuzzTest, NoManifestOrCounterCrashesTheReaders) {
  std::vector<std::vector<float>> full;
  const std::string step_dir = SaveTwoSteps("fuzz", &full);
  const std::string manifest_path = step_dir + "/manifest.json";
  const std::string manifest = ReadBytes(manifest_path);
  const std::string shard_path = step_dir + "/" + ShardFileName(0);
  const std::string shard = ReadBytes(shard_path);
  const std::vector<std::string> values = {
      "-6",    "-1",    "0",    "1",  "3", "65536", "9223372036854775807",
      "1e309", "\"x\"", "null", "2.5"};
  int cases = 0, accepted = 0;
  auto try_read = [&](const std::string& text) {
    WriteBytes(manifest_path, text);
    absl::StatusOr<CheckpointManifest> m = ReadManifest(step_dir);
    ++cases;
    if (!m.ok()) return;
    if (ReadWholeState(step_dir, *m).ok()) ++accepted;
    const std::string out = FreshTestDir("fuzz_out");
    (void)ExportHfDirectory(step_dir, *m, out, kernels::DType::kF32);
  };
  // Each number of the manifest (the first 400), replaced.
  const std::regex number(R"(-?[0-9][0-9.eE+-]*)");
  int replaced = 0;
  for (auto it = std::sregex_iterator(manifest.begin(), manifest.end(), number);
       it != std::sregex_iterator() && replaced < 400; ++it, ++replaced) {
    for (const std::string& v : values) {
      try_read(manifest.substr(0, it->position()) + v +
               manifest.substr(it->position() + it->length()));
    }
  }
  // Each counter of rank 0's shard, replaced.
  for (const char* key :
       {"steps_done", "adam_steps", "loss_scale", "loss_scale_cur_hysteresis",
        "loss_scale_iteration", "loss_scale_last_overflow", "data_epoch",
        "data_index"}) {
    for (const std::string& v : {"-3", "0", "1e400", "nan", "-1", "x"}) {
      const std::string forged = ForgeMetadata(shard, key, v);
      ASSERT_FALSE(forged.empty()) << key;
      WriteBytes(shard_path, forged);
      try_read(WithFile(manifest, ShardFileName(0), forged));
    }
  }
  WriteBytes(shard_path, shard);
  WriteBytes(manifest_path, manifest);
  ASSERT_OK_AND_ASSIGN(CheckpointManifest m, ReadManifest(step_dir));
  EXPECT_OK(ReadWholeState(step_dir, m).status());
  std::printf("checkpoint fuzz: %d cases, %d read\n", cases, accepted);
  EXPECT_GT(cases, 1000);
}

// Training from the export, on the batch the checkpoint would train next,
// gives the loss that resuming the checkpoint gives.
TEST(CheckpointExportTest, RoundTripGivesTheResumedFirstLoss) {
  std::vector<std::vector<float>> full;
  const std::string step_dir = SaveTwoSteps("export_round_trip", &full);
  const CheckpointManifest m = ReadManifest(step_dir).value();
  const std::string out = FreshTestDir("hf_round_trip");
  ASSERT_THAT(ExportHfDirectory(step_dir, m, out, kernels::DType::kF32),
              IsOk());
  auto data = CorpusBatches(16);
  std::vector<double> resumed(kWorld), exported(kWorld);
  ASSERT_THAT(OnRanks([&](runtime::Runtime& rt) -> absl::Status {
                ZR_ASSIGN_OR_RETURN(
                    auto e, Engine::Create(m.spec, Options(), data.get(), rt));
                ZR_RETURN_IF_ERROR(LoadCheckpoint(*e, rt, step_dir, m));
                ZR_ASSIGN_OR_RETURN(StepStats s, e->Step());
                resumed[rt.rank()] = s.loss;
                return absl::OkStatus();
              }),
              IsOk());
  auto positioned = CorpusBatches(16);
  const zero::ZeroOptions o = Options();
  ASSERT_THAT(
      positioned->SetPosition({o.micro_batch, o.seq, o.accumulation, kWorld}, 0,
                              m.data_position),
      IsOk());
  ASSERT_THAT(OnRanks([&](runtime::Runtime& rt) -> absl::Status {
                ZR_ASSIGN_OR_RETURN(auto hf, model::HfCheckpoint::Open(out));
                ZR_ASSIGN_OR_RETURN(
                    auto e, Engine::Create(hf->spec(), o, positioned.get(), rt,
                                           hf.get()));
                ZR_ASSIGN_OR_RETURN(StepStats s, e->Step());
                exported[rt.rank()] = s.loss;
                return absl::OkStatus();
              }),
              IsOk());
  EXPECT_EQ(resumed, exported);
}

}  // namespace
}  // namespace engine
}  // namespace zero3
