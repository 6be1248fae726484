// Copyright 2026 The zero3 Authors.
//
// `zero3 calibrate --backend sim`: the written profile with and without the
// in-step fit, and the errors of its flags.

#include "tools/cli/calibrate_command.h"

#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/profiles.h"
#include "tools/cli/command.h"

namespace zero3 {
namespace cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Result {
  int code;
  std::string out;
  std::string err;
};

// Small shapes: Qwen2.5-0.5B at 512 tokens, 64 MiB copies.
Result RunCalibrate(std::vector<std::string> args) {
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(NewCalibrateCommand());
  std::vector<std::string> all = {
      "calibrate",    "--backend",     "sim",   "--models",
      "qwen2.5-0.5b", "--batches",     "1x512", "--max-mib",
      "64",           "--reps",        "3",     "--fit-model",
      "qwen2.5-0.5b", "--fit-batches", "1x512", "--judge-batches",
      "2x512"};
  all.insert(all.end(), args.begin(), args.end());
  std::ostringstream out, err;
  const int code = RunCommandLine("zero3", commands, all, out, err);
  return {code, out.str(), err.str()};
}

// The profile a successful run wrote, with the fitted GEMM and optimizer
// factors checked against h200_sxm's (one GPU: the GEMM factor times the
// one-GPU scale), within 2%.
void ExpectTheBaseFactors(const Result& r) {
  ASSERT_EQ(r.code, kExitOk) << r.err;
  absl::StatusOr<sim::HardwareProfile> p = sim::ParseProfile(r.out, "out");
  ASSERT_TRUE(p.ok()) << p.status();
  const sim::HardwareProfile base = sim::LoadProfile("h200_sxm").value();
  const double gemm =
      base.gpu().gemm_in_step_factor() * base.gpu().single_gpu_in_step_scale();
  EXPECT_NEAR(p->gpu().gemm_in_step_factor(), gemm, 0.02 * gemm);
  EXPECT_NEAR(p->gpu().optimizer_in_step_factor(),
              base.gpu().optimizer_in_step_factor(),
              0.02 * base.gpu().optimizer_in_step_factor());
}

TEST(CalibrateCommandTest, FitsTheInStepFiguresOfTheSimulatedProfile) {
  const Result r = RunCalibrate({});
  ExpectTheBaseFactors(r);
  EXPECT_THAT(r.out, HasSubstr("# Fitted from training steps"));
  EXPECT_THAT(r.out, HasSubstr("#   gpu.gemm_in_step_factor = "));
  // Progress on stderr, the held-out errors and the wall time.
  EXPECT_THAT(r.err, HasSubstr("calibrate [ "));
  EXPECT_THAT(r.err, HasSubstr("training steps: qwen2.5-0.5b 2x512 pinned"));
  EXPECT_THAT(r.err, HasSubstr("held-out qwen2.5-0.5b 2x512 none "));
  EXPECT_THAT(r.err, HasSubstr("calibration took "));
}

// Several fit models: each runs at every micro-batch, and the figures,
// fitted over all of them, still come back.
TEST(CalibrateCommandTest, FitsOverSeveralModels) {
  const Result r = RunCalibrate({"--fit-model", "qwen2.5-0.5b,tiny"});
  ExpectTheBaseFactors(r);
  EXPECT_THAT(r.err, HasSubstr("training steps: qwen2.5-0.5b 1x512 pinned"));
  EXPECT_THAT(r.err, HasSubstr("training steps: tiny 1x512 pinned"));
  EXPECT_THAT(r.err, HasSubstr("held-out tiny 2x512 none "));
  EXPECT_THAT(r.err, HasSubstr("held-out qwen2.5-0.5b 2x512 none "));
}

// Unnamed, the written profile is named after its base and says it was
// calibrated; --name names it.
TEST(CalibrateCommandTest, TheProfileIsNamedCalibratedUnlessNamed) {
  for (const auto& [args, name] :
       std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--no-fit"}, "h200_sxm_calibrated"},
           {{"--no-fit", "--name", "my_node"}, "my_node"}}) {
    const Result r = RunCalibrate(args);
    ASSERT_EQ(r.code, kExitOk) << r.err;
    absl::StatusOr<sim::HardwareProfile> p = sim::ParseProfile(r.out, "out");
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(p->name(), name);
  }
}

TEST(CalibrateCommandTest, AnEmptyFitModelNameIsAUsageError) {
  const Result r = RunCalibrate({"--fit-model", "qwen2.5-0.5b,"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("--fit-model: 'qwen2.5-0.5b,'"));
}

TEST(CalibrateCommandTest, NoFitLeavesTheInStepFiguresUnset) {
  const Result r = RunCalibrate({"--no-fit"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  absl::StatusOr<sim::HardwareProfile> p = sim::ParseProfile(r.out, "out");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE(p->gpu().has_gemm_in_step_factor());
  EXPECT_FALSE(p->gpu().has_attention_in_step_factor());
  EXPECT_FALSE(p->gpu().has_elementwise_in_step_factor());
  EXPECT_FALSE(p->gpu().has_optimizer_in_step_factor());
  EXPECT_FALSE(p->gpu().has_single_gpu_in_step_scale());
  EXPECT_FALSE(p->gpu().has_copy2d_gbps());
  EXPECT_THAT(r.out, Not(HasSubstr("Fitted from training steps")));
  EXPECT_THAT(r.err, Not(HasSubstr("training steps:")));
}

TEST(CalibrateCommandTest, ACaseThatDoesNotFitNamesTheFlags) {
  const Result r = RunCalibrate({"--fit-batches", "64x32768"});
  EXPECT_NE(r.code, kExitOk);
  EXPECT_THAT(r.err, HasSubstr("case qwen2.5-0.5b 64x32768 none on 1 GPU(s) "
                               "does not fit"));
  EXPECT_THAT(r.err, HasSubstr("--no-fit"));
  // Before anything was measured.
  EXPECT_THAT(r.err, Not(HasSubstr("GEMMs")));
}

TEST(CalibrateCommandTest, BadBatchesNameTheFlag) {
  const Result r = RunCalibrate({"--judge-batches", "4by2048"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("--judge-batches: '4by2048'"));
}

}  // namespace
}  // namespace cli
}  // namespace zero3
