// Copyright 2026 The zero3 Authors.
//
// whatif.h: run the engine in timing mode on a hardware profile for every
// variant of a scenario, and report what each step costs.
//
// Each variant is a full ZeRO-3 training run on the simulator, in timing
// mode: the same engine code that trains, with nothing computed. When every
// rank of a data-parallel group issues the same work - true of ZeRO-3,
// whose shards are padded to equal sizes, and of Megatron-style tensor
// parallelism - simulating rank 0 alone gives every rank's times; that
// symmetric shortcut is on unless `full` is set (tests check both agree).
//
// Metrics come from rank 0's last simulated step: the phase times (FWD, BWD,
// STEP as the engine reports them, which are also the FWD/BWD/STEP spans of
// the trace), the time a host-device copy or a collective was in flight
// while no kernel ran (exposed), the time the host thread was blocked, the
// device-memory peak, the pinned host memory, and the step's lower bound
// (StepBound) with the share of it the step reached.

#ifndef ZERO3_TOOLS_WHATIF_WHATIF_H_
#define ZERO3_TOOLS_WHATIF_WHATIF_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/model/model_spec.pb.h"
#include "core/runtime/op_timing.h"
#include "core/zero/options.h"
#include "sim/profile.pb.h"
#include "tools/whatif/checkpoint_cost.h"
#include "tools/whatif/scenario.pb.h"
#include "tools/whatif/step_bound.h"

namespace zero3 {
namespace whatif {

struct Metrics {
  double fwd_ms = 0;
  double bwd_ms = 0;
  double step_ms = 0;
  double total_ms = 0;
  double tokens_per_s = 0;
  double exposed_copy_ms = 0;
  double exposed_comm_ms = 0;
  double host_blocked_ms = 0;
  double device_memory_gib = 0;
  double pinned_host_gib = 0;
  StepBound bound;  // and its share of total_ms: bound.Reached(total_ms)
};

// A variant whose simulated step ran out of device memory: its peak need
// (the peak of the same step on a device without a memory limit) against
// the profile's memory. Host and pinned memory have no capacity in the
// profile, so only device memory can fail to fit.
struct DoesNotFit {
  double need_gib = 0;      // 0 when the unlimited run failed too
  double capacity_gib = 0;  // hardware.gpu.memory_gib
  std::string message;      // the allocation that failed
};

struct VariantResult {
  // Each varied key and this variant's value, in the order they vary.
  std::vector<std::pair<std::string, std::string>> settings;
  int64_t gpus = 1;  // the variant's GPU count
  Metrics metrics;
  std::string trace_json;     // when traces were asked for
  int64_t simulated_ops = 0;  // runtime calls of every simulated rank
  // Rank 0's stream operations that started in the last step, when
  // StepInput::op_timings asked for them.
  std::vector<runtime::OpTiming> ops;
  // With the scenario's save_interval: what saving costs.
  std::optional<CheckpointCost> checkpoint;
  // With the scenario's eval_interval: one evaluation's time (rank 0's, in
  // virtual ms), and its interval and batches.
  std::optional<double> eval_ms;
  int eval_interval = 0;
  int eval_iters = 0;
  bool checkpoint_async = true;
  // The variant trains differently from the exact step: the one-step
  // delayed update (zero3.host_step_overlap "delayed").
  bool changes_training = false;
  // Set when the variant does not fit; its metrics are then zero but for
  // device_memory_gib, the need.
  std::optional<DoesNotFit> does_not_fit;
  // Of the offloaded optimizer state, the share stepped on the device
  // (zero3.offloaded_step; with "auto" the share ChooseOffloadedStep chose).
  double device_step_share = 0;
};

struct ScenarioResult {
  std::string name;
  std::string description;
  std::vector<VariantResult> variants;
  int baseline = 0;
  // The fitting variant with the most tokens/s (per GPU when the variants
  // differ in GPU count: per_gpu), the first on a tie; -1 when none fits.
  int fastest = -1;
  // The same among the variants that train as without the delayed update
  // (VariantResult::changes_training false); -1 when none fits.
  int fastest_exact = -1;
  bool per_gpu = false;
  std::vector<std::string> notices;  // configuration notices, once each
};

struct RunOptions {
  bool full = false;          // simulate every rank (no symmetric shortcut)
  bool traces = false;        // keep a Chrome trace per variant
  bool detect_races = false;  // run the race detector (costs time)
  // Directory for relative paths inside the scenario (its config file).
  std::string base_dir;
  // Called after each variant with the variants done, their number and
  // the finished one's settings ("zero3.grad_offload=async"); may be empty.
  std::function<void(int done, int total, const std::string& label)> progress;
};

// One configuration simulated directly: what RunScenario does per variant,
// for callers that already hold resolved options (`zero3 train --predict`).
struct StepInput {
  sim::HardwareProfile profile;
  model::ModelSpec spec;
  zero::ZeroOptions options;  // options.tensor_parallel included
  int gpus = 1;
  int steps = 3;
  bool full = false;
  bool traces = false;
  bool detect_races = false;
  // Keep rank 0's stream operations of the last step (VariantResult::ops),
  // timed as the CUDA backend times them (sim::SimOptions::op_timing), in
  // every step as `train --profile-ops` does...
  bool op_timings = false;
  // ... or, with this, in one more step after the `steps`, whose phases
  // stay out of the metrics, as calibrate measures (its phases from untimed
  // steps, its operations from one more).
  bool op_timings_apart = false;
  // With N > 0: after the steps, one evaluation of N global batches
  // (Engine::Evaluate), timed into VariantResult::eval_ms.
  int eval_iters = 0;
};
// Simulates `input`; an unresolved zero3.offloaded_step "auto" (a negative
// options.device_step_share) is resolved first by ChooseOffloadedStep.
absl::StatusOr<VariantResult> SimulateStep(const StepInput& input);

// zero3.offloaded_step "auto": of the offloaded optimizer state, the share
// whose AdamW runs on the device, its master and moments streamed over the
// host link (core/zero/streamed_step.h), against the rest on the host's
// cores. The profile's host memory bandwidth, cores and host link (measured
// by zero3 calibrate, or a datasheet's) set both sides' speed, and the plan
// of the host step how much of the host's side hides under backward, so
// the simulator decides: each share of kOffloadedStepShares is simulated
// for input.steps steps, then the shares 1/32, 2/32 and 3/32 either side of
// the fastest, and the fastest of all wins (the first tried on a tie).
struct OffloadedStepChoice {
  double share = 0;
  double step_ms = 0;  // its predicted step
  // Every share tried, in order, with its predicted step (0 where it did
  // not fit the device's memory).
  std::vector<std::pair<double, double>> tried;
};
inline constexpr double kOffloadedStepShares[] = {
    0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1};
absl::StatusOr<OffloadedStepChoice> ChooseOffloadedStep(StepInput input);
// "offloaded step: 37.5% of the offloaded optimizer state stepped on the
// device (auto: 231.0 ms a step on h200_sxm; on the host only 250.7 ms, on
// the device only 336.2 ms)".
std::string DescribeOffloadedStep(const OffloadedStepChoice& choice,
                                  const std::string& profile);

// Loads a text-format scenario file. Errors name the file, line and column.
absl::StatusOr<Scenario> LoadScenario(const std::string& path);

// Checks keys and values (naming the bad one, suggesting the nearest key)
// and runs every variant. A variant that runs out of device memory is kept
// as not fitting (VariantResult::does_not_fit) and the sweep goes on.
absl::StatusOr<ScenarioResult> RunScenario(const Scenario& scenario,
                                           const RunOptions& options);

// The cost model's terms for one operation of each kind, for the first
// variant of the scenario (`zero3 whatif --explain`).
absl::StatusOr<std::string> ExplainScenario(const Scenario& scenario,
                                            const RunOptions& options);

// Output. The table is for people; JSON and CSV carry the same figures.
std::string FormatTable(const ScenarioResult& result);
std::string FormatJson(const ScenarioResult& result);
std::string FormatCsv(const ScenarioResult& result);

// Metric names as used by JSON, CSV and --plot-metric ("bwd_ms", ...).
std::vector<std::string> MetricNames();
absl::StatusOr<double> MetricValue(const Metrics& m, const std::string& name);

}  // namespace whatif
}  // namespace zero3

#endif  // ZERO3_TOOLS_WHATIF_WHATIF_H_
