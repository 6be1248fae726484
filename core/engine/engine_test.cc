// Copyright 2026 The zero3 Authors.
//
// Engine behaviour beyond equivalence with the reference (testing/): loss
// scaling and skipped steps, determinism, learning, and what gradient
// offload modes cost in virtual time.

#include "core/engine/engine.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "core/model/presets.h"
#include "core/util/check.h"
#include "core/util/status_macros.h"
#include "core/zero/weight_decay.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/profiles.h"
#include "sim/simulator.h"
#include "sim/testing/test_profile.h"
#include "testing/status_matchers.h"
#include "testing/testdata/text/corpus.h"

namespace zero3 {
namespace engine {
namespace {

using ::zero3::testing::IsOk;

struct TrainRun {
  std::vector<StepStats> rank0;
  std::vector<std::vector<StepStats>> ranks;  // every rank's, by rank
  std::vector<std::vector<float>> rank0_params;
  std::vector<std::string> param_names;
  std::string trace;
  std::vector<std::string> rank0_fabric;  // collectives, in the order run
  int param_count = 0;
  int races = 0;
};

TrainRun Train(const model::ModelSpec& spec, const zero::ZeroOptions& options,
               const model::BatchSource& data, int world, int steps,
               sim::SimMode mode = sim::SimMode::kData,
               const sim::HardwareProfile* profile = nullptr,
               const std::function<absl::Status(Engine&)>& after_step = {}) {
  sim::SimOptions so;
  so.profile = profile != nullptr ? *profile : sim::TestProfile();
  if (profile == nullptr) so.profile.mutable_gpu()->set_memory_gib(64);
  so.world_size = world;
  so.mode = mode;
  so.trace = true;
  auto world_or = sim::SimWorld::Create(so);
  ZR_CHECK_OK(world_or.status());
  TrainRun run;
  run.ranks.resize(world);
  ZR_CHECK_OK((*world_or)->Run([&](runtime::Runtime& rt) -> absl::Status {
    ZR_ASSIGN_OR_RETURN(auto e, Engine::Create(spec, options, &data, rt));
    run.param_count = e->layout().num_params();
    for (int s = 0; s < steps; ++s) {
      ZR_ASSIGN_OR_RETURN(StepStats stats, e->Step());
      if (rt.rank() == 0) run.rank0.push_back(stats);
      run.ranks[rt.rank()].push_back(stats);
      if (after_step) ZR_RETURN_IF_ERROR(after_step(*e));
    }
    if (rt.rank() == 0 && rt.computes_values()) {
      for (int p = 0; p < e->layout().num_params(); ++p) {
        ZR_ASSIGN_OR_RETURN(std::vector<float> v, e->MasterParam(p));
        run.rank0_params.push_back(std::move(v));
        run.param_names.push_back(e->model().params()[p].name);
      }
    }
    return absl::OkStatus();
  }));
  run.trace = (*world_or)->trace().ToJson();
  const sim::Trace& trace = (*world_or)->trace();
  for (const sim::Trace::Span& span : trace.spans()) {
    if (span.pid == 0 &&
        trace.TrackName(span.pid, span.tid) == "engine: fabric") {
      run.rank0_fabric.push_back(span.name);
    }
  }
  run.races = static_cast<int>((*world_or)->races().size());
  return run;
}

zero::ZeroOptions Small() {
  zero::ZeroOptions o;
  o.micro_batch = 2;
  o.seq = 16;
  o.offload_optimizer = true;
  o.seed = 5;
  return o;
}

// A real model's step in bf16 with the optimizer on the host, for timing
// runs on the h200_sxm profile.
zero::ZeroOptions OffloadedBf16(int micro_batch, int seq) {
  zero::ZeroOptions o;
  o.dtype = runtime::DType::kBF16;
  o.micro_batch = micro_batch;
  o.seq = seq;
  o.offload_optimizer = true;
  return o;
}

TEST(EngineTest, Fp16OverflowSkipsStepsAndLowersTheScale) {
  auto spec = model::LoadModelSpec("tiny").value();
  zero::ZeroOptions o = Small();
  o.dtype = runtime::DType::kF16;
  o.initial_scale_power = 40;  // 2^40: fp16 gradients overflow
  o.hysteresis = 1;
  auto data = model::SyntheticBatches(spec.vocab_size(), 1);
  const TrainRun run = Train(spec, o, *data, 2, 40);
  ASSERT_TRUE(run.rank0[0].skipped);
  EXPECT_THAT(run.rank0[0].skip_reason, ::testing::HasSubstr("overflow"));
  int skipped = 0;
  for (size_t s = 0; s + 1 < run.rank0.size(); ++s) {
    if (!run.rank0[s].skipped) {
      EXPECT_EQ(run.rank0[s].lr, static_cast<double>(o.lr));
    }
    if (run.rank0[s].skipped) {
      ++skipped;
      EXPECT_EQ(run.rank0[s + 1].loss_scale, run.rank0[s].loss_scale / 2);
    }
  }
  EXPECT_GT(skipped, 10);
  EXPECT_FALSE(run.rank0.back().skipped) << "the scale never came down";
  EXPECT_EQ(run.races, 0);
}

TEST(EngineTest, SkippedStepsDoNotAdvanceTheSchedule) {
  auto spec = model::LoadModelSpec("tiny").value();
  zero::ZeroOptions o = Small();
  o.dtype = runtime::DType::kF16;
  o.initial_scale_power = 20;  // the first steps overflow
  o.hysteresis = 1;
  o.lr_schedule.type = zero::LrScheduleType::kWarmupLR;
  o.lr_schedule.warmup_type = zero::WarmupType::kLinear;
  o.lr_schedule.warmup_min_lr = 1e-3;
  o.lr_schedule.warmup_max_lr = 1e-2;
  o.lr_schedule.warmup_num_steps = 4;
  auto data = model::SyntheticBatches(spec.vocab_size(), 1);
  const TrainRun run = Train(spec, o, *data, 2, 12);
  // DeepSpeed's WarmupLR (linear, 4 steps): the first applied step runs at
  // warmup_min_lr (set when the scheduler is built), the k-th (k >= 2) at
  // min + (max - min) * min(1, (k - 2) / 4): 1e-3, 1e-3, 3.25e-3, 5.5e-3,
  // 7.75e-3, then 1e-2. A skipped step runs (nothing) at the lr of the next
  // applied one.
  const double want[] = {1e-3, 1e-3, 3.25e-3, 5.5e-3, 7.75e-3, 1e-2};
  int applied = 0, skipped = 0;
  for (const StepStats& s : run.rank0) {
    EXPECT_NEAR(s.lr, want[std::min(applied, 5)], 1e-15) << "step " << s.step;
    s.skipped ? ++skipped : ++applied;
  }
  EXPECT_GE(skipped, 2);
  EXPECT_GE(applied, 6) << "the schedule was not followed past warmup";
  EXPECT_EQ(run.races, 0);
}

// One step (from the same initial values, so with the same gradients):
// with the Trainer's grouping, biases and norm weights get what a run
// without decay gives them, and every other parameter what a run decaying
// everything gives it; norm weights (initially 1) do decay in the latter.
void CheckTrainerDecayGrouping(bool offload) {
  auto spec = model::LoadModelSpec("tiny").value();
  zero::ZeroOptions o = Small();
  o.offload_optimizer = offload;
  o.lr = 1e-2;
  o.weight_decay = 0.5f;
  auto data = model::SyntheticBatches(spec.vocab_size(), 3);
  zero::ZeroOptions grouped = o;
  grouped.exclude_bias_and_norm_from_decay = true;
  zero::ZeroOptions none = o;
  none.weight_decay = 0;
  const TrainRun all_run = Train(spec, o, *data, 2, 1);
  const TrainRun grouped_run = Train(spec, grouped, *data, 2, 1);
  const TrainRun none_run = Train(spec, none, *data, 2, 1);
  const std::vector<std::string>& names = grouped_run.param_names;
  ASSERT_EQ(names.size(), grouped_run.rank0_params.size());
  int excluded = 0;
  for (size_t p = 0; p < names.size(); ++p) {
    const bool decays = zero::TrainerDecays(names[p]);
    excluded += decays ? 0 : 1;
    EXPECT_EQ(grouped_run.rank0_params[p],
              decays ? all_run.rank0_params[p] : none_run.rank0_params[p])
        << names[p];
    if (names[p] == "norm") {
      EXPECT_NE(all_run.rank0_params[p], none_run.rank0_params[p]);
    }
  }
  EXPECT_EQ(excluded, 2 * 5 + 1);  // per layer 2 norms, 3 biases; final norm
}

TEST(EngineTest, TrainerDecayGroupingOnTheHost) {
  CheckTrainerDecayGrouping(true);
}

TEST(EngineTest, TrainerDecayGroupingOnTheDevice) {
  CheckTrainerDecayGrouping(false);
}

TEST(EngineTest, NonFiniteBf16GradientIsReportedAndSkipped) {
  auto spec = model::LoadModelSpec("tiny").value();
  spec.set_init_std(1e30);  // activations overflow: NaN loss and gradients
  zero::ZeroOptions o = Small();
  o.dtype = runtime::DType::kBF16;
  auto data = model::SyntheticBatches(spec.vocab_size(), 1);
  const TrainRun run = Train(spec, o, *data, 2, 2);
  for (const StepStats& s : run.rank0) {
    EXPECT_TRUE(s.skipped);
    EXPECT_THAT(s.skip_reason, ::testing::HasSubstr("non-finite"));
  }
}

// The speculative step on non-finite bf16 gradients: each step's
// speculation aborts before its first piece (the first bucket's running norm
// is non-finite), the step skipped, the master as without it.
TEST(EngineTest, NonFiniteBf16GradientAbortsTheSpeculativeStep) {
  auto spec = model::LoadModelSpec("tiny").value();
  spec.set_init_std(1e30);  // activations overflow: NaN loss and gradients
  zero::ZeroOptions o = Small();
  o.dtype = runtime::DType::kBF16;
  o.speculative_step = zero::SpeculativeStep::kOn;
  auto data = model::SyntheticBatches(spec.vocab_size(), 1);
  const TrainRun run = Train(spec, o, *data, 2, 3);
  for (const StepStats& s : run.rank0) {
    EXPECT_TRUE(s.skipped);
    EXPECT_EQ(s.speculation, StepStats::Speculation::kAborted);
    EXPECT_EQ(s.speculative_pieces, 0);
  }
  EXPECT_EQ(run.races, 0);
  zero::ZeroOptions plain = o;
  plain.speculative_step = zero::SpeculativeStep::kOff;
  EXPECT_EQ(run.rank0_params, Train(spec, plain, *data, 2, 3).rank0_params);
}

// The speculative step in many buckets and pieces, without clipping.
zero::ZeroOptions SpeculativeInPieces() {
  zero::ZeroOptions o = Small();
  o.speculative_step = zero::SpeculativeStep::kOn;
  o.reduce_bucket_size = 3000;
  o.sub_group_size = 5000;
  o.host_step_piece = 777;
  o.gradient_clipping = 0;
  return o;
}

// Early abort on one rank with the whole optimizer on the host, where the
// running norm after the last bucket is the global norm: clipping far below
// the norm is proven by the first bucket (no piece updated speculatively),
// just below it only by the last (the pieces of earlier buckets updated);
// either way the step replays, bitwise as without speculation.
TEST(EngineTest, SpeculationAbortsWhenTheRunningNormProvesClipping) {
  auto spec = model::LoadModelSpec("tiny").value();
  zero::ZeroOptions o = SpeculativeInPieces();
  auto data = model::SyntheticBatches(spec.vocab_size(), 4);
  const TrainRun free = Train(spec, o, *data, 1, 1);
  ASSERT_EQ(free.rank0[0].speculation, StepStats::Speculation::kCommitted);
  const int all = free.rank0[0].speculative_pieces;
  EXPECT_GT(all, 3);
  const double norm = free.rank0[0].grad_norm;
  zero::ZeroOptions plain = o;
  plain.speculative_step = zero::SpeculativeStep::kOff;
  for (double clipping : {norm / 100, norm * 0.999}) {
    o.gradient_clipping = plain.gradient_clipping = clipping;
    const TrainRun run = Train(spec, o, *data, 1, 1);
    const StepStats& s = run.rank0[0];
    EXPECT_EQ(s.speculation, StepStats::Speculation::kAborted) << clipping;
    if (clipping < norm / 2) {
      EXPECT_EQ(s.speculative_pieces, 0);
    } else {
      EXPECT_GT(s.speculative_pieces, 0);
      EXPECT_LT(s.speculative_pieces, all);
    }
    EXPECT_EQ(run.races, 0);
    EXPECT_EQ(run.rank0_params, Train(spec, plain, *data, 1, 1).rank0_params);
  }
}

// Four ranks, each seeing only its partition's running norm: at some
// clipping thresholds some ranks abort and others find the miss only after
// backward; every rank still ends the step the same way (replayed), bitwise
// as without speculation.
TEST(EngineTest, RanksThatAbortAgreeWithTheOthers) {
  auto spec = model::LoadModelSpec("tiny").value();
  zero::ZeroOptions o = SpeculativeInPieces();
  auto data = model::SyntheticBatches(spec.vocab_size(), 4);
  const double norm = Train(spec, o, *data, 4, 1).rank0[0].grad_norm;
  zero::ZeroOptions plain = o;
  plain.speculative_step = zero::SpeculativeStep::kOff;
  int mixed = 0;
  for (double fraction : {0.3, 0.5, 0.7, 0.9}) {
    o.gradient_clipping = plain.gradient_clipping = norm * fraction;
    const TrainRun run = Train(spec, o, *data, 4, 1);
    int aborted = 0;
    for (const std::vector<StepStats>& r : run.ranks) {
      const StepStats::Speculation s = r[0].speculation;
      EXPECT_TRUE(s == StepStats::Speculation::kAborted ||
                  s == StepStats::Speculation::kReplayed)
          << fraction;
      EXPECT_FALSE(r[0].skipped);
      aborted += s == StepStats::Speculation::kAborted ? 1 : 0;
    }
    mixed += aborted > 0 && aborted < 4 ? 1 : 0;
    EXPECT_EQ(run.rank0_params, Train(spec, plain, *data, 4, 1).rank0_params);
  }
  EXPECT_GT(mixed, 0) << "no threshold split the ranks";
}

// kAuto: an abort before the first piece costs nothing and does not pause
// speculation (every step tries again); an abort after some pieces does.
// With four ranks aborting at different points, ranks speculate on
// different steps, and the parameters are still those without speculation.
TEST(EngineTest, AFreeAbortDoesNotPauseSpeculation) {
  auto spec = model::LoadModelSpec("tiny").value();
  zero::ZeroOptions o = SpeculativeInPieces();
  o.speculative_step = zero::SpeculativeStep::kAuto;
  auto data = model::SyntheticBatches(spec.vocab_size(), 4);
  const double norm = Train(spec, o, *data, 1, 1).rank0[0].grad_norm;
  zero::ZeroOptions plain = o;
  plain.speculative_step = zero::SpeculativeStep::kOff;
  o.gradient_clipping = plain.gradient_clipping = norm / 100;
  const TrainRun run = Train(spec, o, *data, 1, 5);
  for (const StepStats& s : run.rank0) {
    EXPECT_EQ(s.speculation, StepStats::Speculation::kAborted) << s.step;
    EXPECT_EQ(s.speculative_pieces, 0) << s.step;
  }
  EXPECT_EQ(run.rank0_params, Train(spec, plain, *data, 1, 5).rank0_params);

  int split = 0;
  for (double fraction : {0.1, 0.125, 0.15, 0.175, 0.2}) {
    o.gradient_clipping = plain.gradient_clipping = norm * fraction;
    const TrainRun four = Train(spec, o, *data, 4, 5);
    std::set<std::vector<int>> schedules;
    for (const std::vector<StepStats>& r : four.ranks) {
      std::vector<int> tried;
      for (const StepStats& s : r) {
        tried.push_back(s.speculation != StepStats::Speculation::kNone);
      }
      schedules.insert(tried);
    }
    split += schedules.size() > 1 ? 1 : 0;
    EXPECT_EQ(four.races, 0) << fraction;
    EXPECT_EQ(four.rank0_params, Train(spec, plain, *data, 4, 5).rank0_params)
        << fraction;
  }
  EXPECT_GT(split, 0) << "every rank speculated on the same steps";
}

// The per-step agreements (GPU jobs' stop request and loss) allocate
// nothing: a few values go through buffers kept for them, and the sums are
// every rank's.
TEST(EngineTest, SumsAcrossRanksReuseTheirBuffers) {
  const model::ModelSpec spec = model::LoadModelSpec("tiny").value();
  auto data = model::SyntheticBatches(spec.vocab_size(), 3);
  sim::SimOptions so;
  so.profile = sim::TestProfile();
  so.world_size = 2;
  so.mode = sim::SimMode::kData;
  auto world = sim::SimWorld::Create(so);
  ASSERT_OK(world.status());
  ASSERT_OK((*world)->Run([&](runtime::Runtime& rt) -> absl::Status {
    ZR_ASSIGN_OR_RETURN(auto e, Engine::Create(spec, Small(), data.get(), rt));
    ZR_RETURN_IF_ERROR(e->Step().status());
    const int64_t pinned = rt.pinned_memory().stats().allocations;
    const int64_t device = rt.device().memory_stats().bytes_in_use;
    const float r = static_cast<float>(rt.rank() + 1);
    for (int i = 0; i < 3; ++i) {
      ZR_ASSIGN_OR_RETURN(std::vector<float> sums,
                          e->SumAcrossRanks({r, 10 * r}, "agreement"));
      EXPECT_EQ(sums, (std::vector<float>{3, 30}));
    }
    EXPECT_EQ(rt.pinned_memory().stats().allocations, pinned);
    EXPECT_EQ(rt.device().memory_stats().bytes_in_use, device);
    return absl::OkStatus();
  }));
}

TEST(EngineTest, SameSeedIsBitIdentical) {
  auto spec = model::LoadModelSpec("tiny").value();
  zero::ZeroOptions o = Small();
  o.accumulation = 2;
  auto data = model::SyntheticBatches(spec.vocab_size(), 9);
  const TrainRun a = Train(spec, o, *data, 3, 3);
  const TrainRun b = Train(spec, o, *data, 3, 3);
  ASSERT_EQ(a.rank0.size(), b.rank0.size());
  for (size_t s = 0; s < a.rank0.size(); ++s) {
    EXPECT_EQ(a.rank0[s].loss, b.rank0[s].loss);
    EXPECT_EQ(a.rank0[s].total_ns, b.rank0[s].total_ns);
  }
  EXPECT_EQ(a.rank0_params, b.rank0_params);
  EXPECT_EQ(a.trace, b.trace);
  o.seed = 6;
  const TrainRun c = Train(spec, o, *data, 3, 3);
  EXPECT_NE(a.rank0_params, c.rank0_params);
}

// The one-step delayed update: reading the state (a checkpoint's snapshot)
// applies the pending update to the master there, yet the training goes on
// on the same lag, bit for bit.
TEST(EngineTest, ReadingTheStateLeavesTheDelayedUpdateAsItWas) {
  auto spec = model::LoadModelSpec("tiny").value();
  zero::ZeroOptions o = Small();
  o.host_step_delayed = true;
  o.host_step_piece = 777;
  o.lr = 1e-2f;
  auto data = model::SyntheticBatches(spec.vocab_size(), 9);
  const TrainRun plain = Train(spec, o, *data, 2, 5);
  int reads = 0;
  const TrainRun read = Train(spec, o, *data, 2, 5, sim::SimMode::kData,
                              nullptr, [&](Engine& e) -> absl::Status {
                                if (e.steps_done() % 2 == 0)
                                  return absl::OkStatus();
                                ++reads;
                                return e.ExportState().status();
                              });
  EXPECT_GT(reads, 0);
  EXPECT_EQ(read.races, 0);
  ASSERT_EQ(plain.rank0.size(), read.rank0.size());
  for (size_t s = 0; s < plain.rank0.size(); ++s) {
    EXPECT_EQ(plain.rank0[s].loss, read.rank0[s].loss) << "step " << s;
  }
  EXPECT_EQ(plain.rank0_params, read.rank0_params);
}

// A committed speculation's pieces left over for the next forward: reading
// the state (a checkpoint's snapshot) runs them first, and the training goes
// on bit for bit as without the read, and as without speculation.
TEST(EngineTest, ReadingTheStateRunsACommittedSpeculationsLeftovers) {
  auto spec = model::LoadModelSpec("tiny").value();
  zero::ZeroOptions o = Small();
  o.speculative_step = zero::SpeculativeStep::kOn;
  o.host_step_in_forward = true;
  o.host_step_piece = 777;
  o.lr = 1e-2f;
  o.gradient_clipping = 0;  // every step commits
  sim::HardwareProfile slow_host = sim::TestProfile();
  slow_host.mutable_gpu()->set_memory_gib(64);
  slow_host.mutable_host()->set_memory_bandwidth_gbps_per_rank(0.02);
  slow_host.mutable_host()->set_memory_bandwidth_gbps_per_thread(0.01);
  auto data = model::SyntheticBatches(spec.vocab_size(), 9);
  const TrainRun plain =
      Train(spec, o, *data, 2, 5, sim::SimMode::kData, &slow_host);
  int reads = 0;
  const TrainRun read = Train(spec, o, *data, 2, 5, sim::SimMode::kData,
                              &slow_host, [&](Engine& e) -> absl::Status {
                                if (e.steps_done() % 2 == 0)
                                  return absl::OkStatus();
                                ++reads;
                                return e.ExportState().status();
                              });
  zero::ZeroOptions unspeculated = o;
  unspeculated.speculative_step = zero::SpeculativeStep::kOff;
  const TrainRun exact =
      Train(spec, unspeculated, *data, 2, 5, sim::SimMode::kData, &slow_host);
  EXPECT_GT(reads, 0);
  EXPECT_EQ(read.races, 0);
  int carried_before_a_read = 0;
  ASSERT_EQ(plain.rank0.size(), read.rank0.size());
  for (size_t s = 0; s < plain.rank0.size(); ++s) {
    EXPECT_EQ(read.rank0[s].speculation, StepStats::Speculation::kCommitted);
    if (s % 2 == 0) carried_before_a_read += read.rank0[s].carried_pieces;
    EXPECT_EQ(plain.rank0[s].loss, read.rank0[s].loss) << "step " << s;
    EXPECT_EQ(exact.rank0[s].loss, read.rank0[s].loss) << "step " << s;
  }
  EXPECT_GT(carried_before_a_read, 0) << "no read found pieces left over";
  EXPECT_EQ(plain.rank0_params, read.rank0_params);
  EXPECT_EQ(exact.rank0_params, read.rank0_params);
}

// Where the host is slower than backward: with the host update under the
// next forward as well, the speculation's pieces not reached when the norm
// is known run there, so the host never waits for them at the step's end.
// Qwen2.5-1.5B, one H200, optimizer on the host (virtual time).
TEST(EngineTest, CarryingTheSpeculationOverShortensTheStep) {
  auto spec = model::LoadModelSpec("qwen2.5-1.5b").value();
  auto profile = sim::LoadProfile("h200_sxm").value();
  zero::ZeroOptions o = OffloadedBf16(4, 2048);
  o.speculative_step = zero::SpeculativeStep::kOn;
  auto data = model::SyntheticBatches(spec.vocab_size(), 1);
  const TrainRun at_end =
      Train(spec, o, *data, 1, 3, sim::SimMode::kTiming, &profile);
  o.host_step_in_forward = true;
  const TrainRun carried =
      Train(spec, o, *data, 1, 3, sim::SimMode::kTiming, &profile);
  const StepStats& last = carried.rank0.back();
  EXPECT_EQ(at_end.rank0.back().carried_pieces, 0);
  EXPECT_GT(last.carried_pieces, 0);
  EXPECT_GT(last.speculative_pieces, 0);
  EXPECT_LT(last.total_ns, at_end.rank0.back().total_ns);
}

TEST(EngineTest, LossFallsOnTheShippedText) {
  auto spec = model::LoadModelSpec("tiny").value();
  zero::ZeroOptions o = Small();
  o.micro_batch = 4;
  o.seq = 64;
  auto data =
      model::TextBatchesFromBytes(
          "corpus", std::string(testdata::kCorpus, testdata::kCorpusSize),
          o.seq, 1)
          .value();
  const TrainRun run = Train(spec, o, *data, 2, 200);
  double first = run.rank0.front().loss, last = 0;
  for (size_t s = run.rank0.size() - 10; s < run.rank0.size(); ++s) {
    last += run.rank0[s].loss / 10;
  }
  EXPECT_GT(first, 5.0);  // about log(259)
  EXPECT_LT(last, first - 2.0) << "first " << first << ", last " << last;
}

// What the motivating change bought: with pinned memory and asynchronous
// copies the gradient offload hides under backward; blocking copies into
// pageable memory stall the host thread that launches backward.
TEST(EngineTest, AsyncPinnedOffloadShortensBackwardInVirtualTime) {
  auto spec = model::LoadModelSpec("qwen2.5-0.5b").value();
  auto profile = sim::LoadProfile("h200_sxm").value();
  zero::ZeroOptions o = OffloadedBf16(2, 1024);
  o.reduce_bucket_size = 50000000;
  auto data = model::SyntheticBatches(spec.vocab_size(), 1);
  const TrainRun async =
      Train(spec, o, *data, 2, 2, sim::SimMode::kTiming, &profile);
  o.optimizer_pin_memory = false;
  o.grad_offload = zero::GradOffload::kBlocking;
  const TrainRun blocking =
      Train(spec, o, *data, 2, 2, sim::SimMode::kTiming, &profile);
  const int64_t async_bwd = async.rank0.back().bwd_ns;
  const int64_t blocking_bwd = blocking.rank0.back().bwd_ns;
  EXPECT_LT(async_bwd, blocking_bwd);
  // The trace shows where the blocking run's time went: the host blocked in
  // pageable gradient copies.
  EXPECT_TRUE(
      absl::StrContains(blocking.trace, "blocked: pageable copy grad D2H"));
  EXPECT_FALSE(absl::StrContains(async.trace, "blocked: pageable copy"));
}

// NCCL runs a communicator's collectives in issue order, so a reduce-scatter
// issued before the next module's all-gather would hold it back until the
// current module's gradients are done. The engine issues the next module's
// gathers first: in backward, every reduce-scatter of a parameter's
// gradient follows the gather of a module that runs after it (lower ids),
// not the gather of its own module.
TEST(EngineTest, ReduceScattersFollowTheNextModulesGathers) {
  auto spec = model::LoadModelSpec("tiny").value();
  zero::ZeroOptions o = Small();
  o.offload_optimizer = false;
  o.reduce_bucket_size = 1;           // a bucket per parameter
  o.prefetch_bucket_size = 0;         // gathers only when a module begins
  o.param_persistence_threshold = 0;  // every module gathers
  o.max_reuse_distance = 0;
  auto data = model::SyntheticBatches(spec.vocab_size(), 1);
  const TrainRun run = Train(spec, o, *data, 2, 1, sim::SimMode::kTiming);
  int lowest_gathered = 1 << 30;  // of the latest gather
  int checked = 0;
  for (const std::string& name : run.rank0_fabric) {
    int first = 0, last = 0;
    if (std::sscanf(name.c_str(), "all-gather params %d..%d", &first, &last) ==
        2) {
      lowest_gathered = std::min(first, last);
    } else if (std::sscanf(name.c_str(), "all-gather param %d", &first) == 1) {
      lowest_gathered = first;
    }
    int bucket = 0;
    if (std::sscanf(name.c_str(), "reduce-scatter bucket %d", &bucket) != 1) {
      continue;
    }
    const int param = run.param_count - 1 - bucket;
    if (param == 0) continue;  // the embedding: no module runs after it
    EXPECT_LT(lowest_gathered, param)
        << "the reduce-scatter of parameter " << param
        << " was issued before the next module's gather";
    ++checked;
  }
  EXPECT_GT(checked, 4);
}

// How many times `needle` occurs in `haystack`.
int Occurrences(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

// DeepSpeed's gradient path makes its round trip through the host gradient
// buffer with every parameter: to the host and back at the first
// micro-step, back to the device and to the host again at a later one.
TEST(EngineTest, DeepSpeedsPathTakesEachGradientThroughItsHostBuffer) {
  auto spec = model::LoadModelSpec("tiny").value();
  zero::ZeroOptions o = Small();
  o.per_param_fp32_grads = true;
  o.accumulation = 2;
  auto data = model::SyntheticBatches(spec.vocab_size(), 1);
  const TrainRun run = Train(spec, o, *data, 2, 2);
  EXPECT_EQ(run.races, 0);
  const int params = static_cast<int>(run.param_names.size());
  ASSERT_GT(params, 0);
  // Two ranks, two steps: one round trip of each kind per parameter each;
  // the trace draws each copy twice, on its stream's track and on the copy
  // engine's.
  const int spans = 2 * 2 * 2 * params;
  EXPECT_EQ(Occurrences(run.trace, "\"grad H2D back param "), spans);
  EXPECT_EQ(Occurrences(run.trace, "\"grad H2D to add param "), spans);
  EXPECT_EQ(Occurrences(run.trace, "\"grad D2H to DeepSpeed's buffer param "),
            2 * spans);
  o.per_param_fp32_grads = false;
  const TrainRun bucketed = Train(spec, o, *data, 2, 2);
  EXPECT_EQ(Occurrences(bucketed.trace, "DeepSpeed's buffer"), 0);
  // The round trip leaves the values as they were.
  EXPECT_EQ(run.rank0_params, bucketed.rank0_params);
}

// zero3.host_work_per_grad_us: the host thread spends it per parameter;
// where each parameter's copy blocks the host (DeepSpeed before its
// asynchronous copies), none of it hides under the device's work.
TEST(EngineTest, HostWorkPerGradientAddsUpWhereCopiesBlock) {
  auto spec = model::LoadModelSpec("qwen2.5-0.5b").value();
  auto profile = sim::LoadProfile("h200_sxm").value();
  zero::ZeroOptions o = OffloadedBf16(2, 1024);
  o.per_param_fp32_grads = true;
  o.grad_offload = zero::GradOffload::kBlocking;
  auto data = model::SyntheticBatches(spec.vocab_size(), 1);
  const TrainRun plain =
      Train(spec, o, *data, 1, 2, sim::SimMode::kTiming, &profile);
  constexpr int64_t kWorkNs = 200000;
  o.host_work_per_grad_ns = kWorkNs;
  int params = 0;
  const TrainRun hooked = Train(spec, o, *data, 1, 2, sim::SimMode::kTiming,
                                &profile, [&](Engine& e) {
                                  params = e.layout().num_params();
                                  return absl::OkStatus();
                                });
  ASSERT_GT(params, 0);
  EXPECT_EQ(Occurrences(hooked.trace, "\"host work for 1 gradients\""),
            2 * params);
  EXPECT_EQ(Occurrences(plain.trace, "\"host work for "), 0);
  EXPECT_GE(hooked.rank0.back().bwd_ns - plain.rank0.back().bwd_ns,
            params * kWorkNs);
  // zero3's own path does the same work, once per bucket for its
  // parameters.
  o.per_param_fp32_grads = false;
  const TrainRun bucketed =
      Train(spec, o, *data, 1, 2, sim::SimMode::kTiming, &profile);
  static const std::regex re(R"re("host work for ([0-9]+) gradients")re");
  int worked = 0, tasks = 0;
  for (std::sregex_iterator
           it(bucketed.trace.begin(), bucketed.trace.end(), re),
       end;
       it != end; ++it) {
    worked += std::stoi((*it)[1]);
    ++tasks;
  }
  EXPECT_EQ(worked, 2 * params);
  EXPECT_LT(tasks, 2 * params);
}

// Rank 0's host-thread spans of a trace: name, start and end (us).
struct HostSpan {
  std::string name;
  double start, end;
};
std::vector<HostSpan> HostSpans(const std::string& trace) {
  static const std::regex re(
      R"re("name":"([^"]*)","cat":"[^"]*","pid":0,"tid":0,"ts":([0-9.]+),"dur":([0-9.]+))re");
  std::vector<HostSpan> spans;
  for (std::sregex_iterator it(trace.begin(), trace.end(), re), end; it != end;
       ++it) {
    const double ts = std::stod((*it)[2]);
    spans.push_back({(*it)[1], ts, ts + std::stod((*it)[3])});
  }
  return spans;
}

// The delayed update's pieces fill the host's waits while it issues the
// backward (a full launch queue), instead of all waiting until backward
// is issued: in the last step, a piece runs before the host's last wait.
TEST(EngineTest, DelayedPiecesRunWhileTheHostWaitsToIssue) {
  auto spec = model::LoadModelSpec("qwen2.5-1.5b").value();
  auto profile = sim::LoadProfile("h200_sxm").value();
  zero::ZeroOptions o = OffloadedBf16(4, 2048);
  o.host_step_delayed = true;
  auto data = model::SyntheticBatches(spec.vocab_size(), 1);
  const TrainRun run =
      Train(spec, o, *data, 1, 3, sim::SimMode::kTiming, &profile);
  const std::vector<HostSpan> spans = HostSpans(run.trace);
  const HostSpan* bwd = nullptr;
  for (const HostSpan& s : spans) {
    if (s.name == "BWD") bwd = &s;
  }
  ASSERT_NE(bwd, nullptr);
  double first_piece = -1, last_wait = -1;
  for (const HostSpan& s : spans) {
    if (s.start < bwd->start || s.end > bwd->end) continue;
    if (absl::StartsWith(s.name, "adamw") && first_piece < 0) {
      first_piece = s.start;
    }
    if (absl::StartsWith(s.name, "blocked: launch queue full")) {
      last_wait = s.start;
    }
  }
  ASSERT_GE(first_piece, 0) << "no piece ran during backward";
  ASSERT_GE(last_wait, 0) << "the host never waited to issue";
  EXPECT_LT(first_piece, last_wait);
}

// The host share of the optimizer on rank 0, with a device of `gib`.
double HostShare(const zero::ZeroOptions& o, double gib = 64) {
  sim::SimOptions so;
  so.profile = sim::TestProfile();
  so.profile.mutable_gpu()->set_memory_gib(gib);
  so.world_size = 2;
  auto world = sim::SimWorld::Create(so);
  ZR_CHECK_OK(world.status());
  const model::ModelSpec spec = model::LoadModelSpec("tiny").value();
  auto data = model::SyntheticBatches(spec.vocab_size(), 1);
  double share = -1;
  const absl::Status run =
      (*world)->Run([&](runtime::Runtime& rt) -> absl::Status {
        ZR_ASSIGN_OR_RETURN(auto e, Engine::Create(spec, o, data.get(), rt));
        if (rt.rank() == 0) share = e->host_share();
        return absl::OkStatus();
      });
  return run.ok() ? share : -1;
}

// offload_optimizer.ratio is the host's share, cut at a parameter boundary.
TEST(EngineTest, OffloadRatioIsTheHostShare) {
  zero::ZeroOptions o = Small();
  EXPECT_EQ(HostShare(o), 1.0);
  o.offload_ratio = 0;
  EXPECT_EQ(HostShare(o), 0.0);
  o.offload_ratio = 0.5;
  const double half = HostShare(o);
  EXPECT_GT(half, 0.3);
  EXPECT_LT(half, 0.7);
  o.offload_optimizer = false;
  EXPECT_EQ(HostShare(o), 0.0);
}

// auto keeps on the device what fits there: all of it on a large device,
// less as the device shrinks, down to none where the device holds little
// more than the model; every choice leaves room for the engine's buffers.
TEST(EngineTest, AutoOffloadRatioFollowsFreeDeviceMemory) {
  zero::ZeroOptions o = Small();
  o.auto_offload_ratio = true;
  EXPECT_EQ(HostShare(o, 64), 0.0);
  std::vector<double> shares;
  for (double gib = 0.0006; gib < 0.002; gib *= 1.1) {
    const double share = HostShare(o, gib);
    if (share >= 0) shares.push_back(share);  // else too small to run at all
  }
  ASSERT_GE(shares.size(), 3u);
  EXPECT_EQ(shares.front(), 1.0);
  EXPECT_EQ(shares.back(), 0.0);
  int partial = 0;
  for (size_t i = 0; i < shares.size(); ++i) {
    if (i > 0) {
      EXPECT_LE(shares[i], shares[i - 1]);
    }
    partial += shares[i] > 0 && shares[i] < 1;
  }
  EXPECT_GT(partial, 0);
}

}  // namespace
}  // namespace engine
}  // namespace zero3
