// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/metrics/tensorboard_sink.h"

#include <unistd.h>

#include <chrono>

#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"
#include "third_party/tensorboard/event.pb.h"
#include "tools/cli/internal/metrics/tfrecord.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace metrics {
namespace {

double Now() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') {
    return "localhost";
  }
  return name;
}

std::string Record(const tensorboard::Event& event) {
  return FrameRecord(event.SerializeAsString());
}

}  // namespace

absl::StatusOr<std::unique_ptr<TensorBoardSink>> TensorBoardSink::Create(
    const std::string& dir, const EventOptions& options, Clock clock) {
  if (clock == nullptr) clock = Now;
  ZR_RETURN_IF_ERROR(CreateDirectories(dir, "tensorboard"));
  const double now = clock();
  const std::string name =
      absl::StrFormat("events.out.tfevents.%010d.%s.%d.0",
                      static_cast<int64_t>(now), HostName(), getpid());
  ZR_ASSIGN_OR_RETURN(OutputFile file,
                      OutputFile::Create(JoinPath(dir, name), "tensorboard"));
  tensorboard::Event version;
  version.set_wall_time(now);
  version.set_file_version("brain.Event:2");
  ZR_RETURN_IF_ERROR(file.Append(Record(version)));
  return std::unique_ptr<TensorBoardSink>(
      new TensorBoardSink(std::move(file), options, std::move(clock)));
}

absl::Status TensorBoardSink::Write(const StepMetrics& m) {
  const double now = clock_();
  std::string records;
  for (const ScalarEvent& e : DeepSpeedEvents(m, options_)) {
    tensorboard::Event event;
    event.set_wall_time(now);
    event.set_step(e.step);
    tensorboard::Summary::Value* value = event.mutable_summary()->add_value();
    value->set_tag(e.tag);
    value->set_simple_value(static_cast<float>(e.value));
    records += Record(event);
  }
  return file_.Append(records);
}

}  // namespace metrics
}  // namespace internal
}  // namespace cli
}  // namespace zero3
