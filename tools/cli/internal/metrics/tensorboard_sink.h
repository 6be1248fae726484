// Copyright 2026 The zero3 Authors.
//
// tensorboard_sink.h: DeepSpeed's tensorboard output: a TensorBoard event
// file in one directory, named as PyTorch's SummaryWriter names it
// (events.out.tfevents.<seconds>.<host>.<pid>.0). It holds TFRecord records
// (tfrecord.h) of tensorboard.Event protos (third_party/tensorboard): first
// one with file_version "brain.Event:2", then one per scalar, as
// SummaryWriter.add_scalar writes it: wall_time, step (DeepSpeed's sample
// count) and a Summary with one simple_value under DeepSpeed's tag.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_METRICS_TENSORBOARD_SINK_H_
#define ZERO3_TOOLS_CLI_INTERNAL_METRICS_TENSORBOARD_SINK_H_

#include <functional>
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

class TensorBoardSink : public MetricsSink {
 public:
  // Seconds since the Unix epoch; replaceable in tests.
  using Clock = std::function<double()>;

  // Creates `dir` (and parents) and the event file, and writes the
  // file_version event.
  static absl::StatusOr<std::unique_ptr<TensorBoardSink>> Create(
      const std::string& dir, const EventOptions& options,
      Clock clock = nullptr);

  absl::Status Write(const StepMetrics& m) override;

  const std::string& path() const { return file_.path(); }

 private:
  TensorBoardSink(OutputFile file, const EventOptions& options, Clock clock)
      : file_(std::move(file)), options_(options), clock_(std::move(clock)) {}

  OutputFile file_;
  EventOptions options_;
  Clock clock_;
};

}  // namespace metrics
}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_METRICS_TENSORBOARD_SINK_H_
