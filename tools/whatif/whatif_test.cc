// Copyright 2026 The zero3 Authors.

#include "tools/whatif/whatif.h"

#include <algorithm>
#include <cmath>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/model/presets.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/profiles.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace whatif {
namespace {

using ::testing::HasSubstr;
using ::zero3::testing::StatusIs;

// A small scenario that runs in milliseconds.
Scenario Small() {
  Scenario s;
  s.set_name("small");
  s.set_hardware("h200_sxm");
  s.set_model("qwen2.5-0.5b");
  s.set_gpus(4);
  s.set_micro_batch(1);
  s.set_seq(256);
  s.set_steps(2);
  return s;
}

std::string FlatProfile() {
  return std::string(getenv("TEST_SRCDIR")) +
         "/zero3/tools/whatif/testdata/flat.textproto";
}

// Sum of the durations (us) of spans of rank 0 named `name` in a trace, over
// the last `count` of them.
double LastSpans(const std::string& trace, const std::string& name, int count) {
  std::regex re(
      "\\{\"ph\":\"X\",\"name\":\"" + name +
      "\",(\"cat\":\"[^\"]*\",)?\"pid\":0,\"tid\":[0-9]+,\"ts\":([0-9.]+),"
      "\"dur\":([0-9.]+)");
  std::vector<std::pair<double, double>> spans;  // ts, dur
  for (auto it = std::sregex_iterator(trace.begin(), trace.end(), re);
       it != std::sregex_iterator(); ++it) {
    spans.push_back({std::stod((*it)[2]), std::stod((*it)[3])});
  }
  std::sort(spans.begin(), spans.end());
  double sum = 0;
  for (int i = 0; i < count && i < static_cast<int>(spans.size()); ++i) {
    sum += spans[spans.size() - 1 - i].second;
  }
  return sum;
}

TEST(WhatifTest, TableFiguresEqualTheTracePhaseSpans) {
  Scenario s = Small();
  s.set_accumulation(2);
  RunOptions o;
  o.traces = true;
  ASSERT_OK_AND_ASSIGN(ScenarioResult r, RunScenario(s, o));
  ASSERT_EQ(r.variants.size(), 1u);
  const Metrics& m = r.variants[0].metrics;
  const std::string& trace = r.variants[0].trace_json;
  EXPECT_NEAR(m.fwd_ms, LastSpans(trace, "FWD", 2) / 1e3, 1e-6);
  EXPECT_NEAR(m.bwd_ms, LastSpans(trace, "BWD", 2) / 1e3, 1e-6);
  EXPECT_NEAR(m.step_ms, LastSpans(trace, "STEP", 1) / 1e3, 1e-6);
  EXPECT_NEAR(m.total_ms, m.fwd_ms + m.bwd_ms + m.step_ms, 1e-6);
  EXPECT_GT(m.fwd_ms, 0);
}

// The operations kept for --profile-ops are the last step's, on rank 0's
// streams: every layer's attention once each way, and their device time
// fits in the step.
// Two steps of Qwen2.5-0.5B on 2 H200s, optimizer offloaded, operations
// timed.
StepInput OpTimingInput() {
  StepInput in;
  in.profile = sim::LoadProfile("h200_sxm").value();
  in.spec = model::LoadModelSpec("qwen2.5-0.5b").value();
  in.options.dtype = kernels::DType::kBF16;
  in.options.micro_batch = 1;
  in.options.seq = 256;
  in.options.offload_optimizer = true;
  in.gpus = 2;
  in.steps = 2;
  in.op_timings = true;
  return in;
}

// zero3.offloaded_step "auto" keeps the share the simulator predicts
// fastest: with a host slower than the link it steps some of the offloaded
// state on the device, with a link slower than the host none; SimulateStep
// resolves an unresolved "auto" the same way and reports the share.
TEST(WhatifTest, OffloadedStepAutoKeepsTheFastestShare) {
  StepInput in = OpTimingInput();
  in.op_timings = false;
  in.gpus = 1;
  in.options.device_step_share = -1;
  in.options.offloaded_step = config::OffloadedStep::kAuto;
  in.profile.mutable_host()->set_cores_per_rank(1);
  ASSERT_OK_AND_ASSIGN(const OffloadedStepChoice slow_host,
                       ChooseOffloadedStep(in));
  // The coarse shares, then up to six finer ones around the best of them.
  ASSERT_GE(slow_host.tried.size(), std::size(kOffloadedStepShares));
  ASSERT_LE(slow_host.tried.size(), std::size(kOffloadedStepShares) + 6);
  for (size_t i = 0; i < std::size(kOffloadedStepShares); ++i) {
    EXPECT_EQ(slow_host.tried[i].first, kOffloadedStepShares[i]);
  }
  for (const auto& [share, ms] : slow_host.tried) {
    EXPECT_GT(ms, 0) << share;
    EXPECT_LE(slow_host.step_ms, ms) << share;
  }
  EXPECT_GT(slow_host.share, 0);
  ASSERT_OK_AND_ASSIGN(const VariantResult resolved, SimulateStep(in));
  EXPECT_EQ(resolved.device_step_share, slow_host.share);
  EXPECT_EQ(resolved.metrics.total_ms, slow_host.step_ms);

  sim::HardwareProfile slow_link = in.profile;
  slow_link.mutable_host()->set_cores_per_rank(32);
  slow_link.mutable_host_link()->set_pinned_h2d_gbps(0.5);
  slow_link.mutable_host_link()->set_pinned_d2h_gbps(0.5);
  in.profile = slow_link;
  ASSERT_OK_AND_ASSIGN(const OffloadedStepChoice slow_copies,
                       ChooseOffloadedStep(in));
  EXPECT_EQ(slow_copies.share, 0);
}

// The bound is the busiest resource's time, never more than the step. On
// one GPU without offload the kernels bound it and the host and the links
// are nearly idle; with the optimizer on the host and the step at its end,
// the host's AdamW is the bound and is the STEP phase, and the gradients
// (bf16, straight to the host) and the updated bf16 parameters cross PCIe
// at the profile's pinned rates.
TEST(WhatifTest, TheBoundIsTheBusiestResource) {
  StepInput in = OpTimingInput();
  in.op_timings = false;
  in.gpus = 1;
  in.options.seq = 1024;
  in.options.offload_optimizer = false;
  ASSERT_OK_AND_ASSIGN(const VariantResult device, SimulateStep(in));
  in.options.offload_optimizer = true;
  ASSERT_OK_AND_ASSIGN(const VariantResult host, SimulateStep(in));
  for (const VariantResult* r : {&device, &host}) {
    const Metrics& m = r->metrics;
    const StepBound& b = m.bound;
    EXPECT_EQ(b.ms(), std::max({b.device_ms, b.host_ms, b.h2d_ms, b.d2h_ms,
                                b.comm_ms}));
    EXPECT_LE(b.ms(), m.total_ms);
    EXPECT_NEAR(b.Reached(m.total_ms), b.ms() / m.total_ms, 1e-12);
  }
  EXPECT_EQ(device.metrics.bound.limit(), StepBound::Resource::kDevice);
  EXPECT_LT(device.metrics.bound.host_ms, 0.01 * device.metrics.bound.ms());
  EXPECT_EQ(device.metrics.bound.comm_ms, 0);
  const StepBound& b = host.metrics.bound;
  EXPECT_EQ(b.limit(), StepBound::Resource::kHost);
  EXPECT_GT(b.host_ms, 0.9 * host.metrics.step_ms);
  EXPECT_LE(b.host_ms, host.metrics.step_ms);
  // 494 M parameters of 2 bytes each way, at the pinned rates.
  const sim::HostLinkProfile& link = in.profile.host_link();
  const double bytes = 2.0 * model::ParameterCount(in.spec);
  EXPECT_NEAR(b.d2h_ms, bytes / link.pinned_d2h_gbps() / 1e6, 0.1 * b.d2h_ms);
  EXPECT_NEAR(b.h2d_ms, bytes / link.pinned_h2d_gbps() / 1e6, 0.1 * b.h2d_ms);
}

// Timing the operations costs the host two event records each, as on the
// GPU: timed in every step, the phases show it; timed in one more step
// apart (as calibrate measures), they are those of an untimed run.
TEST(WhatifTest, OpTimingsApartLeaveThePhasesUntimed) {
  StepInput in = OpTimingInput();
  in.op_timings = false;
  ASSERT_OK_AND_ASSIGN(const VariantResult plain, SimulateStep(in));
  EXPECT_TRUE(plain.ops.empty());
  in.op_timings = true;
  ASSERT_OK_AND_ASSIGN(const VariantResult timed, SimulateStep(in));
  in.op_timings_apart = true;
  ASSERT_OK_AND_ASSIGN(const VariantResult apart, SimulateStep(in));
  EXPECT_EQ(apart.metrics.fwd_ms, plain.metrics.fwd_ms);
  EXPECT_EQ(apart.metrics.bwd_ms, plain.metrics.bwd_ms);
  EXPECT_EQ(apart.metrics.step_ms, plain.metrics.step_ms);
  EXPECT_GT(timed.metrics.fwd_ms + timed.metrics.bwd_ms,
            plain.metrics.fwd_ms + plain.metrics.bwd_ms);
  // The same operations either way, one step's worth.
  EXPECT_EQ(apart.ops.size(), timed.ops.size());
}

TEST(WhatifTest, OpTimingsAreTheLastStepsStreamOperations) {
  const StepInput in = OpTimingInput();
  ASSERT_OK_AND_ASSIGN(VariantResult r, SimulateStep(in));
  int attention_fwd = 0, attention_bwd = 0, reduce_scatters = 0;
  int host_adamw = 0;
  double compute_ns = 0;
  for (const runtime::OpTiming& op : r.ops) {
    EXPECT_LE(op.start_ns, op.end_ns) << op.label;
    if (op.stream == "host") {
      // Host tasks only: phase marks and waits are not operations.
      EXPECT_FALSE(absl::StartsWith(op.label, "blocked")) << op.label;
      EXPECT_NE(op.label, "FWD");
      if (absl::StartsWith(op.label, "adamw")) ++host_adamw;
    }
    if (op.stream == "compute") compute_ns += op.end_ns - op.start_ns;
    if (absl::EndsWith(op.label, "attention fwd")) ++attention_fwd;
    if (absl::EndsWith(op.label, "attention bwd")) ++attention_bwd;
    if (absl::StartsWith(op.label, "reduce-scatter")) {
      EXPECT_EQ(op.stream, "reduce") << op.label;
      ++reduce_scatters;
    }
  }
  EXPECT_EQ(attention_fwd, in.spec.num_layers());
  EXPECT_EQ(attention_bwd, in.spec.num_layers());
  EXPECT_GT(reduce_scatters, 0);
  EXPECT_GT(host_adamw, 0);  // the offloaded optimizer's pieces
  EXPECT_GT(compute_ns, 0);
  EXPECT_LE(compute_ns, r.metrics.total_ms * 1e6 * 1.001);
}

TEST(WhatifTest, MorePcieBandwidthNeverSlowsAStep) {
  for (const char* pin : {"true", "false"}) {
    Scenario s = Small();
    s.add_set(
        absl::StrCat("zero_optimization.offload_optimizer.pin_memory=", pin));
    for (const char* key : {"hardware.host_link.pinned_d2h_gbps",
                            "hardware.host_link.pinned_h2d_gbps",
                            "hardware.host_link.pageable_d2h_gbps",
                            "hardware.host_link.pageable_h2d_gbps"}) {
      Vary* v = s.add_vary();
      v->set_key(key);
      for (const char* gbps : {"4", "16", "64"}) v->add_values(gbps);
    }
    ASSERT_OK_AND_ASSIGN(ScenarioResult r, RunScenario(s, {}));
    ASSERT_EQ(r.variants.size(), 81u);
    // Variants are ordered with the last key fastest: compare each variant
    // with the ones that differ by one key having more bandwidth.
    int stride = 1;
    for (int k = 3; k >= 0; --k, stride *= 3) {
      for (size_t i = 0; i < r.variants.size(); ++i) {
        const int digit = (static_cast<int>(i) / stride) % 3;
        if (digit == 2) continue;
        EXPECT_LE(r.variants[i + stride].metrics.total_ms,
                  r.variants[i].metrics.total_ms + 1e-9)
            << "pin " << pin << " variant " << i << " key " << k;
      }
    }
  }
}

// Per-rank layer compute under tensor parallelism: each rank computes 1/tp
// of every block's GEMMs. With a flat-efficiency profile, kernel time is
// proportional to FLOPs, so the q/k/v/o/gate/up/down GEMMs take half as long.
TEST(WhatifTest, TensorParallelHalvesPerRankBlockCompute) {
  double proj[2] = {0, 0};
  for (int tp : {1, 2}) {
    Scenario s = Small();
    s.set_hardware(FlatProfile());
    s.set_gpus(4);
    s.set_tp(tp);
    RunOptions o;
    o.traces = true;
    ASSERT_OK_AND_ASSIGN(ScenarioResult r, RunScenario(s, o));
    const std::string& trace = r.variants[0].trace_json;
    std::regex re(
        "\\{\"ph\":\"X\",\"name\":\"L[0-9]+ [a-z]+_proj "
        "fwd\",\"cat\":\"kernel\","
        "\"pid\":0,\"tid\":1000,\"ts\":[0-9.]+,\"dur\":([0-9.]+)");
    for (auto it = std::sregex_iterator(trace.begin(), trace.end(), re);
         it != std::sregex_iterator(); ++it) {
      proj[tp - 1] += std::stod((*it)[1]);
    }
  }
  ASSERT_GT(proj[1], 0);
  EXPECT_NEAR(proj[0] / proj[1], 2.0, 0.01);
}

TEST(WhatifTest, SymmetricShortcutEqualsFullSimulation) {
  for (int tp : {1, 2}) {
    Scenario s = Small();
    s.set_tp(tp);
    s.set_accumulation(2);
    Vary* v = s.add_vary();
    v->set_key("zero_optimization.offload_optimizer.pin_memory");
    v->add_values("true");
    v->add_values("false");
    RunOptions full;
    full.full = true;
    ASSERT_OK_AND_ASSIGN(ScenarioResult a, RunScenario(s, {}));
    ASSERT_OK_AND_ASSIGN(ScenarioResult b, RunScenario(s, full));
    for (size_t i = 0; i < a.variants.size(); ++i) {
      for (const std::string& name : MetricNames()) {
        EXPECT_EQ(*MetricValue(a.variants[i].metrics, name),
                  *MetricValue(b.variants[i].metrics, name))
            << name << " tp " << tp << " variant " << i;
      }
    }
  }
}

TEST(WhatifTest, BadKeysAndValuesAreErrorsNamingThem) {
  auto run = [](const std::string& key, const std::string& value) {
    Scenario s = Small();
    Vary* v = s.add_vary();
    v->set_key(key);
    v->add_values(value);
    return RunScenario(s, {}).status();
  };
  EXPECT_THAT(run("zero_optimization.reduce_bucket_sise", "100"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("reduce_bucket_size")));
  EXPECT_THAT(run("zero_optimization.reduce_bucket_size", "-5"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("reduce_bucket_size")));
  EXPECT_THAT(run("gpus", "0"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("gpus")));
  EXPECT_THAT(run("tp", "3"), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("tp (3)")));
  EXPECT_THAT(run("hardware.host_link.pinned_d2h_gbs", "5"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("did you mean 'pinned_d2h_gbps'")));
  EXPECT_THAT(run("hardware.host_link.pinned_d2h_gbps", "fast"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fast")));
  EXPECT_THAT(run("hardware", "h300"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("h200_sxm")));
  EXPECT_THAT(run("model", "qwen3"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("qwen2.5-7b")));
  // Sizes beyond the stated limits, beyond 32 and 64 bits, fractional.
  for (const auto& [key, value, limit] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"gpus", "4294967304", "from 1 to 1048576"},
           {"accumulation", "1000000", "from 1 to 1024"},
           {"seq", "1e30", "from 1 to 1048576"},
           {"micro_batch", "65537", "from 1 to 65536"},
           {"tp", "2.5", "from 1 to 1048576"}}) {
    EXPECT_THAT(run(key, value),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(absl::StrCat(key, ": expected an integer ",
                                                limit, ", got '", value))));
  }
  Scenario big = Small();
  big.set_accumulation(5000);
  EXPECT_THAT(RunScenario(big, {}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("accumulation: expected an integer from 1 "
                                 "to 1024, got '5000'")));
  Scenario s = Small();
  s.set_baseline("tp=4");
  EXPECT_THAT(
      RunScenario(s, {}).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("baseline")));
  EXPECT_THAT(
      MetricValue(Metrics(), "bwd"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bwd_ms")));
}

TEST(WhatifTest, OutputsCarryTheSameFigures) {
  Scenario s = Small();
  Vary* v = s.add_vary();
  v->set_key("zero3.grad_offload");
  v->add_values("blocking");
  v->add_values("async");
  s.set_baseline("zero3.grad_offload=blocking");
  ASSERT_OK_AND_ASSIGN(ScenarioResult r, RunScenario(s, {}));
  const std::string json = FormatJson(r);
  EXPECT_THAT(json,
              HasSubstr("\"settings\": {\"zero3.grad_offload\": \"async\"}"));
  EXPECT_THAT(json, HasSubstr(absl::StrCat("\"bwd_ms\": ")));
  const std::string csv = FormatCsv(r);
  EXPECT_THAT(csv, HasSubstr("zero3.grad_offload,fwd_ms,bwd_ms"));
  const std::string table = FormatTable(r);
  EXPECT_THAT(table, HasSubstr("grad_offload=blocking *"));
  EXPECT_THAT(table, HasSubstr("change against the baseline"));
}

// Small() varying the micro-batch over `sizes`, on a device of `gib`.
Scenario MicroBatchSweep(const std::vector<std::string>& sizes, double gib) {
  Scenario s = Small();
  s.add_set(absl::StrFormat("hardware.gpu.memory_gib=%.17g", gib));
  Vary* v = s.add_vary();
  v->set_key("micro_batch");
  for (const std::string& size : sizes) v->add_values(size);
  return s;
}

TEST(WhatifTest, AnOversizedVariantIsMarkedAndTheSweepGoesOn) {
  // The peaks on a device large enough for both, then a device between them.
  ASSERT_OK_AND_ASSIGN(ScenarioResult big,
                       RunScenario(MicroBatchSweep({"1", "64"}, 4096), {}));
  const double small_gib = big.variants[0].metrics.device_memory_gib;
  const double large_gib = big.variants[1].metrics.device_memory_gib;
  ASSERT_LT(small_gib * 1.2, large_gib);
  const double capacity = (small_gib + large_gib) / 2;
  ASSERT_OK_AND_ASSIGN(ScenarioResult r,
                       RunScenario(MicroBatchSweep({"64", "1"}, capacity), {}));
  ASSERT_EQ(r.variants.size(), 2u);
  ASSERT_TRUE(r.variants[0].does_not_fit.has_value());
  EXPECT_FALSE(r.variants[1].does_not_fit.has_value());
  const DoesNotFit& f = *r.variants[0].does_not_fit;
  // The need is the unlimited run's peak (same simulation: 1e-9 relative).
  EXPECT_NEAR(f.need_gib, large_gib, 1e-9 * large_gib);
  EXPECT_DOUBLE_EQ(f.capacity_gib, capacity);
  EXPECT_THAT(f.message, HasSubstr("device out of memory"));
  EXPECT_EQ(r.variants[0].metrics.tokens_per_s, 0);
  EXPECT_NEAR(r.variants[1].metrics.device_memory_gib, small_gib,
              1e-9 * small_gib);
  EXPECT_EQ(r.fastest, 1);
  EXPECT_THAT(FormatTable(r),
              HasSubstr(absl::StrFormat("micro_batch=64 * does not fit: needs "
                                        "%.2f GiB of %.2f GiB device memory",
                                        large_gib, capacity)));
  EXPECT_THAT(FormatTable(r),
              HasSubstr("no changes against the baseline (*): it does not"));
  const std::string json = FormatJson(r);
  EXPECT_THAT(json, HasSubstr("\"fastest_fitting\": 1,"));
  EXPECT_THAT(json, HasSubstr("\"fits\": false, \"memory_need_gib\": "));
  EXPECT_THAT(json, HasSubstr("\"fits\": true, \"fwd_ms\": "));
  EXPECT_THAT(FormatCsv(r), HasSubstr(",baseline,fits,memory_capacity_gib\n"));
  EXPECT_THAT(FormatCsv(r),
              HasSubstr(absl::StrFormat(",1,0,%.6g\n", capacity)));

  // With checkpoint costs the rows of the CSV keep the header's columns.
  Scenario saving = MicroBatchSweep({"64", "1"}, capacity);
  saving.set_save_interval(10);
  ASSERT_OK_AND_ASSIGN(ScenarioResult c, RunScenario(saving, {}));
  const std::vector<std::string> lines =
      absl::StrSplit(FormatCsv(c), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_THAT(lines[0], HasSubstr("checkpoint_overhead"));
  for (const std::string& line : lines) {
    EXPECT_EQ(std::count(line.begin(), line.end(), ','),
              std::count(lines[0].begin(), lines[0].end(), ','))
        << line;
  }
  EXPECT_THAT(FormatTable(c), HasSubstr("checkpoint every 10 steps"));

  // Evaluation: forward passes after the steps, their cost per step; twice
  // the batches take about twice the time (the virtual clock's).
  Scenario evaluating = MicroBatchSweep({"64", "1"}, capacity);
  evaluating.set_eval_interval(50);
  evaluating.set_eval_iters(2);
  ASSERT_OK_AND_ASSIGN(ScenarioResult e2, RunScenario(evaluating, {}));
  evaluating.set_eval_iters(4);
  ASSERT_OK_AND_ASSIGN(ScenarioResult e4, RunScenario(evaluating, {}));
  ASSERT_GE(e2.fastest, 0);
  const VariantResult& two = e2.variants[e2.fastest];
  const VariantResult& four = e4.variants[e4.fastest];
  ASSERT_TRUE(two.eval_ms.has_value());
  EXPECT_GT(*two.eval_ms, 0);
  EXPECT_NEAR(*four.eval_ms / *two.eval_ms, 2.0, 0.2);
  EXPECT_FALSE(e2.variants[0].eval_ms.has_value());  // does not fit
  EXPECT_THAT(FormatTable(e2),
              HasSubstr("evaluation every 50 steps, 2 global batches"));
  EXPECT_THAT(FormatJson(e2), HasSubstr("\"eval_per_step_ms\": "));
  const std::vector<std::string> rows =
      absl::StrSplit(FormatCsv(e2), '\n', absl::SkipEmpty());
  for (const std::string& line : rows) {
    EXPECT_EQ(std::count(line.begin(), line.end(), ','),
              std::count(rows[0].begin(), rows[0].end(), ','))
        << line;
  }
}

TEST(WhatifTest, AGpuSweepComparesTokensPerGpu) {
  Scenario s = Small();
  Vary* v = s.add_vary();
  v->set_key("gpus");
  for (const char* n : {"1", "2", "4"}) v->add_values(n);
  ASSERT_OK_AND_ASSIGN(ScenarioResult r, RunScenario(s, {}));
  ASSERT_EQ(r.variants.size(), 3u);
  EXPECT_TRUE(r.per_gpu);
  int expected = 0;
  for (int i = 1; i < 3; ++i) {
    const double per = r.variants[i].metrics.tokens_per_s / (1 << i);
    if (per > r.variants[expected].metrics.tokens_per_s / (1 << expected)) {
      expected = i;
    }
  }
  EXPECT_EQ(r.fastest, expected);
  EXPECT_THAT(FormatTable(r), HasSubstr("fastest per GPU that fits: gpus="));
  // Without the GPU count varied the comparison stays on tokens/s.
  ASSERT_OK_AND_ASSIGN(ScenarioResult m,
                       RunScenario(MicroBatchSweep({"1", "2"}, 4096), {}));
  EXPECT_FALSE(m.per_gpu);
  EXPECT_THAT(FormatTable(m), HasSubstr("fastest that fits: "));
}

// The delayed update is marked where it wins: it trains differently.
TEST(WhatifTest, TheFastestLineSaysWhenTheVariantChangesTheTraining) {
  Scenario s = Small();
  s.set_gpus(1);
  s.add_set("zero_optimization.offload_optimizer.device=cpu");
  Vary* v = s.add_vary();
  v->set_key("zero3.host_step_overlap");
  v->add_values("none");
  v->add_values("delayed");
  ASSERT_OK_AND_ASSIGN(ScenarioResult r, RunScenario(s, {}));
  ASSERT_EQ(r.variants.size(), 2u);
  EXPECT_FALSE(r.variants[0].changes_training);
  EXPECT_TRUE(r.variants[1].changes_training);
  ASSERT_EQ(r.fastest, 1);
  EXPECT_EQ(r.fastest_exact, 0);
  EXPECT_THAT(FormatTable(r),
              HasSubstr("fastest that fits: host_step_overlap=delayed ("));
  EXPECT_THAT(FormatTable(r), HasSubstr("; it changes the training"));
  EXPECT_THAT(FormatTable(r),
              HasSubstr("fastest exact that fits: host_step_overlap=none ("));
  EXPECT_THAT(FormatJson(r), HasSubstr("\"changes_training\": true"));
  EXPECT_THAT(FormatJson(r), HasSubstr("\"fastest_exact_fitting\": 0"));
}

TEST(WhatifTest, FastestLineNamesTheFittingVariantWithTheMostTokens) {
  ASSERT_OK_AND_ASSIGN(
      ScenarioResult big,
      RunScenario(MicroBatchSweep({"1", "2", "4", "64"}, 4096), {}));
  // A device that holds micro-batches up to 4 but not 64.
  const double capacity = (big.variants[2].metrics.device_memory_gib +
                           big.variants[3].metrics.device_memory_gib) /
                          2;
  ASSERT_OK_AND_ASSIGN(
      ScenarioResult r,
      RunScenario(MicroBatchSweep({"2", "64", "1", "4"}, capacity), {}));
  int expected = -1;
  for (int i = 0; i < static_cast<int>(r.variants.size()); ++i) {
    const VariantResult& v = r.variants[i];
    if (v.does_not_fit.has_value()) continue;
    if (expected < 0 ||
        v.metrics.tokens_per_s > r.variants[expected].metrics.tokens_per_s) {
      expected = i;
    }
  }
  EXPECT_TRUE(r.variants[1].does_not_fit.has_value());
  ASSERT_GE(expected, 0);
  EXPECT_EQ(r.fastest, expected);
  EXPECT_THAT(
      FormatTable(r),
      HasSubstr(absl::StrCat("fastest that fits: micro_batch=",
                             r.variants[expected].settings[0].second, " (")));
  EXPECT_THAT(FormatJson(r),
              HasSubstr(absl::StrCat("\"fastest_fitting\": ", expected, ",")));

  // None fits: no fastest.
  ASSERT_OK_AND_ASSIGN(ScenarioResult none,
                       RunScenario(MicroBatchSweep({"64"}, 0.01), {}));
  EXPECT_EQ(none.fastest, -1);
  EXPECT_THAT(FormatJson(none), HasSubstr("\"fastest_fitting\": null"));
}

TEST(WhatifTest, ExplainPrintsEveryKindOfTerm) {
  Scenario s = Small();
  s.set_tp(2);
  ASSERT_OK_AND_ASSIGN(std::string text, ExplainScenario(s, {}));
  for (const char* term :
       {"kernel (matmul)", "kernel (attention)", "kernel (elementwise)",
        "pinned D2H", "pageable D2H", "all-gather", "reduce-scatter",
        "all-reduce", "host task"}) {
    EXPECT_THAT(text, HasSubstr(term));
  }
}

// Of the host thread's work, only host tasks are operations (as the CUDA
// backend reports them): not the driver's staging of small pageable copies.
TEST(WhatifTest, OpTimingsHoldHostTasksNotStaging) {
  StepInput in = OpTimingInput();
  // Every pageable H2D is staged by the host.
  in.profile.mutable_host_link()->set_pageable_h2d_async_max_bytes(int64_t{1}
                                                                   << 30);
  in.options.optimizer_pin_memory = false;
  in.traces = true;
  ASSERT_OK_AND_ASSIGN(VariantResult r, SimulateStep(in));
  ASSERT_NE(r.trace_json.find("staging: "), std::string::npos);
  int host_tasks = 0;
  for (const runtime::OpTiming& op : r.ops) {
    if (op.stream != "host") continue;
    ++host_tasks;
    EXPECT_FALSE(absl::StartsWith(op.label, "staging")) << op.label;
  }
  EXPECT_GT(host_tasks, 0);
}

// A shape the profile measured is explained from its measured time, as the
// simulator costs it.
// docs/whatif.md's smell test of the 72B study: on 64 GPUs the offloaded
// step is the host's AdamW over the shard, memory-bound: 72.7 B / 64
// parameters x 28 bytes at 450 / 8 GB/s. Tolerance 2% (the last piece's
// write-back is not hidden).
TEST(WhatifTest, Qwen72bStudyStepIsTheHostAdamWOverTheShard) {
  ASSERT_OK_AND_ASSIGN(
      Scenario s,
      LoadScenario("tools/whatif/scenarios/offload_h200_72b.textproto"));
  s.clear_vary();
  s.set_gpus(64);
  s.set_steps(1);
  ASSERT_OK_AND_ASSIGN(ScenarioResult r, RunScenario(s, RunOptions()));
  const double shard = 72706203648.0 / 64;
  const double expected_ms = shard * 28 / (450e9 / 8) * 1e3;
  EXPECT_NEAR(r.variants[0].metrics.step_ms, expected_ms, 0.02 * expected_ms);
}

TEST(WhatifTest, ExplainUsesTheMeasuredTables) {
  Scenario s;
  s.set_name("measured");
  s.set_hardware("h200_sxm");
  s.set_model("qwen2.5-1.5b");
  s.set_gpus(2);
  s.set_micro_batch(2);
  s.set_seq(2048);
  ASSERT_OK_AND_ASSIGN(std::string text, ExplainScenario(s, {}));
  EXPECT_THAT(text, HasSubstr("(gpu.gemm_table)"));
  EXPECT_THAT(text, HasSubstr("(gpu.attention_table)"));
}

}  // namespace
}  // namespace whatif
}  // namespace zero3
