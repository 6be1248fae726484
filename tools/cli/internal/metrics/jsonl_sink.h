// Copyright 2026 The zero3 Authors.
//
// jsonl_sink.h: step metrics as JSON Lines (--metrics FILE): one JSON object
// per optimizer step, on one line, with the same keys every step; a value
// that is unknown or not finite (the loss in timing mode) is null.
// docs/metrics.md lists the keys.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_METRICS_JSONL_SINK_H_
#define ZERO3_TOOLS_CLI_INTERNAL_METRICS_JSONL_SINK_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "tools/cli/internal/metrics/output_file.h"
#include "tools/cli/internal/metrics/step_metrics.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace metrics {

class JsonlSink : public MetricsSink {
 public:
  // Creates or truncates `path`.
  static absl::StatusOr<std::unique_ptr<JsonlSink>> Create(
      const std::string& path);

  absl::Status Write(const StepMetrics& m) override;

 private:
  explicit JsonlSink(OutputFile file) : file_(std::move(file)) {}

  OutputFile file_;
};

// One step's line, without the newline.
std::string StepMetricsJson(const StepMetrics& m);

}  // namespace metrics
}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_METRICS_JSONL_SINK_H_
