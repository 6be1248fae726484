// Copyright 2026 The zero3 Authors.
//
// plot.h: one metric of a whatif sweep against one varied key, drawn by
// gnuplot (`zero3 whatif --plot`): a PNG through the pngcairo terminal,
// on a white background, for a name ending in ".png"; an SVG otherwise.
// Axis labels carry units; a GPU-count axis is logarithmic, base 2. One
// line per combination of the other varied keys.
//
//   ZR_RETURN_IF_ERROR(PlotSweep(result, "total_ms", "gpus", "s.png", err));
//
// gnuplot writes to a temporary name, renamed over the path once it
// succeeded; its data and script files are removed on every path.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_PLOT_H_
#define ZERO3_TOOLS_CLI_INTERNAL_PLOT_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/whatif/whatif.h"

namespace zero3 {
namespace cli {
namespace internal {

// Draws `metric` of `result` against `x_key` (the first varied key when
// empty) into `path`; says where on `err`.
absl::Status PlotSweep(const whatif::ScenarioResult& result,
                       const std::string& metric, std::string x_key,
                       const std::string& path, std::ostream& err);

// A metric's axis label with its unit: "total (ms)", "tokens/s",
// "device memory (GiB)".
std::string MetricLabel(absl::string_view metric);

// A varied key's axis label with its unit where known: "GPUs",
// "sequence length (tokens)"; other keys as they are.
std::string KeyLabel(absl::string_view key);

// The sweep as gnuplot draws it: x positions (the values themselves on a
// log-2 axis, else 0, 1, ...), their labels, and one line per series.
struct PlotData {
  bool log2_x = false;
  std::vector<double> x;
  std::vector<std::string> x_labels;
  std::vector<std::string> series;     // line titles
  std::vector<std::vector<double>> y;  // [series][x]; NaN where absent
};
absl::StatusOr<PlotData> CollectPlotData(const whatif::ScenarioResult& result,
                                         const std::string& metric,
                                         const std::string& x_key);

// The gnuplot script drawing `data` (in `data_path`) into `output`;
// `png` picks the terminal.
std::string PlotScript(const PlotData& data, const std::string& title,
                       const std::string& metric, const std::string& x_key,
                       const std::string& data_path, const std::string& output,
                       bool png);

}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_PLOT_H_
