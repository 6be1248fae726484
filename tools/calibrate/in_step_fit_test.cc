// Copyright 2026 The zero3 Authors.
//
// The in-step fit on the simulator: a "truth" profile with known in-step
// figures plays the machine, its isolated figures (the same profile
// without them) are what calibrate measured, and the fit must find the
// truth's figures again.

#include "tools/calibrate/in_step_fit.h"

#include <cmath>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "core/model/presets.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/profiles.h"
#include "tools/calibrate/calibrate.h"
#include "tools/whatif/whatif.h"

namespace zero3 {
namespace calibrate {
namespace {

using ::testing::HasSubstr;

constexpr double kHostRate = 0.7;  // in step, against alone

sim::HardwareProfile Isolated() {
  sim::HardwareProfile p = sim::LoadProfile("h200_sxm").value();
  ClearInStepAdjustments(&p);
  return p;
}

sim::HardwareProfile Truth() {
  sim::HardwareProfile p = Isolated();
  p.mutable_gpu()->set_gemm_in_step_factor(1.27);
  p.mutable_gpu()->set_attention_in_step_factor(1.07);
  p.mutable_gpu()->set_elementwise_in_step_factor(1.28);
  p.mutable_gpu()->set_optimizer_in_step_factor(1.19);
  p.mutable_gpu()->set_copy2d_gbps(97.6);
  sim::HostProfile* h = p.mutable_host();
  h->set_memory_bandwidth_gbps_per_rank(h->memory_bandwidth_gbps_per_rank() *
                                        kHostRate);
  h->set_memory_bandwidth_gbps_per_thread(
      h->memory_bandwidth_gbps_per_thread() * kHostRate);
  h->set_memory_bandwidth_gbps_per_node(h->memory_bandwidth_gbps_per_node() *
                                        kHostRate);
  for (sim::CurvePoint& c : *h->mutable_memory_bandwidth_by_threads()) {
    c.set_value(c.value() * kHostRate);
  }
  return p;
}

// Qwen2.5-0.5B at short sequences: a second of simulation for the whole
// fit, and kernels long enough that the shortest-kernel floor is a small
// part of each class.
std::vector<StepCase> Cases() {
  return DefaultCases(model::LoadModelSpec("qwen2.5-0.5b").value(), {{1, 1024}},
                      {{2, 1024}}, 1);
}

bool Near(double got, double want, double rel) {
  return std::abs(got - want) <= rel * std::abs(want);
}

// Each case's FWD, BWD and STEP on `fitted` within 2% of `truth`'s.
void ExpectSamePhases(const sim::HardwareProfile& truth,
                      const sim::HardwareProfile& fitted,
                      const std::vector<StepCase>& cases) {
  for (const StepCase& c : cases) {
    whatif::StepInput in;
    in.spec = c.spec;
    in.options = c.options;
    in.gpus = c.gpus;
    in.steps = 3;
    in.profile = truth;
    const whatif::Metrics want = whatif::SimulateStep(in).value().metrics;
    in.profile = fitted;
    const whatif::Metrics got = whatif::SimulateStep(in).value().metrics;
    EXPECT_TRUE(Near(got.fwd_ms, want.fwd_ms, 0.02)) << c.name;
    EXPECT_TRUE(Near(got.bwd_ms, want.bwd_ms, 0.02)) << c.name;
    EXPECT_TRUE(Near(got.step_ms, want.step_ms, 0.02)) << c.name;
  }
}

TEST(InStepFitTest, FindsTheTruthsFiguresAndReproducesItsSteps) {
  const sim::HardwareProfile truth = Truth();
  const sim::HardwareProfile isolated = Isolated();
  std::vector<std::string> progress;
  FitOptions o;
  o.progress = [&](const std::string& line) { progress.push_back(line); };
  absl::StatusOr<FitResult> fit =
      FitInStep(isolated, Cases(), SimulatedStepRunner(truth), o);
  ASSERT_TRUE(fit.ok()) << fit.status();
  const sim::GpuProfile& g = fit->profile.gpu();
  // Tolerance 2% on every figure.
  EXPECT_TRUE(Near(g.gemm_in_step_factor(), 1.27, 0.02))
      << g.gemm_in_step_factor();
  EXPECT_TRUE(Near(g.attention_in_step_factor(), 1.07, 0.02))
      << g.attention_in_step_factor();
  EXPECT_TRUE(Near(g.elementwise_in_step_factor(), 1.28, 0.02))
      << g.elementwise_in_step_factor();
  EXPECT_TRUE(Near(g.optimizer_in_step_factor(), 1.19, 0.02))
      << g.optimizer_in_step_factor();
  EXPECT_TRUE(Near(fit->profile.host().memory_bandwidth_gbps_per_rank(),
                   truth.host().memory_bandwidth_gbps_per_rank(), 0.02))
      << fit->profile.host().memory_bandwidth_gbps_per_rank();
  EXPECT_TRUE(Near(g.copy2d_gbps(), 97.6, 0.02)) << g.copy2d_gbps();
  EXPECT_FALSE(g.has_single_gpu_in_step_scale());
  // Each figure improved the held-out prediction, so all are kept, and
  // each written one has a note.
  EXPECT_THAT(fit->report,
              HasSubstr("kept gpu.gemm_in_step_factor, "
                        "gpu.attention_in_step_factor, "
                        "gpu.elementwise_in_step_factor, "
                        "gpu.optimizer_in_step_factor, "
                        "host.memory_bandwidth_*, gpu.copy2d_gbps"));
  EXPECT_EQ(fit->notes.size(), 7u);  // six figures and the one-GPU line
  EXPECT_THAT(fit->report, HasSubstr("held-out qwen2.5-0.5b 2x1024 pinned"));
  EXPECT_EQ(progress.size(), 6u);  // 4 cases, fitting, judging
  // The fitted profile predicts the truth's phases of every case within 2%.
  ExpectSamePhases(truth, fit->profile, Cases());
}

TEST(InStepFitTest, FitsTheOneGpuScaleOnSeveralGpus) {
  sim::HardwareProfile truth = Truth();
  truth.mutable_gpu()->set_single_gpu_in_step_scale(0.936);
  const std::vector<StepCase> cases =
      DefaultCases(model::LoadModelSpec("qwen2.5-0.5b").value(), {{1, 1024}},
                   {{2, 1024}}, 2);
  ASSERT_EQ(cases.size(), 6u);
  EXPECT_EQ(cases[4].gpus, 1);
  EXPECT_FALSE(cases[4].held_out);
  EXPECT_EQ(cases[5].gpus, 1);
  EXPECT_TRUE(cases[5].held_out);
  absl::StatusOr<FitResult> fit =
      FitInStep(Isolated(), cases, SimulatedStepRunner(truth), {});
  ASSERT_TRUE(fit.ok()) << fit.status();
  const sim::GpuProfile& g = fit->profile.gpu();
  EXPECT_TRUE(Near(g.gemm_in_step_factor(), 1.27, 0.02))
      << g.gemm_in_step_factor();
  EXPECT_TRUE(Near(g.elementwise_in_step_factor(), 1.28, 0.02))
      << g.elementwise_in_step_factor();
  EXPECT_TRUE(Near(g.single_gpu_in_step_scale(), 0.936, 0.02))
      << g.single_gpu_in_step_scale() << "\n"
      << fit->report;
  EXPECT_THAT(fit->report, HasSubstr("gpu.single_gpu_in_step_scale"));
  ExpectSamePhases(truth, fit->profile, cases);
}

TEST(InStepFitTest, FitsThePageableCopiesInAStep) {
  // Inside a step the write-back runs at 0.6 of an isolated pageable H2D
  // and the gradient copies at 1.2 of an isolated D2H.
  sim::HardwareProfile truth = Truth();
  const sim::HostLinkProfile& alone = Isolated().host_link();
  truth.mutable_host_link()->set_pageable_h2d_gbps(0.6 *
                                                   alone.pageable_h2d_gbps());
  truth.mutable_host_link()->set_pageable_d2h_gbps(1.2 *
                                                   alone.pageable_d2h_gbps());
  const std::vector<StepCase> cases =
      DefaultCases(model::LoadModelSpec("qwen2.5-0.5b").value(), {{1, 1024}},
                   {{2, 1024}}, 1, /*pageable=*/true);
  ASSERT_EQ(cases.size(), 6u);
  EXPECT_EQ(cases[2].name, "qwen2.5-0.5b 1x1024 pageable");
  EXPECT_FALSE(cases[2].options.optimizer_pin_memory);
  absl::StatusOr<FitResult> fit =
      FitInStep(Isolated(), cases, SimulatedStepRunner(truth), {});
  ASSERT_TRUE(fit.ok()) << fit.status();
  const sim::HostLinkProfile& got = fit->profile.host_link();
  EXPECT_TRUE(Near(got.pageable_h2d_gbps(),
                   truth.host_link().pageable_h2d_gbps(), 0.02))
      << got.pageable_h2d_gbps() << "\n"
      << fit->report;
  EXPECT_TRUE(Near(got.pageable_d2h_gbps(),
                   truth.host_link().pageable_d2h_gbps(), 0.02))
      << got.pageable_d2h_gbps() << "\n"
      << fit->report;
  EXPECT_TRUE(Near(fit->profile.gpu().gemm_in_step_factor(), 1.27, 0.02));
  ExpectSamePhases(truth, fit->profile, cases);
}

TEST(InStepFitTest, FitsElementwiseKernelsByKindWhereTheyDiffer) {
  // As on an H200: SwiGLU near its isolated time, RMSNorm backward far
  // above it, the rest at the class factor. The measured operations carry
  // no kind (the CUDA backend's op timing does not report it): the fit
  // must match them to kinds by label.
  sim::HardwareProfile truth = Truth();
  for (const auto& [kind, factor] :
       {std::pair<const char*, double>{"swiglu_fwd", 1.1},
        {"swiglu_bwd", 1.1},
        {"rmsnorm_bwd", 2.7}}) {
    sim::KernelFactor* k = truth.mutable_gpu()->add_kernel_in_step_factor();
    k->set_kind(kind);
    k->set_factor(factor);
  }
  const StepRunner truth_runner = SimulatedStepRunner(truth);
  const StepRunner runner = [&](const StepCase& c,
                                int steps) -> absl::StatusOr<MeasuredStep> {
    absl::StatusOr<MeasuredStep> m = truth_runner(c, steps);
    if (m.ok()) {
      for (runtime::OpTiming& op : m->ops) op.kind.clear();
    }
    return m;
  };
  absl::StatusOr<FitResult> fit = FitInStep(Isolated(), Cases(), runner, {});
  ASSERT_TRUE(fit.ok()) << fit.status();
  std::map<std::string, double> got;
  for (const sim::KernelFactor& k :
       fit->profile.gpu().kernel_in_step_factor()) {
    got[k.kind()] = k.factor();
  }
  EXPECT_TRUE(Near(got["swiglu_fwd"], 1.1, 0.02)) << fit->report;
  EXPECT_TRUE(Near(got["swiglu_bwd"], 1.1, 0.02)) << fit->report;
  EXPECT_TRUE(Near(got["rmsnorm_bwd"], 2.7, 0.02)) << fit->report;
  EXPECT_TRUE(Near(got["rmsnorm_fwd"], 1.28, 0.02)) << fit->report;
  EXPECT_THAT(fit->report, HasSubstr("gpu.kernel_in_step_factor"));
  EXPECT_THAT(fit->notes, testing::Contains(HasSubstr(absl::StrFormat(
                              "rmsnorm_bwd %.3f", got["rmsnorm_bwd"]))));
  ExpectSamePhases(truth, fit->profile, Cases());
}

TEST(InStepFitTest, FitsATimePerKernelWhereKindsComeInTwoSizes) {
  // Small kernels cost more in a step than a factor says: 6 us each beyond
  // it. Fitted on two micro-batches (each kind at two sizes), the fit
  // tells the time per kernel from the factors.
  sim::HardwareProfile truth = Truth();
  truth.mutable_gpu()->set_elementwise_in_step_us(6);
  sim::KernelFactor* k = truth.mutable_gpu()->add_kernel_in_step_factor();
  k->set_kind("rmsnorm_bwd");
  k->set_factor(2.0);
  const std::vector<StepCase> cases =
      DefaultCases(model::LoadModelSpec("qwen2.5-0.5b").value(),
                   {{1, 1024}, {2, 1024}}, {{4, 1024}}, 1);
  absl::StatusOr<FitResult> fit =
      FitInStep(Isolated(), cases, SimulatedStepRunner(truth), {});
  ASSERT_TRUE(fit.ok()) << fit.status();
  const sim::GpuProfile& g = fit->profile.gpu();
  EXPECT_TRUE(Near(g.elementwise_in_step_us(), 6, 0.1)) << fit->report;
  std::map<std::string, double> got;
  for (const sim::KernelFactor& f : g.kernel_in_step_factor()) {
    got[f.kind()] = f.factor();
  }
  EXPECT_TRUE(Near(got["rmsnorm_bwd"], 2.0, 0.05)) << fit->report;
  EXPECT_TRUE(Near(got["swiglu_fwd"], 1.28, 0.05)) << fit->report;
  EXPECT_THAT(fit->notes,
              testing::Contains(HasSubstr("gpu.elementwise_in_step_us")));
  ExpectSamePhases(truth, fit->profile, cases);
}

TEST(InStepFitTest, KeepsOnlyFiguresThatHelpTheHeldOutCases) {
  // The machine behaves exactly as the isolated figures say: every fitted
  // figure is 1 and changes no held-out prediction, so none is kept.
  const sim::HardwareProfile isolated = Isolated();
  absl::StatusOr<FitResult> fit =
      FitInStep(isolated, Cases(), SimulatedStepRunner(isolated), {});
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_FALSE(fit->profile.gpu().has_gemm_in_step_factor());
  EXPECT_FALSE(fit->profile.gpu().has_optimizer_in_step_factor());
  EXPECT_EQ(fit->profile.host().memory_bandwidth_gbps_per_rank(),
            isolated.host().memory_bandwidth_gbps_per_rank());
  EXPECT_THAT(fit->report, HasSubstr("kept none"));
  EXPECT_TRUE(fit->notes.empty());
}

TEST(InStepFitTest, NeedsTwoSteps) {
  FitOptions o;
  o.steps = 1;
  EXPECT_FALSE(
      FitInStep(Isolated(), Cases(), SimulatedStepRunner(Isolated()), o).ok());
}

}  // namespace
}  // namespace calibrate
}  // namespace zero3
