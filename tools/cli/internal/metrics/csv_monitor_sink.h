// Copyright 2026 The zero3 Authors.
//
// csv_monitor_sink.h: DeepSpeed's csv_monitor output (deepspeed/monitor/
// csv_monitor.py): in one directory, one CSV file per tag, named after the
// tag with '/' and ' ' replaced by '_' (Train_Samples_train_loss.csv), whose
// first row is `step,<the tag's last component>` and each further row
// `<samples>,<value>`, rows ending in "\r\n" as Python's csv module writes
// them, values as Python prints a float.
//
// Unlike DeepSpeed, which appends to files from earlier runs, each file is
// created afresh, with its header, when the sink is created.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_METRICS_CSV_MONITOR_SINK_H_
#define ZERO3_TOOLS_CLI_INTERNAL_METRICS_CSV_MONITOR_SINK_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "tools/cli/internal/metrics/deepspeed_events.h"
#include "tools/cli/internal/metrics/output_file.h"
#include "tools/cli/internal/metrics/step_metrics.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace metrics {

class CsvMonitorSink : public MetricsSink {
 public:
  // Creates `dir` (and parents) and a file for each of DeepSpeedTags.
  static absl::StatusOr<std::unique_ptr<CsvMonitorSink>> Create(
      const std::string& dir, const EventOptions& options);

  absl::Status Write(const StepMetrics& m) override;

 private:
  explicit CsvMonitorSink(const EventOptions& options) : options_(options) {}

  EventOptions options_;
  std::map<std::string, OutputFile> files_;  // by tag
};

// The file name DeepSpeed gives a tag's CSV file.
std::string CsvFileName(const std::string& tag);

// `value` as Python's repr(float) writes it: the shortest text that reads
// back to it, "2.0", "0.001", "1e-05", "1.5e+16", "nan", "inf".
std::string PythonFloat(double value);

}  // namespace metrics
}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_METRICS_CSV_MONITOR_SINK_H_
