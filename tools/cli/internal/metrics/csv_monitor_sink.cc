// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/metrics/csv_monitor_sink.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace metrics {

std::string CsvFileName(const std::string& tag) {
  return absl::StrCat(absl::StrReplaceAll(tag, {{"/", "_"}, {" ", "_"}}),
                      ".csv");
}

std::string PythonFloat(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // The fewest significant digits that read back exactly.
  char buffer[64];
  int digits = 1;
  for (; digits < 17; ++digits) {
    std::snprintf(buffer, sizeof(buffer), "%.*e", digits - 1, value);
    double back = 0;
    if (absl::SimpleAtod(buffer, &back) && back == value) break;
  }
  std::snprintf(buffer, sizeof(buffer), "%.*e", digits - 1, value);
  const int exponent = value == 0 ? 0 : std::atoi(std::strchr(buffer, 'e') + 1);
  // Python switches to exponent notation below 1e-4 and from 1e16 on.
  if (exponent < -4 || exponent >= 16) return buffer;
  const int decimals = std::max(1, digits - 1 - exponent);
  std::snprintf(buffer, sizeof(buffer), "%.*f", decimals, value);
  return buffer;
}

absl::StatusOr<std::unique_ptr<CsvMonitorSink>> CsvMonitorSink::Create(
    const std::string& dir, const EventOptions& options) {
  ZR_RETURN_IF_ERROR(CreateDirectories(dir, "csv_monitor"));
  std::unique_ptr<CsvMonitorSink> sink(new CsvMonitorSink(options));
  for (const std::string& tag : DeepSpeedTags(options)) {
    ZR_ASSIGN_OR_RETURN(
        OutputFile file,
        OutputFile::Create(JoinPath(dir, CsvFileName(tag)), "csv_monitor"));
    const std::string header = tag.substr(tag.rfind('/') + 1);
    ZR_RETURN_IF_ERROR(file.Append(absl::StrCat("step,", header, "\r\n")));
    sink->files_.emplace(tag, std::move(file));
  }
  return sink;
}

absl::Status CsvMonitorSink::Write(const StepMetrics& m) {
  for (const ScalarEvent& e : DeepSpeedEvents(m, options_)) {
    auto it = files_.find(e.tag);
    if (it == files_.end()) continue;
    ZR_RETURN_IF_ERROR(it->second.Append(
        absl::StrCat(e.step, ",", PythonFloat(e.value), "\r\n")));
  }
  return absl::OkStatus();
}

}  // namespace metrics
}  // namespace internal
}  // namespace cli
}  // namespace zero3
