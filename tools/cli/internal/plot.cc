// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "core/io/write_file.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace {

// The last part of a dotted key: "zero3.grad_offload" -> "grad_offload".
std::string ShortKey(const std::string& key) {
  return key.substr(key.rfind('.') + 1);
}

// The x positions: the values of a GPU count (all positive integers) on a
// log-2 axis, else the order of appearance.
void PlaceX(const std::string& x_key, PlotData& data) {
  bool counts = x_key == "gpus";
  std::vector<double> values;
  for (const std::string& label : data.x_labels) {
    int64_t v = 0;
    counts = counts && absl::SimpleAtoi(label, &v) && v > 0;
    values.push_back(static_cast<double>(v));
  }
  data.log2_x = counts;
  data.x.clear();
  for (size_t i = 0; i < data.x_labels.size(); ++i) {
    data.x.push_back(counts ? values[i] : static_cast<double>(i));
  }
}

// Removes a file when it goes out of scope.
struct RemoveOnExit {
  std::string path;
  ~RemoveOnExit() { std::remove(path.c_str()); }
};

// Runs gnuplot on `script_path`; its output on failure.
absl::Status RunGnuplot(const std::string& script_path) {
  const std::string command = absl::StrCat("gnuplot '", script_path, "' 2>&1");
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return absl::InternalError("cannot run gnuplot");
  std::string output;
  char buf[256];
  while (fgets(buf, sizeof(buf), pipe) != nullptr) output += buf;
  if (pclose(pipe) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "gnuplot failed (install it with tools/setup.sh, Debian package "
        "gnuplot-nox): ",
        output));
  }
  return absl::OkStatus();
}

}  // namespace

std::string MetricLabel(absl::string_view metric) {
  if (metric == "tokens_per_s") return "tokens/s";
  std::string name(metric);
  std::string unit;
  for (const auto& [suffix, u] :
       {std::pair<const char*, const char*>{"_ms", "ms"}, {"_gib", "GiB"}}) {
    if (absl::EndsWith(name, suffix)) {
      name.resize(name.size() - std::char_traits<char>::length(suffix));
      unit = u;
    }
  }
  absl::StrReplaceAll({{"_", " "}}, &name);
  return unit.empty() ? name : absl::StrCat(name, " (", unit, ")");
}

std::string KeyLabel(absl::string_view key) {
  static const std::map<std::string, std::string>* const kLabels =
      new std::map<std::string, std::string>{
          {"gpus", "GPUs"},
          {"tp", "tensor-parallel degree"},
          {"micro_batch", "micro-batch (sequences)"},
          {"seq", "sequence length (tokens)"},
          {"accumulation", "gradient accumulation (micro-steps)"},
      };
  const auto it = kLabels->find(std::string(key));
  if (it != kLabels->end()) return it->second;
  if (absl::EndsWith(key, "_gbps")) return absl::StrCat(key, " (GB/s)");
  if (absl::EndsWith(key, "bucket_size") || absl::EndsWith(key, "threshold")) {
    return absl::StrCat(key, " (elements)");
  }
  return std::string(key);
}

absl::StatusOr<PlotData> CollectPlotData(const whatif::ScenarioResult& r,
                                         const std::string& metric,
                                         const std::string& x_key) {
  PlotData data;
  std::map<std::string, std::map<std::string, double>> lines;
  for (const whatif::VariantResult& v : r.variants) {
    std::string x, series;
    for (const auto& [k, val] : v.settings) {
      if (k == x_key) {
        x = val;
      } else {
        absl::StrAppend(&series, series.empty() ? "" : " ", ShortKey(k), "=",
                        val);
      }
    }
    if (series.empty()) series = metric;
    if (std::find(data.x_labels.begin(), data.x_labels.end(), x) ==
        data.x_labels.end()) {
      data.x_labels.push_back(x);
    }
    if (!lines.count(series)) data.series.push_back(series);
    if (v.does_not_fit.has_value()) {
      lines[series];  // its line has a gap there
      continue;
    }
    ZR_ASSIGN_OR_RETURN(lines[series][x],
                        whatif::MetricValue(v.metrics, metric));
  }
  for (const std::string& s : data.series) {
    std::vector<double> ys;
    for (const std::string& x : data.x_labels) {
      const auto it = lines[s].find(x);
      ys.push_back(it == lines[s].end()
                       ? std::numeric_limits<double>::quiet_NaN()
                       : it->second);
    }
    data.y.push_back(std::move(ys));
  }
  PlaceX(x_key, data);
  return data;
}

std::string PlotScript(const PlotData& data, const std::string& title,
                       const std::string& metric, const std::string& x_key,
                       const std::string& data_path, const std::string& output,
                       bool png) {
  std::string script = absl::StrCat(
      png ? "set terminal pngcairo size 1000,600 background rgb 'white' "
            "enhanced font 'sans,11'\n"
          : "set terminal svg size 800,500 dynamic enhanced font 'sans,12' "
            "background rgb 'white'\n",
      "set output '", output, "'\n", "set title '", title, ": ", metric, " by ",
      x_key, "' noenhanced\n", "set xlabel '", KeyLabel(x_key),
      "' noenhanced\n", "set ylabel '", MetricLabel(metric), "' noenhanced\n",
      "set key outside right noenhanced\n", "set grid\nset yrange [0:*]\n");
  absl::StrAppend(&script, data.log2_x
                               ? "set logscale x 2\nset offsets 0, 0, 0, 0\n"
                               : "set offsets 0.2, 0.2, 0, 0\n");
  absl::StrAppend(&script, "plot ");
  for (size_t i = 0; i < data.series.size(); ++i) {
    absl::StrAppend(
        &script, i == 0 ? "" : ", ", "'", data_path, "' using 1:", i + 3,
        ":xtic(2) with linespoints lw 2 title '", data.series[i], "'");
  }
  return script + "\n";
}

absl::Status PlotSweep(const whatif::ScenarioResult& r,
                       const std::string& metric, std::string x_key,
                       const std::string& path, std::ostream& err) {
  if (r.variants.empty() || r.variants[0].settings.empty()) {
    return absl::InvalidArgumentError("--plot needs at least one --vary key");
  }
  const auto& keys = r.variants[0].settings;
  if (x_key.empty()) x_key = keys[0].first;
  std::vector<std::string> names;
  for (const auto& [k, v] : keys) names.push_back(k);
  if (std::find(names.begin(), names.end(), x_key) == names.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--plot-x '", x_key, "' is not a varied key (",
                     absl::StrJoin(names, ", "), ")"));
  }
  ZR_ASSIGN_OR_RETURN(const PlotData data, CollectPlotData(r, metric, x_key));
  std::string table;
  for (size_t i = 0; i < data.x.size(); ++i) {
    absl::StrAppend(&table, absl::StrFormat("%.17g", data.x[i]), " \"",
                    data.x_labels[i], "\"");
    for (const std::vector<double>& ys : data.y) {
      absl::StrAppend(&table, std::isnan(ys[i])
                                  ? std::string(" NaN")
                                  : absl::StrFormat(" %.6g", ys[i]));
    }
    table += "\n";
  }
  const RemoveOnExit data_file{path + ".dat"};
  const RemoveOnExit script_file{path + ".gp"};
  const RemoveOnExit partial{path + ".partial"};
  ZR_RETURN_IF_ERROR(io::WriteWholeFile(data_file.path, table));
  ZR_RETURN_IF_ERROR(io::WriteWholeFile(
      script_file.path,
      PlotScript(data, r.name, metric, x_key, data_file.path, partial.path,
                 absl::EndsWith(path, ".png"))));
  ZR_RETURN_IF_ERROR(RunGnuplot(script_file.path));
  if (std::rename(partial.path.c_str(), path.c_str()) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--plot: cannot rename ", partial.path, " to ", path));
  }
  err << "plot written to " << path << "\n";
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace cli
}  // namespace zero3
