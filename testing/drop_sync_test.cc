// Copyright 2026 The zero3 Authors.
//
// Every synchronization the engine relies on, removed one at a time, in
// each offload mode (none, optimizer, optimizer and parameters): the race
// detector must report the race it prevents, naming the buffer and the
// operations involved. The settings make every synchronization matter
// (stage3_param_persistence_threshold 0: each parameter is gathered and
// released; accumulation 2); where one cannot matter in a mode,
// zero::DropHasNoEffect says why and dropping it must indeed change nothing.
// With all of them in place the detector reports nothing (see
// equivalence_test for the full configuration matrix).

#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "core/model/presets.h"
#include "core/model/transformer.h"
#include "core/util/check.h"
#include "core/zero/sync_points.h"
#include "core/zero/sync_relevance.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "reference/runs.h"
#include "sim/testing/test_profile.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace testing {
namespace {

using ::zero3::reference::RunResult;
using ::zero3::reference::RunZero;

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

enum class Offload { kNone, kOptimizer, kOptimizerAndParam };

std::string OffloadName(Offload o) {
  switch (o) {
    case Offload::kNone:
      return "no_offload";
    case Offload::kOptimizer:
      return "optimizer_offload";
    case Offload::kOptimizerAndParam:
      return "param_offload";
  }
  return "";
}

struct Case {
  zero::Sync sync;
  // Substrings one report must contain, with the optimizer offloaded.
  std::vector<std::string> expected;
  // Runs with activation checkpointing of every layer and cpu_checkpointing.
  bool host_checkpoints = false;
  // Runs the speculative host step (offload_optimizer.super_offload).
  bool speculative = false;
  // Runs the host update under the next forward (host_step_overlap).
  bool in_forward = false;
  // Runs the one-step delayed update (host_step_overlap "delayed").
  bool delayed = false;
  // Runs the offloaded step on the device (zero3.offloaded_step "device").
  bool device_step = false;
  // Puts the host share's state on NVMe (offload_optimizer.device "nvme").
  bool nvme = false;
  // Puts the parameters on NVMe (offload_param.device "nvme"; with
  // offload_param only).
  bool param_nvme = false;
};

// What one report must contain in `offload` mode: without offload, the
// pre-step synchronization guards the gradient norm's copy to the host.
std::vector<std::string> Expected(const Case& c, Offload offload) {
  if (offload == Offload::kNone &&
      c.sync == zero::Sync::kGradOffloadBeforeStep) {
    return {"race on 'gradient norm squared (host)'", "grad norm D2H"};
  }
  return c.expected;
}

zero::ZeroOptions Options(Offload offload, const Case& c) {
  zero::ZeroOptions o;
  if (c.host_checkpoints) {
    o.checkpoint_every = 1;
    o.checkpoint_to_host = true;
  }
  o.micro_batch = 2;
  o.seq = 8;
  o.seed = 3;
  o.offload_optimizer = offload != Offload::kNone;
  o.offload_param = offload == Offload::kOptimizerAndParam;
  o.param_persistence_threshold = 0;  // every parameter gathered and released
  o.accumulation = 2;
  if (c.speculative) o.speculative_step = zero::SpeculativeStep::kOn;
  if (c.speculative && c.in_forward) o.gradient_clipping = 0;  // commits
  // (The rules keep the step on the host with offload_param.)
  if (c.device_step && offload == Offload::kOptimizer) {
    o.offloaded_step = config::OffloadedStep::kDevice;
    o.device_step_share = 1;
    o.host_step_piece = 777;  // several pieces: each slot is reused
    // Speculative: stepped during backward as buckets are reduced, and
    // committed.
    if (c.speculative) {
      o.gradient_clipping = 0;
      o.reduce_bucket_size = 3000;
    }
  }
  // With the optimizer offloaded, each rank's swap file under the test's
  // temporary directory, in pieces through three windows.
  if (c.nvme && offload != Offload::kNone) {
    const char* tmp = std::getenv("TEST_TMPDIR");
    o.nvme_path = tmp != nullptr ? tmp : "/tmp";
    o.nvme_buffers = 3;
    o.host_step_piece = 777;
  }
  // With offload_param, each rank's parameter file under the test's
  // temporary directory, read through two windows, written in pieces.
  if (c.param_nvme && offload == Offload::kOptimizerAndParam) {
    const char* tmp = std::getenv("TEST_TMPDIR");
    o.param_nvme_path = tmp != nullptr ? tmp : "/tmp";
    o.param_nvme_buffers = 2;
    o.host_step_piece = 777;
  }
  if (c.in_forward || c.delayed) {
    o.host_step_in_forward = c.in_forward;
    o.host_step_delayed = c.delayed;
    o.delayed_piece_after_wait_ns = 0;  // pieces between modules too
    o.host_step_piece = 777;  // several pieces, each overlapping parameters
  }
  return o;
}

std::vector<int64_t> TinyNumels() {
  std::vector<int64_t> numels;
  for (const model::ParamInfo& p :
       model::ModelParams(model::LoadModelSpec("tiny").value())) {
    numels.push_back(p.numel());
  }
  return numels;
}

// `o` on two simulated ranks of the test machine; with the speculative step
// and the host update under the next forward its host is slower than its
// backward, so that a committed step leaves pieces to the next forward.
RunResult RunTiny(const zero::ZeroOptions& o) {
  auto spec = model::LoadModelSpec("tiny").value();
  // Four kept layer inputs: the two device slots are each reused.
  if (o.checkpoint_to_host) spec.set_num_layers(4);
  auto data = model::SyntheticBatches(spec.vocab_size(), 1);
  sim::SimOptions sim;
  sim.profile = sim::TestProfile();
  sim.profile.mutable_gpu()->set_memory_gib(64);
  if (zero::HostStepPlanOf(o).carries_over) {
    sim.profile.mutable_host()->set_memory_bandwidth_gbps_per_rank(0.02);
    sim.profile.mutable_host()->set_memory_bandwidth_gbps_per_thread(0.01);
  }
  // The delayed update's first write-back comes at the start of step 2.
  const int steps = o.host_step_delayed ? 3 : 2;
  auto result = RunZero(spec, o, 2, steps, *data, sim);
  ZR_CHECK_OK(result.status());
  return *std::move(result);
}

std::vector<std::string> Races(const zero::ZeroOptions& o) {
  return RunTiny(o).races;
}

std::vector<std::string> RacesWithout(
    const Case& c, const std::function<void(zero::ZeroOptions&)>& adjust = {}) {
  zero::ZeroOptions o = Options(Offload::kOptimizer, c);
  o.syncs.Drop(c.sync);
  if (adjust) adjust(o);
  return Races(o);
}

// A case with the run's settings `flags` on (the cases whose settings a
// row of positional flags would make hard to read).
Case CaseWith(zero::Sync sync, std::vector<std::string> expected,
              std::initializer_list<bool Case::*> flags) {
  Case c;
  c.sync = sync;
  c.expected = std::move(expected);
  for (bool Case::*flag : flags) c.*flag = true;
  return c;
}

const std::vector<Case>& Cases() {
  static const auto* cases = new std::vector<Case>{
      Case{zero::Sync::kGradOffloadBeforeStep,
           {"race on 'host gradients", "grad D2H", "adamw"}},
      Case{zero::Sync::kGatherBeforeCompute,
           {"race on 'gathered parameter'", "all-gather param"}},
      Case{zero::Sync::kParamBufferReuse,
           {"race on 'gathered parameter'", "all-gather param"}},
      Case{zero::Sync::kGradsReadyBeforeReduce,
           {"race on 'gradient slot'", "bucket param"}},
      Case{zero::Sync::kGradSlotReuse,
           {"race on 'gradient slot'", "bucket param"}},
      Case{zero::Sync::kParamsUpdatedBeforeGather,
           {"race on 'parameter shard'", "all-gather param"}},
      Case{zero::Sync::kLossRead, {"race on 'loss (host)'", "read loss"}},
      Case{zero::Sync::kCheckpointOffloadAfterWrite,
           {"race on 'activations'", "input D2H"},
           true},
      Case{zero::Sync::kCheckpointSlotReuse,
           {"race on 'activations'", "input D2H"},
           true},
      Case{zero::Sync::kCheckpointRestoreSlotFree,
           {"race on 'activations'", "input H2D"},
           true},
      Case{zero::Sync::kCheckpointRestoreBeforeRecompute,
           {"race on 'activations'", "input H2D"},
           true},
      Case{zero::Sync::kSpeculativeGradsOnHost,
           {"race on 'host gradients", "grad D2H", "speculative adamw"},
           false,
           true},
      Case{zero::Sync::kWriteBackBeforeGather,
           {"race on 'parameter shard'", "param H2D", "all-gather param"},
           false,
           true},
      Case{zero::Sync::kWriteBackBeforeGather,
           {"race on 'parameter shard'", "param H2D", "all-gather param"},
           false,
           false,
           true},
      // Without it the pieces run only before backward, after the forward
      // read their stale shards; the next ones' AdamW then rewrites the
      // staging their write-back still reads.
      Case{zero::Sync::kHostStepBeforeGather,
           {"race on 'parameter write-back staging'", "param H2D", "adamw"},
           false,
           false,
           true},
      Case{zero::Sync::kWriteBackBeforeGather,
           {"race on 'parameter shard'", "param H2D", "all-gather param"},
           false,
           false,
           false,
           true},
      // The speculative step with the host update under the next forward:
      // a committed step's pieces left over run there (CarriedOver below
      // shows there are some in these settings).
      Case{zero::Sync::kSpeculativeGradsOnHost,
           {"race on 'host gradients", "grad D2H", "speculative adamw"},
           false,
           true,
           true},
      Case{zero::Sync::kWriteBackBeforeGather,
           {"race on 'parameter shard'", "param H2D", "all-gather param"},
           false,
           true,
           true},
      Case{zero::Sync::kHostStepBeforeGather,
           {"race on 'parameter write-back staging'", "param H2D", "adamw"},
           false,
           true,
           true},
      // Without it a piece's AdamW rewrites the staging its last working
      // copy's write-back, issued at the step's start, still reads.
      Case{zero::Sync::kWriteBackBeforeHostPiece,
           {"race on 'parameter write-back staging'", "param H2D", "adamw"},
           false,
           false,
           false,
           true},
      CaseWith(zero::Sync::kStreamedStatesBeforeStep,
               {"race on 'streamed state slot", "streamed master H2D", "adamw"},
               {&Case::device_step}),
      CaseWith(zero::Sync::kStreamedStepBeforeOut,
               {"race on 'streamed state slot", "adamw", "D2H"},
               {&Case::device_step}),
      CaseWith(zero::Sync::kStreamedSlotReuse,
               {"race on 'streamed state slot", "H2D", "D2H"},
               {&Case::device_step}),
      CaseWith(zero::Sync::kStreamedGradsBeforeStep,
               {"race on 'gradient partition (fp32)'", "speculative adamw"},
               {&Case::speculative, &Case::device_step}),
      CaseWith(zero::Sync::kStreamedStepBeforeCommit,
               {"race on 'speculative working copy (streamed)'",
                "commit working copy"},
               {&Case::speculative, &Case::device_step}),
      CaseWith(zero::Sync::kStreamedStatesBeforeStep,
               {"race on 'streamed state slot", "streamed master H2D",
                "speculative adamw"},
               {&Case::speculative, &Case::device_step}),
      CaseWith(zero::Sync::kNvmeReadBeforeStep,
               {"race on 'NVMe swap window", "NVMe read", "adamw"},
               {&Case::nvme}),
      CaseWith(zero::Sync::kNvmeWriteBeforeReuse,
               {"race on 'NVMe swap window", "read by 'NVMe write"},
               {&Case::nvme}),
      CaseWith(zero::Sync::kNvmeParamReadBeforeCopy,
               {"race on 'NVMe parameter window", "NVMe parameter read",
                "shard H2D"},
               {&Case::param_nvme}),
      CaseWith(zero::Sync::kNvmeParamCopyBeforeReuse,
               {"race on 'NVMe parameter window", "NVMe parameter read",
                "shard H2D"},
               {&Case::param_nvme}),
      CaseWith(zero::Sync::kNvmeParamWriteBeforeRead,
               {"race on 'drive file zero3_params_rank", "NVMe parameter write",
                "NVMe parameter read"},
               {&Case::param_nvme}),
      CaseWith(zero::Sync::kNvmeParamWriteBeforeReuse,
               {"race on 'NVMe parameter write window", "NVMe parameter write"},
               {&Case::param_nvme})};
  return *cases;
}

class DropSyncTest
    : public ::testing::TestWithParam<std::tuple<Offload, Case>> {};

TEST_P(DropSyncTest, DetectorReportsTheRace) {
  const auto& [offload, c] = GetParam();
  zero::ZeroOptions o = Options(offload, c);
  const std::string moot = zero::DropHasNoEffect(c.sync, o, TinyNumels());
  o.syncs.Drop(c.sync);
  const std::vector<std::string> races = Races(o);
  if (!moot.empty()) {
    EXPECT_THAT(races, IsEmpty())
        << zero::SyncName(c.sync) << " was said to change nothing (" << moot
        << ")\n"
        << absl::StrJoin(races, "\n");
    return;
  }
  ASSERT_FALSE(races.empty())
      << "dropping " << zero::SyncName(c.sync) << " went unnoticed";
  std::vector<::testing::Matcher<const std::string&>> all;
  for (const std::string& s : Expected(c, offload)) all.push_back(HasSubstr(s));
  EXPECT_THAT(races, Contains(::testing::AllOfArray(all)))
      << absl::StrJoin(races, "\n");
}

INSTANTIATE_TEST_SUITE_P(
    All, DropSyncTest,
    ::testing::Combine(::testing::Values(Offload::kNone, Offload::kOptimizer,
                                         Offload::kOptimizerAndParam),
                       ::testing::ValuesIn(Cases())),
    [](const ::testing::TestParamInfo<std::tuple<Offload, Case>>& info) {
      std::string name(zero::SyncName(std::get<1>(info.param).sync));
      for (char& ch : name) {
        if (ch == '-') ch = '_';
      }
      if (std::get<1>(info.param).in_forward) name += "_in_forward";
      if (std::get<1>(info.param).in_forward &&
          std::get<1>(info.param).speculative) {
        name += "_speculative";
      }
      if (std::get<1>(info.param).delayed) name += "_delayed";
      if (std::get<1>(info.param).device_step) name += "_device_step";
      if (std::get<1>(info.param).device_step &&
          std::get<1>(info.param).speculative) {
        name += "_speculative";
      }
      if (std::get<1>(info.param).nvme) name += "_nvme";
      if (std::get<1>(info.param).param_nvme) name += "_param_nvme";
      return OffloadName(std::get<0>(info.param)) + "_" + name;
    });

// The speculative step's cases with the host update under the next forward
// have a committed step whose pieces left over run under that forward.
TEST(DropSyncTest, CarriedOver) {
  Case c{zero::Sync::kHostStepBeforeGather, {}, false, true, true};
  const RunResult run = RunTiny(Options(Offload::kOptimizer, c));
  int carried = 0;
  for (const engine::StepStats& s : run.rank0) carried += s.carried_pieces;
  EXPECT_GT(carried, 0);
  EXPECT_THAT(run.races, IsEmpty());
}

// Each mode's settings make every synchronization matter but two: with
// offload_param the host's update of the shards in host memory ends before
// it issues the next gathers, and there is no speculative step nor a
// streamed one (nor without optimizer offload).
TEST(DropSyncTest, OnlyParamOffloadMakesASyncMoot) {
  for (Offload offload :
       {Offload::kNone, Offload::kOptimizer, Offload::kOptimizerAndParam}) {
    for (const Case& c : Cases()) {
      const bool moot =
          !zero::DropHasNoEffect(c.sync, Options(offload, c), TinyNumels())
               .empty();
      const bool speculation_moot =
          (c.sync == zero::Sync::kSpeculativeGradsOnHost ||
           c.sync == zero::Sync::kWriteBackBeforeGather ||
           c.sync == zero::Sync::kHostStepBeforeGather ||
           c.sync == zero::Sync::kWriteBackBeforeHostPiece ||
           c.sync == zero::Sync::kStreamedStatesBeforeStep ||
           c.sync == zero::Sync::kStreamedStepBeforeOut ||
           c.sync == zero::Sync::kStreamedSlotReuse ||
           c.sync == zero::Sync::kStreamedGradsBeforeStep ||
           c.sync == zero::Sync::kStreamedStepBeforeCommit) &&
          offload != Offload::kOptimizer;
      // The state on NVMe works with offload_param too.
      const bool nvme_moot = (c.sync == zero::Sync::kNvmeReadBeforeStep ||
                              c.sync == zero::Sync::kNvmeWriteBeforeReuse) &&
                             offload == Offload::kNone;
      // Parameters on NVMe need offload_param.
      const bool param_nvme_moot =
          (c.sync == zero::Sync::kNvmeParamReadBeforeCopy ||
           c.sync == zero::Sync::kNvmeParamCopyBeforeReuse ||
           c.sync == zero::Sync::kNvmeParamWriteBeforeRead ||
           c.sync == zero::Sync::kNvmeParamWriteBeforeReuse) &&
          offload != Offload::kOptimizerAndParam;
      EXPECT_EQ(moot, speculation_moot || nvme_moot || param_nvme_moot ||
                          (offload == Offload::kOptimizerAndParam &&
                           c.sync == zero::Sync::kParamsUpdatedBeforeGather))
          << OffloadName(offload) << " " << zero::SyncName(c.sync);
    }
  }
}

// Under the default persistence threshold the tiny model's parameters stay
// gathered until the update: param-buffer-reuse and
// params-updated-before-gather each cover the other, and dropping both is a
// race.
TEST(DropSyncTest, PersistentParametersNeedOneOfTwoSyncs) {
  zero::ZeroOptions o = Options(Offload::kOptimizer, Case{});
  o.param_persistence_threshold = 100000;
  for (zero::Sync s : {zero::Sync::kParamBufferReuse,
                       zero::Sync::kParamsUpdatedBeforeGather}) {
    EXPECT_THAT(zero::DropHasNoEffect(s, o, TinyNumels()),
                HasSubstr("stays gathered until the update"));
    zero::ZeroOptions one = o;
    one.syncs.Drop(s);
    EXPECT_THAT(Races(one), IsEmpty()) << zero::SyncName(s);
  }
  o.syncs.Drop(zero::Sync::kParamBufferReuse);
  o.syncs.Drop(zero::Sync::kParamsUpdatedBeforeGather);
  EXPECT_THAT(Races(o), Contains(HasSubstr("race on 'parameter shard'")));
}

// Without accumulation, bf16 gradients go to the host straight from the
// reduced bucket; the same synchronization guards them.
TEST(DropSyncTest, DirectLowPrecisionOffloadNeedsTheSameSync) {
  const std::vector<std::string> races = RacesWithout(
      Case{zero::Sync::kGradOffloadBeforeStep, {}}, [](zero::ZeroOptions& o) {
        o.dtype = runtime::DType::kBF16;
        o.accumulation = 1;
      });
  EXPECT_THAT(races,
              Contains(AllOf(HasSubstr("race on 'host gradients (bf16)'"),
                             HasSubstr("grad D2H"), HasSubstr("adamw"))))
      << absl::StrJoin(races, "\n");
}

// Without cpu_checkpointing nothing is copied to host memory: dropping the
// copies' synchronizations changes nothing.
TEST(DropSyncTest, HostCheckpointSyncsNeedCpuCheckpointing) {
  for (const Case& c : Cases()) {
    if (!c.host_checkpoints) continue;
    zero::ZeroOptions o = Options(Offload::kOptimizer, Case{});
    o.checkpoint_every = 1;
    EXPECT_THAT(zero::DropHasNoEffect(c.sync, o, TinyNumels()),
                HasSubstr("cpu_checkpointing"));
    o.syncs.Drop(c.sync);
    EXPECT_THAT(Races(o), IsEmpty()) << zero::SyncName(c.sync);
  }
}

// The speculative step reads the gradients of each piece during the
// boundary backward, in bf16 straight from the reduced buckets too: without
// the wait for the piece's last bucket, its AdamW races the copy (without
// clipping, which here would abort the speculation before any AdamW).
TEST(DropSyncTest, SpeculativeStepNeedsItsWaitWithDirectBf16Offload) {
  const std::vector<std::string> races =
      RacesWithout(Case{zero::Sync::kSpeculativeGradsOnHost, {}, false, true},
                   [](zero::ZeroOptions& o) {
                     o.dtype = runtime::DType::kBF16;
                     o.accumulation = 1;
                     o.reduce_bucket_size = 2000;
                     o.gradient_clipping = 0;
                   });
  EXPECT_THAT(
      races,
      Contains(AllOf(HasSubstr("race on 'host gradients (bf16)'"),
                     HasSubstr("grad D2H"), HasSubstr("speculative adamw"))))
      << absl::StrJoin(races, "\n");
}

// The early abort reads each piece's running norm, copied just before the
// piece's gradients: the same wait covers it.
TEST(DropSyncTest, SpeculativeGradsOnHostCoversTheRunningNorm) {
  const std::vector<std::string> races =
      RacesWithout(Case{zero::Sync::kSpeculativeGradsOnHost, {}, false, true});
  EXPECT_THAT(
      races,
      Contains(AllOf(HasSubstr("race on 'running grad norm squared (host)'"),
                     HasSubstr("running grad norm D2H"),
                     HasSubstr("read running grad norm"))))
      << absl::StrJoin(races, "\n");
}

// Dropping grad-offload-before-step with the speculative step: the norm and
// the replayed or committed update are still guarded by it.
TEST(DropSyncTest, SpeculativeStepKeepsGradOffloadBeforeStep) {
  const std::vector<std::string> races =
      RacesWithout(Case{zero::Sync::kGradOffloadBeforeStep, {}, false, true});
  EXPECT_THAT(races, Contains(HasSubstr("race on 'gradient norm squared")))
      << absl::StrJoin(races, "\n");
}

TEST(DropSyncTest, EverySyncIsCovered) {
  // A new entry in sync_points.h needs a case above.
  std::set<zero::Sync> covered;
  for (const Case& c : Cases()) covered.insert(c.sync);
  EXPECT_EQ(zero::AllSyncs().size(), covered.size());
}

}  // namespace
}  // namespace testing
}  // namespace zero3
