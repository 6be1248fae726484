// Copyright 2026 The zero3 Authors.
//
// Engine::Evaluate: forward passes on held-out data between steps.
//
// Oracles: the training step's own loss (a step's forward sees the same
// parameters an evaluation just before it does, so evaluating the step's
// batch gives the step's loss, to the float sum of its terms: 1e-6), the
// split of the global batch over ranks and micro-batches (1e-6), and
// training without evaluation (bit for bit: evaluation changes nothing).

#include <cmath>
#include <cstdlib>
#include <vector>

#include "core/engine/engine.h"
#include "core/model/presets.h"
#include "core/util/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/simulator.h"
#include "sim/testing/test_profile.h"
#include "testing/internal/masked_examples.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace testing {
namespace {

struct TrainedRun {
  std::vector<double> losses;              // per step, mean over ranks
  std::vector<engine::EvalStats> evals;    // rank 0's, in order
  std::vector<std::vector<float>> params;  // rank 0's master shards
  std::vector<std::string> races;
};

zero::ZeroOptions Options(int micro_batch, int accumulation, bool offload) {
  zero::ZeroOptions o;
  o.micro_batch = micro_batch;
  o.accumulation = accumulation;
  o.seq = 8;
  o.lr = 1e-2f;
  o.seed = 42;
  o.offload_optimizer = offload;
  return o;
}

// `steps` steps; before step s where evaluate_before[s], an evaluation of
// `batches` batches of `held_out`.
absl::StatusOr<TrainedRun> Train(const zero::ZeroOptions& options, int world,
                                 int steps, const model::BatchSource& data,
                                 const model::BatchSource& held_out,
                                 const std::vector<bool>& evaluate_before,
                                 int64_t batches) {
  ZR_ASSIGN_OR_RETURN(model::ModelSpec spec, model::LoadModelSpec("tiny"));
  sim::SimOptions sim;
  sim.profile = sim::TestProfile();
  sim.world_size = world;
  sim.mode = sim::SimMode::kData;
  ZR_ASSIGN_OR_RETURN(auto simulated, sim::SimWorld::Create(sim));
  TrainedRun run;
  run.losses.assign(steps, 0.0);
  ZR_RETURN_IF_ERROR(simulated->Run([&](runtime::Runtime& rt) -> absl::Status {
    ZR_ASSIGN_OR_RETURN(auto e,
                        engine::Engine::Create(spec, options, &data, rt));
    for (int s = 0; s < steps; ++s) {
      if (evaluate_before[s]) {
        ZR_ASSIGN_OR_RETURN(engine::EvalStats eval,
                            e->Evaluate(held_out, batches));
        if (rt.rank() == 0) run.evals.push_back(eval);
      }
      ZR_ASSIGN_OR_RETURN(engine::StepStats stats, e->Step());
      run.losses[s] += stats.loss / world;
    }
    if (rt.rank() == 0) {
      for (int p = 0; p < e->layout().num_params(); ++p) {
        ZR_ASSIGN_OR_RETURN(std::vector<float> shard, e->MasterParam(p));
        run.params.push_back(std::move(shard));
      }
    }
    return absl::OkStatus();
  }));
  for (const sim::RaceReport& r : simulated->races()) {
    run.races.push_back(r.message);
  }
  return run;
}

class EvalTest : public ::testing::TestWithParam<bool> {};

TEST_P(EvalTest, EvaluatingTheNextBatchGivesTheStepsLoss) {
  const bool offload = GetParam();
  ASSERT_OK_AND_ASSIGN(auto data, MaskedExamples("next", 50, 259, 8, 5));
  const zero::ZeroOptions options = Options(2, 2, offload);
  // Evaluating the training data itself before step 0: batch 0 is step 0's.
  ASSERT_OK_AND_ASSIGN(TrainedRun run,
                       Train(options, 2, 2, *data, *data, {true, false}, 1));
  EXPECT_THAT(run.races, ::testing::IsEmpty());
  ASSERT_EQ(run.evals.size(), 1u);
  EXPECT_NEAR(run.evals[0].loss, run.losses[0], 1e-6 * run.losses[0]);
  EXPECT_GT(run.evals[0].predicted_tokens, 0);
}

TEST_P(EvalTest, EvaluationChangesNothingInTraining) {
  const bool offload = GetParam();
  ASSERT_OK_AND_ASSIGN(auto data, MaskedExamples("train", 50, 259, 8, 5));
  ASSERT_OK_AND_ASSIGN(auto held_out, MaskedExamples("held", 20, 259, 8, 6));
  const zero::ZeroOptions options = Options(2, 2, offload);
  ASSERT_OK_AND_ASSIGN(
      TrainedRun plain,
      Train(options, 2, 4, *data, *held_out, {false, false, false, false}, 2));
  ASSERT_OK_AND_ASSIGN(
      TrainedRun evaluated,
      Train(options, 2, 4, *data, *held_out, {false, true, false, true}, 2));
  EXPECT_THAT(evaluated.races, ::testing::IsEmpty());
  EXPECT_EQ(evaluated.losses, plain.losses);
  EXPECT_EQ(evaluated.params, plain.params);
  ASSERT_EQ(evaluated.evals.size(), 2u);
  // The same held-out batches, later parameters: another loss.
  EXPECT_EQ(evaluated.evals[0].predicted_tokens,
            evaluated.evals[1].predicted_tokens);
  EXPECT_NE(evaluated.evals[1].loss, evaluated.evals[0].loss);
}

TEST_P(EvalTest, TheSplitOfTheBatchDoesNotMatter) {
  const bool offload = GetParam();
  ASSERT_OK_AND_ASSIGN(auto data, MaskedExamples("split_train", 50, 259, 8, 5));
  ASSERT_OK_AND_ASSIGN(auto held_out,
                       MaskedExamples("split_held", 24, 259, 8, 7));
  ASSERT_OK_AND_ASSIGN(TrainedRun one, Train(Options(8, 1, offload), 1, 1,
                                             *data, *held_out, {true}, 3));
  ASSERT_OK_AND_ASSIGN(TrainedRun two, Train(Options(2, 2, offload), 2, 1,
                                             *data, *held_out, {true}, 3));
  ASSERT_EQ(one.evals.size(), 1u);
  ASSERT_EQ(two.evals.size(), 1u);
  EXPECT_EQ(one.evals[0].predicted_tokens, two.evals[0].predicted_tokens);
  EXPECT_NEAR(two.evals[0].loss, one.evals[0].loss, 1e-6 * one.evals[0].loss);
}

// Packed examples attend only to themselves, with positions from 0: the
// whole held-out set evaluated packed gives the loss it gives one example
// per sample (the path transformers checks, oracle_test), to float sums
// (1e-6 relative).
TEST_P(EvalTest, PackedExamplesScoreAsTheyDoAlone) {
  const bool offload = GetParam();
  ASSERT_OK_AND_ASSIGN(auto data, MaskedExamples("pack_train", 50, 259, 16, 5));
  ASSERT_OK_AND_ASSIGN(auto padded,
                       MaskedExamples("pack_pad", 30, 259, 16, 9, false));
  ASSERT_OK_AND_ASSIGN(auto packed,
                       MaskedExamples("pack_pack", 30, 259, 16, 9, true));
  ASSERT_LT(packed->samples_per_epoch(), padded->samples_per_epoch());
  zero::ZeroOptions options = Options(1, 1, offload);
  options.seq = 16;
  // After 20 steps, so that attention is far from uniform and a leak
  // across examples would show.
  std::vector<bool> at_end(21, false);
  at_end.back() = true;
  ASSERT_OK_AND_ASSIGN(TrainedRun one,
                       Train(options, 1, 21, *data, *padded, at_end,
                             padded->samples_per_epoch()));
  ASSERT_OK_AND_ASSIGN(TrainedRun two,
                       Train(options, 1, 21, *data, *packed, at_end,
                             packed->samples_per_epoch()));
  EXPECT_THAT(two.races, ::testing::IsEmpty());
  EXPECT_EQ(one.evals[0].predicted_tokens, two.evals[0].predicted_tokens);
  // Equal to float rounding (measured: all 9 digits); a leak across
  // examples moves it by about 1e-4.
  EXPECT_NEAR(two.evals[0].loss, one.evals[0].loss, 1e-6 * one.evals[0].loss);
}

INSTANTIATE_TEST_SUITE_P(Offload, EvalTest, ::testing::Bool());

// With the parameters on NVMe an evaluation reads them as the steps do (no
// read ahead: it records no module order): training is bit for bit that
// without evaluation, and the evaluations those with the parameters in
// host memory.
TEST(EvalTest, ParamsOnNvme) {
  ASSERT_OK_AND_ASSIGN(auto data, MaskedExamples("nvme_train", 50, 259, 8, 5));
  ASSERT_OK_AND_ASSIGN(auto held_out,
                       MaskedExamples("nvme_held", 20, 259, 8, 6));
  zero::ZeroOptions in_memory = Options(2, 2, true);
  in_memory.offload_param = true;
  zero::ZeroOptions on_nvme = in_memory;
  const char* tmp = std::getenv("TEST_TMPDIR");
  on_nvme.param_nvme_path = tmp != nullptr ? tmp : "/tmp";
  on_nvme.param_nvme_buffers = 2;
  on_nvme.host_step_piece = 777;
  const std::vector<bool> evaluate = {false, true, false, true};
  ASSERT_OK_AND_ASSIGN(
      TrainedRun plain,
      Train(on_nvme, 2, 4, *data, *held_out, {false, false, false, false}, 2));
  ASSERT_OK_AND_ASSIGN(TrainedRun evaluated,
                       Train(on_nvme, 2, 4, *data, *held_out, evaluate, 2));
  ASSERT_OK_AND_ASSIGN(TrainedRun memory,
                       Train(in_memory, 2, 4, *data, *held_out, evaluate, 2));
  EXPECT_THAT(evaluated.races, ::testing::IsEmpty());
  EXPECT_EQ(evaluated.losses, plain.losses);
  EXPECT_EQ(evaluated.params, plain.params);
  ASSERT_EQ(evaluated.evals.size(), 2u);
  ASSERT_EQ(memory.evals.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(evaluated.evals[i].loss, memory.evals[i].loss) << i;
  }
}

}  // namespace
}  // namespace testing
}  // namespace zero3
