// Copyright 2026 The zero3 Authors.
//
// metrics_sinks.h: the sinks a run writes its step metrics to, opened
// together before training starts, written together after each step.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_METRICS_METRICS_SINKS_H_
#define ZERO3_TOOLS_CLI_INTERNAL_METRICS_METRICS_SINKS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/cli/internal/metrics/deepspeed_events.h"
#include "tools/cli/internal/metrics/step_metrics.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace metrics {

// Where metrics go; an empty path or directory means not there.
struct SinkOptions {
  std::string jsonl_path;       // --metrics
  std::string csv_dir;          // csv_monitor: output_path/job_name
  std::string tensorboard_dir;  // tensorboard: output_path/job_name
  EventOptions events;
};

class MetricsSinks {
 public:
  // Opens every sink `options` names; the first error (naming the file or
  // directory and the fix) is returned before anything is trained.
  static absl::StatusOr<MetricsSinks> Open(const SinkOptions& options);

  // Writes `m` to every sink.
  absl::Status Write(const StepMetrics& m);

  bool empty() const { return sinks_.empty(); }

 private:
  std::vector<std::unique_ptr<MetricsSink>> sinks_;
};

}  // namespace metrics
}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_METRICS_METRICS_SINKS_H_
