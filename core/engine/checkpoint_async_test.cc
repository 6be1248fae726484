// Copyright 2026 The zero3 Authors.
//
// CheckpointSaver: an asynchronous save taken at step 2 and written while
// steps 3 and 4 run resumes to the same bits as 4 steps straight (the
// write reads the snapshot, not the state the next steps change), with
// optimizer offload on and off; a save whose directory went away fails
// naming it and leaves `latest` as it was.

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/engine/checkpoint.h"
#include "core/engine/checkpoint_manifest.h"
#include "core/engine/checkpoint_test_util.h"
#include "core/engine/engine.h"
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
using ::zero3::testing::StatusIs;

constexpr int kWorld = 2;

zero::ZeroOptions Options(bool offload) {
  zero::ZeroOptions o;
  o.micro_batch = 2;
  o.seq = 16;
  o.seed = 5;
  o.dtype = runtime::DType::kBF16;
  o.offload_optimizer = offload;
  return o;
}

// Trains to `steps` (from `resume`'s checkpoint when set), calling `at`
// after each step; returns every rank's master at the end.
absl::StatusOr<std::vector<std::vector<float>>> TrainRun(
    const zero::ZeroOptions& o, int steps, const std::string& resume,
    const std::function<absl::Status(Engine&, runtime::Runtime&,
                                     CheckpointSaver*)>& at,
    const SaveOptions* save) {
  const model::ModelSpec spec = model::LoadModelSpec("tiny").value();
  auto data = CorpusBatches(o.seq);
  sim::SimOptions so;
  so.profile = sim::TestProfile();
  so.profile.mutable_gpu()->set_memory_gib(64);
  so.world_size = kWorld;
  so.mode = sim::SimMode::kData;
  ZR_ASSIGN_OR_RETURN(auto world, sim::SimWorld::Create(so));
  std::vector<std::vector<float>> master(kWorld);
  ZR_RETURN_IF_ERROR(world->Run([&](runtime::Runtime& rt) -> absl::Status {
    ZR_ASSIGN_OR_RETURN(auto e, Engine::Create(spec, o, data.get(), rt));
    if (!resume.empty()) {
      ZR_ASSIGN_OR_RETURN(const std::string step_dir,
                          ResolveCheckpoint(resume));
      ZR_ASSIGN_OR_RETURN(const CheckpointManifest m, ReadManifest(step_dir));
      ZR_RETURN_IF_ERROR(LoadCheckpoint(*e, rt, step_dir, m));
    }
    std::unique_ptr<CheckpointSaver> saver;
    if (save != nullptr) {
      saver = std::make_unique<CheckpointSaver>(*e, rt, *save);
    }
    while (e->steps_done() < steps) {
      ZR_RETURN_IF_ERROR(e->Step().status());
      if (at) ZR_RETURN_IF_ERROR(at(*e, rt, saver.get()));
    }
    ZR_ASSIGN_OR_RETURN(TrainingState state, e->ExportState());
    master[rt.rank()] = std::move(state.master);
    return absl::OkStatus();
  }));
  return master;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(CheckpointAsyncTest, WrittenWhileTrainingResumesBitExact) {
  for (const bool offload : {true, false}) {
    SCOPED_TRACE(offload ? "offload" : "device optimizer");
    const zero::ZeroOptions o = Options(offload);
    auto straight = TrainRun(o, 4, "", nullptr, nullptr);
    ASSERT_TRUE(straight.ok()) << straight.status();
    SaveOptions save;
    save.dir = FreshTestDir(offload ? "async_offload" : "async_device");
    save.async = true;
    bool published = false;
    auto saving = TrainRun(
        o, 4, "",
        [&](Engine& e, runtime::Runtime& rt,
            CheckpointSaver* saver) -> absl::Status {
          ZR_ASSIGN_OR_RETURN(const SavedCheckpoint polled, saver->Poll());
          if (!polled.dir.empty()) published = true;
          if (e.steps_done() == 2) return saver->Start();
          if (e.steps_done() == 4) {
            ZR_ASSIGN_OR_RETURN(const SavedCheckpoint done, saver->Finish());
            if (!done.dir.empty()) published = true;
          }
          (void)rt;
          return absl::OkStatus();
        },
        &save);
    ASSERT_TRUE(saving.ok()) << saving.status();
    EXPECT_TRUE(published);
    EXPECT_EQ(ReadText(save.dir + "/latest"), "step_2\n");
    auto resumed = TrainRun(o, 4, save.dir, nullptr, nullptr);
    ASSERT_TRUE(resumed.ok()) << resumed.status();
    EXPECT_EQ(*resumed, *straight);
    EXPECT_EQ(*saving, *straight);
  }
}

TEST(CheckpointAsyncTest, MissingDirectoryIsNamedAndLatestKept) {
  const std::string parent = FreshTestDir("async_gone");
  std::filesystem::create_directories(parent);
  SaveOptions save;
  save.dir = parent + "/ckpt";
  save.async = true;
  absl::Status second;
  auto run = TrainRun(
      Options(true), 3, "",
      [&](Engine& e, runtime::Runtime& rt,
          CheckpointSaver* saver) -> absl::Status {
        if (e.steps_done() == 1) {
          ZR_RETURN_IF_ERROR(saver->Start());
          return saver->Finish().status();
        }
        if (e.steps_done() == 2 && rt.rank() == 0) {
          std::error_code ignored;
          std::filesystem::remove_all(save.dir + "/step_1", ignored);
          std::filesystem::rename(save.dir, parent + "/moved", ignored);
        }
        if (e.steps_done() == 3) {
          ZR_RETURN_IF_ERROR(saver->Start());
          const absl::Status s = saver->Finish().status();
          if (rt.rank() == 0) second = s;
        }
        return absl::OkStatus();
      },
      &save);
  // The directory is made again (its parent exists), so the save goes
  // through; with the parent gone it fails naming the path.
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_TRUE(second.ok()) << second;
  EXPECT_EQ(ReadText(save.dir + "/latest"), "step_3\n");
  EXPECT_EQ(ReadText(parent + "/moved/latest"), "step_1\n");

  SaveOptions lost;
  lost.dir = parent + "/lost/ckpt";
  lost.async = true;
  std::filesystem::create_directories(lost.dir);
  absl::Status failed;
  run = TrainRun(
      Options(false), 2, "",
      [&](Engine& e, runtime::Runtime& rt,
          CheckpointSaver* saver) -> absl::Status {
        if (e.steps_done() == 1 && rt.rank() == 0) {
          std::filesystem::remove_all(parent + "/lost");
        }
        if (e.steps_done() == 2) {
          ZR_RETURN_IF_ERROR(saver->Start());
          const absl::Status s = saver->Finish().status();
          if (rt.rank() == 0) failed = s;
        }
        return absl::OkStatus();
      },
      &lost);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_THAT(failed, StatusIs(::testing::_,
                               HasSubstr(absl::StrCat(
                                   "cannot create checkpoint directory ",
                                   lost.dir, ": No such file or directory"))));
}

}  // namespace
}  // namespace engine
}  // namespace zero3
