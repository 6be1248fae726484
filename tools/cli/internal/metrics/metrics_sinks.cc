// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/metrics/metrics_sinks.h"

#include "core/util/status_macros.h"
#include "tools/cli/internal/metrics/csv_monitor_sink.h"
#include "tools/cli/internal/metrics/jsonl_sink.h"
#include "tools/cli/internal/metrics/tensorboard_sink.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace metrics {

absl::StatusOr<MetricsSinks> MetricsSinks::Open(const SinkOptions& options) {
  MetricsSinks out;
  if (!options.jsonl_path.empty()) {
    ZR_ASSIGN_OR_RETURN(auto sink, JsonlSink::Create(options.jsonl_path));
    out.sinks_.push_back(std::move(sink));
  }
  if (!options.csv_dir.empty()) {
    ZR_ASSIGN_OR_RETURN(
        auto sink, CsvMonitorSink::Create(options.csv_dir, options.events));
    out.sinks_.push_back(std::move(sink));
  }
  if (!options.tensorboard_dir.empty()) {
    ZR_ASSIGN_OR_RETURN(
        auto sink,
        TensorBoardSink::Create(options.tensorboard_dir, options.events));
    out.sinks_.push_back(std::move(sink));
  }
  return out;
}

absl::Status MetricsSinks::Write(const StepMetrics& m) {
  for (const std::unique_ptr<MetricsSink>& sink : sinks_) {
    ZR_RETURN_IF_ERROR(sink->Write(m));
  }
  return absl::OkStatus();
}

}  // namespace metrics
}  // namespace internal
}  // namespace cli
}  // namespace zero3
