// Copyright 2026 The zero3 Authors.
//
// Checkpoints: N steps straight against k steps, a save, a fresh engine that
// loads it and goes on to N - identical losses and bitwise-identical master
// parameters across ranks, dtypes (fp16 with a loss scale that moves),
// optimizer offload and accumulation; the `latest` protocol and keep_last;
// and the errors for damaged or mismatched checkpoints and unwritable
// directories.

#include "core/engine/checkpoint.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/engine/checkpoint_manifest.h"
#include "core/engine/checkpoint_test_util.h"
#include "core/engine/engine.h"
#include "core/io/safetensors.h"
#include "core/kernels/dtype.h"
#include "core/model/presets.h"
#include "core/util/check.h"
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

struct Outcome {
  std::vector<StepStats> rank0;            // the steps this run took
  std::vector<std::vector<float>> params;  // every rank's master, by rank
  // Each step's loss averaged over the ranks (the simulator runs one rank
  // at a time, so the ranks add to it in turn).
  std::vector<double> mean_loss;
  // Each parameter's master values: every rank's partition, concatenated.
  std::vector<std::vector<float>> full;
  absl::Status status;
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Trains from step `resume`'s checkpoint in `dir` (or from the start when
// `resume` is empty) to step `steps`, saving there when `save` is set.
Outcome Train(const zero::ZeroOptions& o, const model::BatchSource& data,
              int world, int steps, const std::string& resume,
              const SaveOptions* save) {
  const model::ModelSpec spec = model::LoadModelSpec("tiny").value();
  sim::SimOptions so;
  so.profile = sim::TestProfile();
  so.profile.mutable_gpu()->set_memory_gib(64);
  so.world_size = world;
  so.mode = sim::SimMode::kData;
  auto sim_world = sim::SimWorld::Create(so);
  ZR_CHECK_OK(sim_world.status());
  Outcome run;
  run.params.resize(world);
  std::vector<std::vector<std::vector<float>>> parts(world);
  std::vector<std::vector<double>> losses(world);
  run.status = (*sim_world)->Run([&](runtime::Runtime& rt) -> absl::Status {
    ZR_ASSIGN_OR_RETURN(auto e, Engine::Create(spec, o, &data, rt));
    if (!resume.empty()) {
      ZR_ASSIGN_OR_RETURN(const std::string step_dir,
                          ResolveCheckpoint(resume));
      ZR_ASSIGN_OR_RETURN(const CheckpointManifest m, ReadManifest(step_dir));
      ZR_RETURN_IF_ERROR(CheckResumable(m, step_dir, spec, o, world));
      ZR_RETURN_IF_ERROR(LoadCheckpoint(*e, rt, step_dir, m));
    }
    while (e->steps_done() < steps) {
      ZR_ASSIGN_OR_RETURN(StepStats stats, e->Step());
      if (rt.rank() == 0) run.rank0.push_back(stats);
      losses[rt.rank()].push_back(stats.loss);
    }
    if (save != nullptr) {
      ZR_RETURN_IF_ERROR(SaveCheckpoint(*e, rt, *save).status());
    }
    ZR_ASSIGN_OR_RETURN(TrainingState state, e->ExportState());
    run.params[rt.rank()] = std::move(state.master);
    for (int p = 0; p < e->layout().num_params(); ++p) {
      ZR_ASSIGN_OR_RETURN(std::vector<float> part, e->MasterParam(p));
      parts[rt.rank()].push_back(std::move(part));
    }
    return absl::OkStatus();
  });
  for (size_t s = 0; run.status.ok() && s < losses[0].size(); ++s) {
    double sum = 0;
    for (int r = 0; r < world; ++r) sum += losses[r][s];
    run.mean_loss.push_back(sum / world);
  }
  for (size_t p = 0; run.status.ok() && p < parts[0].size(); ++p) {
    run.full.emplace_back();
    for (int r = 0; r < world; ++r) {
      run.full[p].insert(run.full[p].end(), parts[r][p].begin(),
                         parts[r][p].end());
    }
  }
  return run;
}

zero::ZeroOptions Options(runtime::DType dtype, bool offload,
                          int accumulation) {
  zero::ZeroOptions o;
  o.micro_batch = 2;
  o.seq = 16;
  o.seed = 5;
  o.dtype = dtype;
  o.offload_optimizer = offload;
  o.accumulation = accumulation;
  if (dtype == runtime::DType::kF16) {
    // Overflows at first, then a scale that doubles every 2 clean steps:
    // the scaler's state matters across the save.
    o.initial_scale_power = 22;
    o.loss_scale_window = 2;
    o.hysteresis = 2;
  }
  return o;
}

struct Case {
  int world;
  runtime::DType dtype;
  bool offload;
  int accumulation;
  // The speculative host step (offload_optimizer.super_offload), on.
  bool speculative = false;
  // bf16 master weights and Adam moments on the host (saved as BF16).
  bool bf16_states = false;
  // Of the offloaded state, the share stepped on the device
  // (zero3.offloaded_step), its master and moments streamed from the host.
  double device_step = 0;
  // The host share's master and moments on NVMe (a swap file per rank).
  bool nvme = false;
  // The parameters on NVMe (offload_param.device "nvme").
  bool param_nvme = false;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.world << " ranks, " << kernels::DTypeName(c.dtype)
      << (c.offload ? ", offload" : ", device") << ", accumulation "
      << c.accumulation << (c.speculative ? ", speculative" : "")
      << (c.bf16_states ? ", bf16 states" : "") << ", device step "
      << c.device_step << (c.nvme ? ", on NVMe" : "")
      << (c.param_nvme ? ", parameters on NVMe" : "");
}

// Parameters on NVMe (with offload_param) under the test's directory.
void ParamsOnNvme(zero::ZeroOptions& o) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  o.offload_param = true;
  o.param_nvme_path = tmp != nullptr ? tmp : "/tmp";
  o.param_nvme_buffers = 3;
  o.host_step_piece = 999;
}

std::string DeviceStepSuffix(double share) {
  return share > 0 ? absl::StrCat("_devicestep", std::lround(share * 100)) : "";
}

class ResumeTest : public ::testing::TestWithParam<Case> {};

TEST_P(ResumeTest, ContinuesBitwiseAsTheStraightRun) {
  const Case c = GetParam();
  zero::ZeroOptions o = Options(c.dtype, c.offload, c.accumulation);
  if (c.speculative) o.speculative_step = zero::SpeculativeStep::kOn;
  if (c.bf16_states) {
    o.host_master_dtype = runtime::DType::kBF16;
    o.host_moments_dtype = runtime::DType::kBF16;
  }
  o.device_step_share = c.device_step;
  o.host_step_piece = c.device_step > 0 || c.nvme ? 999 : o.host_step_piece;
  if (c.nvme) {
    const char* tmp = std::getenv("TEST_TMPDIR");
    o.nvme_path = tmp != nullptr ? tmp : "/tmp";
    o.nvme_buffers = 3;
  }
  if (c.param_nvme) ParamsOnNvme(o);
  auto data = CorpusBatches(o.seq);
  constexpr int kSteps = 6, kSaveAt = 3;
  const Outcome straight = Train(o, *data, c.world, kSteps, "", nullptr);
  ASSERT_THAT(straight.status, IsOk());
  SaveOptions save;
  save.dir = FreshTestDir(absl::StrCat(
      "resume_", c.world, "_", kernels::DTypeName(c.dtype), "_",
      c.offload ? "offload" : "device", "_", c.accumulation,
      c.speculative ? "_speculative" : "", c.bf16_states ? "_bf16states" : "",
      DeviceStepSuffix(c.device_step), c.nvme ? "_nvme" : "",
      c.param_nvme ? "_paramnvme" : ""));
  const Outcome first = Train(o, *data, c.world, kSaveAt, "", &save);
  ASSERT_THAT(first.status, IsOk());
  EXPECT_EQ(ReadAll(save.dir + "/latest"), "step_3\n");
  {
    // Saved as they are: bf16 states as BF16 tensors, else F32.
    ASSERT_OK_AND_ASSIGN(
        auto shard,
        io::SafetensorsFile::Open(save.dir + "/step_3/" + ShardFileName(0)));
    for (const char* name : kShardTensors) {
      ASSERT_NE(shard->Find(name), nullptr) << name;
      EXPECT_EQ(shard->Find(name)->dtype,
                c.bf16_states ? io::TensorDType::kBF16 : io::TensorDType::kF32)
          << name;
    }
  }
  const Outcome resumed = Train(o, *data, c.world, kSteps, save.dir, nullptr);
  ASSERT_THAT(resumed.status, IsOk());
  ASSERT_EQ(resumed.rank0.size(), static_cast<size_t>(kSteps - kSaveAt));
  for (int s = kSaveAt; s < kSteps; ++s) {
    const StepStats& a = straight.rank0[s];
    const StepStats& b = resumed.rank0[s - kSaveAt];
    EXPECT_EQ(b.step, s);
    EXPECT_EQ(a.loss, b.loss) << "step " << s + 1;
    EXPECT_EQ(a.loss_scale, b.loss_scale) << "step " << s + 1;
    EXPECT_EQ(a.lr, b.lr) << "step " << s + 1;
    EXPECT_EQ(a.skipped, b.skipped) << "step " << s + 1;
  }
  for (int r = 0; r < c.world; ++r) {
    ASSERT_EQ(straight.params[r].size(), resumed.params[r].size());
    EXPECT_EQ(std::memcmp(straight.params[r].data(), resumed.params[r].data(),
                          straight.params[r].size() * sizeof(float)),
              0)
        << "rank " << r << "'s master differs";
  }
  if (c.dtype == runtime::DType::kF16) {
    // The scale moves after the save: the scaler's state matters.
    bool moved = false;
    for (int s = kSaveAt; s < kSteps; ++s) {
      moved |= straight.rank0[s].loss_scale != straight.rank0[s - 1].loss_scale;
    }
    EXPECT_TRUE(moved) << "the loss scale did not move after the save";
  }
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (int world : {1, 2, 4}) {
    for (runtime::DType d :
         {runtime::DType::kF32, runtime::DType::kBF16, runtime::DType::kF16}) {
      for (bool offload : {true, false}) {
        for (int accumulation : {1, 2}) {
          cases.push_back({world, d, offload, accumulation});
        }
      }
    }
  }
  // The speculative step: the save reads the state while the last step's
  // write-back is pending.
  for (runtime::DType d :
       {runtime::DType::kF32, runtime::DType::kBF16, runtime::DType::kF16}) {
    cases.push_back({2, d, true, 1, true});
  }
  cases.push_back({4, runtime::DType::kBF16, true, 2, true});
  // bf16 master weights and moments, saved as BF16 and resumed exactly.
  for (int world : {1, 3}) {
    cases.push_back({world, runtime::DType::kBF16, true, 1, false, true});
  }
  cases.push_back({2, runtime::DType::kBF16, true, 2, true, true});
  // The offloaded step on the device, all of it or half beside the host's.
  cases.push_back({1, runtime::DType::kF32, true, 1, false, false, 1});
  cases.push_back({2, runtime::DType::kBF16, true, 2, false, false, 0.5});
  cases.push_back({2, runtime::DType::kF16, true, 1, true, false, 0.5});
  // The state on NVMe.
  cases.push_back({1, runtime::DType::kF32, true, 1, false, false, 0, true});
  cases.push_back({2, runtime::DType::kBF16, true, 2, false, false, 0, true});
  cases.push_back({2, runtime::DType::kF16, true, 1, false, false, 0, true});
  cases.push_back({2, runtime::DType::kBF16, true, 1, false, true, 0, true});
  // bf16 states streamed through the device AdamW, whole and split.
  cases.push_back({2, runtime::DType::kBF16, true, 1, false, true, 1.0});
  cases.push_back({1, runtime::DType::kBF16, true, 2, true, true, 0.5});
  // The parameters on NVMe, the optimizer state in memory or on NVMe.
  cases.push_back(
      {2, runtime::DType::kBF16, true, 2, false, false, 0, false, true});
  cases.push_back(
      {1, runtime::DType::kF32, true, 1, false, false, 0, true, true});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Matrix, ResumeTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           const Case& c = info.param;
                           return absl::StrCat(
                               c.world, "ranks_", kernels::DTypeName(c.dtype),
                               c.offload ? "_offload" : "_device", "_accum",
                               c.accumulation,
                               c.speculative ? "_speculative" : "",
                               c.bf16_states ? "_bf16states" : "",
                               DeviceStepSuffix(c.device_step),
                               c.nvme ? "_nvme" : "",
                               c.param_nvme ? "_paramnvme" : "");
                         });

// A two-rank checkpoint of step 2 in a fresh directory.
std::string SavedCheckpoint(const std::string& name) {
  const zero::ZeroOptions o = Options(runtime::DType::kF32, true, 1);
  auto data = CorpusBatches(o.seq);
  SaveOptions save;
  save.dir = FreshTestDir(name);
  ZR_CHECK_OK(Train(o, *data, 2, 2, "", &save).status);
  return save.dir;
}

Outcome Resume(const std::string& dir, int world = 2) {
  const zero::ZeroOptions o = Options(runtime::DType::kF32, true, 1);
  auto data = CorpusBatches(o.seq);
  return Train(o, *data, world, 3, dir, nullptr);
}

// A checkpoint saved by one number of ranks resumed on another, with the
// same global batch (the micro-batch scaled) and optimizer offload switched:
// fp32 losses and parameters within 1e-5 of the straight run (the gradient
// sums are taken in another order, so not bitwise).
struct Reshard {
  int from_world, from_micro;
  bool from_offload;
  int to_world, to_micro;
  bool to_offload;
};

class ReshardTest : public ::testing::TestWithParam<Reshard> {};

void PrintTo(const Reshard& c, std::ostream* os) {
  *os << c.from_world << " ranks x " << c.from_micro << " -> " << c.to_world
      << " ranks x " << c.to_micro;
}

TEST_P(ReshardTest, ContinuesWithinFp32Tolerance) {
  const Reshard c = GetParam();
  zero::ZeroOptions from = Options(runtime::DType::kF32, c.from_offload, 1);
  from.micro_batch = c.from_micro;
  zero::ZeroOptions to = Options(runtime::DType::kF32, c.to_offload, 1);
  to.micro_batch = c.to_micro;
  auto data = CorpusBatches(from.seq);
  constexpr int kSteps = 5, kSaveAt = 2;
  const Outcome straight =
      Train(from, *data, c.from_world, kSteps, "", nullptr);
  ASSERT_THAT(straight.status, IsOk());
  SaveOptions save;
  save.dir =
      FreshTestDir(absl::StrCat("reshard_", c.from_world, "_", c.to_world));
  ASSERT_THAT(Train(from, *data, c.from_world, kSaveAt, "", &save).status,
              IsOk());
  const Outcome resumed =
      Train(to, *data, c.to_world, kSteps, save.dir, nullptr);
  ASSERT_THAT(resumed.status, IsOk());
  ASSERT_EQ(resumed.rank0.size(), static_cast<size_t>(kSteps - kSaveAt));
  constexpr double kTolerance = 1e-5;
  for (int s = kSaveAt; s < kSteps; ++s) {
    const double a = straight.mean_loss[s];
    const double b = resumed.mean_loss[s - kSaveAt];
    EXPECT_LE(std::abs(a - b) / std::abs(a), kTolerance) << "step " << s + 1;
  }
  ASSERT_EQ(straight.full.size(), resumed.full.size());
  for (size_t p = 0; p < straight.full.size(); ++p) {
    ASSERT_EQ(straight.full[p].size(), resumed.full[p].size());
    double diff = 0, norm = 0;
    for (size_t i = 0; i < straight.full[p].size(); ++i) {
      const double d = straight.full[p][i] - resumed.full[p][i];
      diff += d * d;
      norm += static_cast<double>(straight.full[p][i]) * straight.full[p][i];
    }
    EXPECT_LE(std::sqrt(diff / std::max(norm, 1e-30)), kTolerance)
        << "parameter " << p;
    EXPECT_GT(norm, 0) << "parameter " << p;
  }
}

// A checkpoint of two steps saved by 2 ranks of `o`, loaded by 1 and by 4
// ranks (the same global batch) of `o` as `at(world, options)` adjusts it:
// every parameter's master exactly the saving run's.
void ExpectReshardsExactly(
    const zero::ZeroOptions& o, const std::string& dir_name,
    const std::function<void(int, zero::ZeroOptions&)>& at = {}) {
  auto data = CorpusBatches(o.seq);
  SaveOptions save;
  save.dir = FreshTestDir(dir_name);
  const Outcome saved = Train(o, *data, 2, 2, "", &save);
  ASSERT_THAT(saved.status, IsOk());
  for (const int world : {1, 4}) {
    zero::ZeroOptions to = o;
    to.micro_batch = 2 * o.micro_batch / world;
    if (at) at(world, to);
    const Outcome loaded = Train(to, *data, world, 2, save.dir, nullptr);
    ASSERT_THAT(loaded.status, IsOk()) << world;
    EXPECT_EQ(loaded.full, saved.full) << world << " ranks";
  }
}

// bf16 master weights and moments (each rank reads its partitions of the
// BF16 tensors, widened exactly).
TEST(CheckpointTest, Bf16StatesReshardExactly) {
  zero::ZeroOptions o = Options(runtime::DType::kBF16, true, 1);
  o.host_master_dtype = runtime::DType::kBF16;
  o.host_moments_dtype = runtime::DType::kBF16;
  ExpectReshardsExactly(o, "reshard_bf16_states");
}

// The checkpoint does not depend on where the offloaded step ran: saved
// stepping it on the device, loaded by 1 rank stepping it on the host and
// by 4 ranks half and half.
TEST(CheckpointTest, DeviceStepStatesLoadWithAnyPlacement) {
  zero::ZeroOptions o = Options(runtime::DType::kBF16, true, 1);
  o.device_step_share = 1;
  o.host_step_piece = 999;
  ExpectReshardsExactly(o, "reshard_device_step",
                        [](int world, zero::ZeroOptions& to) {
                          to.device_step_share = world == 1 ? 0.0 : 0.5;
                        });
}

// Nor on whether the host share's state is on NVMe: saved with it there,
// loaded by 1 rank with it in host memory and by 4 with it on NVMe.
TEST(CheckpointTest, NvmeStatesLoadWithAnyPlacement) {
  zero::ZeroOptions o = Options(runtime::DType::kBF16, true, 1);
  const char* tmp = std::getenv("TEST_TMPDIR");
  o.nvme_path = tmp != nullptr ? tmp : "/tmp";
  o.nvme_buffers = 3;
  o.host_step_piece = 999;
  ExpectReshardsExactly(o, "reshard_nvme",
                        [](int world, zero::ZeroOptions& to) {
                          if (world == 1) to.nvme_path.clear();
                        });
}

// Nor on where the parameters are: saved with them on NVMe, loaded by 1
// rank with them in host memory and by 4 with them on NVMe.
TEST(CheckpointTest, ParamsOnNvmeLoadWithAnyPlacement) {
  zero::ZeroOptions o = Options(runtime::DType::kBF16, true, 1);
  ParamsOnNvme(o);
  ExpectReshardsExactly(o, "reshard_param_nvme",
                        [](int world, zero::ZeroOptions& to) {
                          if (world == 1) to.param_nvme_path.clear();
                        });
}

// A failed read or write of the parameters' swap file stops the run with an
// error naming the file: a read when a gather needs the partition, a write
// when its window is next needed.
TEST(CheckpointTest, ParamsOnNvmeAFailedTransferStopsTheRun) {
  for (const bool write : {true, false}) {
    zero::ZeroOptions o = Options(runtime::DType::kF32, true, 1);
    ParamsOnNvme(o);
    // Past start-up's writes of the initial working copy (a piece each).
    o.param_nvme_fault = {write, write ? 50 : 3, EIO};
    auto data = CorpusBatches(o.seq);
    const Outcome run = Train(o, *data, 1, 3, "", nullptr);
    EXPECT_EQ(run.status.code(), absl::StatusCode::kDataLoss)
        << write << ": " << run.status;
    EXPECT_NE(run.status.message().find("zero3_params_rank0.swap"),
              std::string::npos)
        << run.status;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, ReshardTest,
                         ::testing::Values(Reshard{2, 2, true, 4, 1, false},
                                           Reshard{2, 2, false, 1, 4, true},
                                           Reshard{4, 1, true, 2, 2, true},
                                           Reshard{1, 4, false, 4, 1, true}));

TEST(CheckpointTest, KeepLastRemovesOlderCheckpoints) {
  const zero::ZeroOptions o = Options(runtime::DType::kF32, true, 1);
  auto data = CorpusBatches(o.seq);
  SaveOptions save;
  save.dir = FreshTestDir("keep_last");
  save.keep_last = 2;
  for (int steps = 1; steps <= 3; ++steps) {
    const std::string from = steps == 1 ? "" : save.dir;
    ASSERT_THAT(Train(o, *data, 2, steps, from, &save).status, IsOk());
  }
  struct stat st;
  EXPECT_NE(stat((save.dir + "/step_1").c_str(), &st), 0);
  EXPECT_EQ(stat((save.dir + "/step_2/manifest.json").c_str(), &st), 0);
  EXPECT_EQ(ReadAll(save.dir + "/latest"), "step_3\n");
  // A step directory resumes directly too.
  EXPECT_THAT(Resume(save.dir + "/step_2").status, IsOk());
}

TEST(CheckpointTest, SavingTheSameStepTwiceIsAnError) {
  const std::string dir = SavedCheckpoint("twice");
  const zero::ZeroOptions o = Options(runtime::DType::kF32, true, 1);
  auto data = CorpusBatches(o.seq);
  SaveOptions save;
  save.dir = dir;
  EXPECT_THAT(Train(o, *data, 2, 2, "", &save).status,
              StatusIs(absl::StatusCode::kAlreadyExists,
                       HasSubstr(dir + "/step_2/manifest.json")));
}

TEST(CheckpointTest, CorruptedShardIsNamed) {
  const std::string dir = SavedCheckpoint("corrupt");
  const std::string shard = dir + "/step_2/rank_00001.safetensors";
  std::string bytes = ReadAll(shard);
  bytes[bytes.size() - 5] ^= 0x10;
  std::ofstream(shard, std::ios::binary | std::ios::trunc) << bytes;
  EXPECT_THAT(VerifyCheckpointFiles(dir + "/step_2",
                                    ReadManifest(dir + "/step_2").value()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(shard + " is corrupted: CRC-32C")));
  EXPECT_THAT(Resume(dir).status,
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(shard)));
}

TEST(CheckpointTest, TruncatedShardIsNamed) {
  const std::string dir = SavedCheckpoint("truncated");
  const std::string shard = dir + "/step_2/rank_00000.safetensors";
  const std::string bytes = ReadAll(shard);
  ASSERT_EQ(truncate(shard.c_str(), bytes.size() / 2), 0);
  EXPECT_THAT(Resume(dir).status,
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(absl::StrCat(shard, " has ", bytes.size() / 2,
                                              " bytes; the manifest records ",
                                              bytes.size()))));
}

TEST(CheckpointTest, OtherWorldSizeModelOrVersionIsNamed) {
  const std::string dir = SavedCheckpoint("mismatch");
  const std::string step_dir = dir + "/step_2";
  const std::string manifest = step_dir + "/manifest.json";
  EXPECT_THAT(Resume(dir, 4).status,
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("saved with a global batch of 4 sequences (2 "
                                 "ranks x micro-batch 2 x accumulation 1), "
                                 "this run has 8 (4 x 2 x 1)")));
  CheckpointManifest m = ReadManifest(step_dir).value();
  model::ModelSpec other = m.spec;
  other.set_hidden_size(m.spec.hidden_size() * 2);
  EXPECT_THAT(CheckResumable(m, manifest, other,
                             Options(runtime::DType::kF32, true, 1), 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(absl::StrCat(
                           manifest, ": another model: hidden_size ",
                           m.spec.hidden_size(), " in the checkpoint, ",
                           other.hidden_size(), " in this run"))));
  m.format_version = kCheckpointFormatVersion + 1;
  EXPECT_THAT(ParseManifest(ManifestToJson(m), manifest),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(absl::StrCat(manifest, ": format version ",
                                              kCheckpointFormatVersion + 1))));
}

TEST(CheckpointTest, ManifestRoundTrips) {
  const std::string dir = SavedCheckpoint("round_trip");
  const CheckpointManifest m = ReadManifest(dir + "/step_2").value();
  EXPECT_EQ(m.step, 2);
  EXPECT_EQ(m.world_size, 2);
  EXPECT_EQ(m.files.size(), 2u);
  EXPECT_EQ(m.files[1].name, "rank_00001.safetensors");
  EXPECT_GT(m.params.size(), 0u);
  EXPECT_TRUE(m.config.is_object());
  EXPECT_EQ(ManifestToJson(ParseManifest(ManifestToJson(m), "x").value()),
            ManifestToJson(m));
}

TEST(CheckpointTest, MissingDirectoryFailsAndKeepsTheLatest) {
  const zero::ZeroOptions o = Options(runtime::DType::kF32, true, 1);
  auto data = CorpusBatches(o.seq);
  SaveOptions save;
  save.dir = FreshTestDir("no_parent") + "/below/ckpt";
  EXPECT_THAT(Train(o, *data, 2, 1, "", &save).status,
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr(absl::StrCat("cannot create checkpoint "
                                              "directory ",
                                              save.dir))));
  // A file where the step directory goes: no rank can write its shard;
  // every rank fails and the previous checkpoint stays the latest.
  {
    const std::string dir = SavedCheckpoint("blocked");
    std::ofstream(dir + "/step_3") << "in the way";
    SaveOptions again;
    again.dir = dir;
    EXPECT_THAT(
        Train(o, *data, 2, 3, dir, &again).status,
        StatusIs(absl::StatusCode::kFailedPrecondition,
                 HasSubstr(absl::StrCat("cannot save a checkpoint in ", dir,
                                        "/step_3: not a "
                                        "directory"))));
    EXPECT_EQ(ReadAll(dir + "/latest"), "step_2\n");
    EXPECT_THAT(Resume(dir).status, IsOk());
  }
  // A read-only step directory: the shards cannot be written and the
  // previous checkpoint stays the latest (root writes anyway: skipped).
  if (geteuid() == 0) return;
  const std::string dir = SavedCheckpoint("read_only");
  ASSERT_EQ(mkdir((dir + "/step_3").c_str(), 0555), 0);
  SaveOptions again;
  again.dir = dir;
  EXPECT_THAT(Train(o, *data, 2, 3, dir, &again).status,
              StatusIs(::testing::_, HasSubstr(dir + "/step_3")));
  EXPECT_EQ(ReadAll(dir + "/latest"), "step_2\n");
  EXPECT_THAT(Resume(dir).status, IsOk());
}

// The checkpoint directory is one file system for every rank: where it is
// (one process, one disk), the check passes and leaves nothing behind;
// where rank 1 names another directory (a node-local disk on its node),
// every rank fails naming the directory before anything is trained.
TEST(CheckpointTest, DirectoryNotSharedByEveryRankIsNamed) {
  const model::ModelSpec spec = model::LoadModelSpec("tiny").value();
  const zero::ZeroOptions o = Options(runtime::DType::kF32, false, 1);
  auto data = CorpusBatches(o.seq);
  const std::string shared = FreshTestDir("shared");
  const std::string local = FreshTestDir("rank1_local");
  for (const bool split : {false, true}) {
    sim::SimOptions so;
    so.profile = sim::TestProfile();
    so.world_size = 2;
    so.mode = sim::SimMode::kData;
    auto world = sim::SimWorld::Create(so);
    ASSERT_TRUE(world.ok()) << world.status();
    std::vector<absl::Status> results(2);
    const absl::Status run =
        (*world)->Run([&](runtime::Runtime& rt) -> absl::Status {
          ZR_ASSIGN_OR_RETURN(auto e, Engine::Create(spec, o, data.get(), rt));
          results[rt.rank()] = CheckSharedDirectory(
              *e, rt, split && rt.rank() == 1 ? local : shared);
          return absl::OkStatus();
        });
    ASSERT_THAT(run, IsOk());
    if (!split) {
      EXPECT_THAT(results[0], IsOk());
      EXPECT_THAT(results[1], IsOk());
      EXPECT_TRUE(std::filesystem::is_empty(shared)) << "token left behind";
      continue;
    }
    EXPECT_THAT(results[0],
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(absl::StrCat("checkpoint directory ", shared,
                                                ": 1 of 2 ranks do "
                                                "not see"))));
    EXPECT_THAT(results[1], StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr("(this rank, 1, does not)")));
  }
}

TEST(CheckpointTest, NoCheckpointIsNamed) {
  const std::string dir = FreshTestDir("empty");
  EXPECT_THAT(ResolveCheckpoint(dir),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr(absl::StrCat("no checkpoint at ", dir))));
}

}  // namespace
}  // namespace engine
}  // namespace zero3
