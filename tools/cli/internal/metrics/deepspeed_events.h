// Copyright 2026 The zero3 Authors.
//
// deepspeed_events.h: a step's metrics as DeepSpeed's monitors receive them:
// (tag, value, x) scalars, where x counts samples as DeepSpeed's
// global_samples does. DeepSpeed's tags (docs/_pages/config-json.md,
// "Monitoring Module"; deepspeed/runtime/engine.py), then zero3's own.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_METRICS_DEEPSPEED_EVENTS_H_
#define ZERO3_TOOLS_CLI_INTERNAL_METRICS_DEEPSPEED_EVENTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tools/cli/internal/metrics/step_metrics.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace metrics {

struct ScalarEvent {
  std::string tag;  // e.g. "Train/Samples/train_loss"
  double value = 0;
  int64_t step = 0;  // samples, as DeepSpeed logs them
};

// Which tags a run writes, known before its first step.
struct EventOptions {
  bool has_loss = true;   // the run computes values (not timing mode)
  bool fp16 = false;      // DeepSpeed logs the loss scale with fp16 only
  bool has_eval = false;  // the run evaluates (eval_loss, eval_ppl)
};

// Every tag the run writes, in the order of DeepSpeedEvents.
std::vector<std::string> DeepSpeedTags(const EventOptions& options);

// The step's events: train_loss at the samples before the step (DeepSpeed
// logs it in backward, before the step counts its batch), the rest at the
// samples after it. An unknown grad_norm (NaN in timing mode) is left out.
std::vector<ScalarEvent> DeepSpeedEvents(const StepMetrics& m,
                                         const EventOptions& options);

}  // namespace metrics
}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_METRICS_DEEPSPEED_EVENTS_H_
