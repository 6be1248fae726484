// Copyright 2026 The zero3 Authors.
//
// step_metrics.h: what a training run reports after each optimizer step, and
// the interface of the places it goes (JSON Lines, DeepSpeed's CSV monitor,
// TensorBoard event files). docs/metrics.md describes every field.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_METRICS_STEP_METRICS_H_
#define ZERO3_TOOLS_CLI_INTERNAL_METRICS_STEP_METRICS_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "tools/whatif/step_bound.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace metrics {

// One optimizer step, as the leader sees it. Times and memory are rank 0's;
// the loss is the one the console prints.
struct StepMetrics {
  int64_t step = 0;  // 1-based
  // Samples trained on by all ranks up to and including this step.
  int64_t samples = 0;
  // Samples up to the step before (DeepSpeed logs the loss at this count).
  int64_t samples_before = 0;
  std::optional<double> loss;  // absent when the run computes no values
  double lr = 0;
  double grad_norm = 0;  // NaN when unknown (timing mode)
  double loss_scale = 1;
  bool skipped = false;
  std::string skip_reason;
  // With the speculative host step configured, its outcome on this step
  // (engine::StepStats::Speculation): "committed", "replayed", "discarded",
  // or "" when not run.
  std::optional<std::string> speculation;
  int64_t tokens = 0;  // trained on by all ranks in this step
  // Of tokens, those whose target is predicted (the loss's divisor).
  int64_t predicted_tokens = 0;
  // The evaluation on held-out data after this step (--eval-data), absent
  // on steps without one.
  std::optional<double> eval_loss, eval_ppl;
  double tokens_per_s = 0;
  double fwd_ms = 0, bwd_ms = 0, step_ms = 0, total_ms = 0;
  double model_flops = 0;  // per step, all ranks (model_flops.h)
  double mfu = 0;
  int64_t pinned_host_bytes = 0;  // pinned host memory in use
  int64_t device_bytes = 0;       // device memory in use
  int64_t device_peak_bytes = 0;  // device memory peak so far
  // The run's estimated lower bound per step and its parts
  // (tools/whatif/step_bound.h); absent when not estimated.
  std::optional<whatif::StepBound> bound;
};

// `value`, when it is a float (the engine's learning rate), as the double
// nearest to the shortest decimal that reads back to that float: the 1e-3
// of a configuration instead of float(1e-3) = 0.0010000000474974513. Any
// other value is returned as it is.
inline double FloatAsDecimal(double value) {
  const float f = static_cast<float>(value);
  if (static_cast<double>(f) != value) return value;
  char text[32];
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(text, sizeof(text), "%.*g", digits, value);
    if (std::strtof(text, nullptr) == f) return std::strtod(text, nullptr);
  }
  return value;
}

// A destination of step metrics. Write is called once per step, in order,
// and leaves what it wrote on disk (flushed), so a crash keeps every step
// written before it.
class MetricsSink {
 public:
  virtual ~MetricsSink() = default;
  virtual absl::Status Write(const StepMetrics& m) = 0;
};

}  // namespace metrics
}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_METRICS_STEP_METRICS_H_
