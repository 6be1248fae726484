// Copyright 2026 The zero3 Authors.

#include "tools/whatif/fidelity.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/model/presets.h"
#include "core/util/status_macros.h"
#include "core/util/text_proto.h"
#include "sim/profiles.h"
#include "tools/whatif/whatif.h"

namespace zero3 {
namespace whatif {
namespace {

constexpr const char* kPhases[] = {"FWD", "BWD", "STEP"};

bool Named(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string Resolve(const std::string& path, const std::string& base_dir) {
  if (path.empty() || path[0] == '/' || base_dir.empty()) return path;
  return absl::StrCat(base_dir, "/", path);
}

// The offload setting a case's overrides choose, for the table.
std::string OffloadOf(const Scenario& s) {
  bool none = false, pageable = false, blocking = false;
  for (const std::string& kv : s.set()) {
    if (kv == "zero_optimization.offload_optimizer.device=none") none = true;
    if (kv == "zero_optimization.offload_optimizer.pin_memory=false") {
      pageable = true;
    }
    if (kv == "zero3.grad_offload=blocking") blocking = true;
  }
  if (none) return "none";
  return absl::StrCat(pageable ? "pageable" : "pinned", " ",
                      blocking ? "blocking" : "async");
}

}  // namespace

absl::StatusOr<FidelitySet> LoadFidelitySet(const std::string& path) {
  FidelitySet set;
  ZR_RETURN_IF_ERROR(ReadTextProtoFile(path, "fidelity measurements", &set));
  return set;
}

absl::StatusOr<FidelityReport> ReplayFidelity(const FidelitySet& set,
                                              const std::string& hardware,
                                              const std::string& base_dir) {
  const std::string profile = hardware.empty() ? set.hardware() : hardware;
  const std::vector<std::string> presets = model::PresetNames();
  const std::vector<std::string> profiles = sim::ProfileNames();
  FidelityReport report;
  double sum = 0, test_sum = 0;
  int judged = 0, test_judged = 0;
  for (const FidelityCase& c : set.cases()) {
    Scenario s = c.scenario();
    s.clear_vary();
    s.clear_baseline();
    s.set_name(c.name());
    s.set_hardware(Named(profiles, profile) ? profile
                                            : Resolve(profile, base_dir));
    if (!Named(presets, s.model())) s.set_model(Resolve(s.model(), base_dir));
    RunOptions run;
    run.base_dir = base_dir;
    absl::StatusOr<ScenarioResult> result = RunScenario(s, run);
    if (!result.ok()) {
      return absl::Status(result.status().code(),
                          absl::StrCat("fidelity case ", c.name(), ": ",
                                       result.status().message()));
    }
    const Metrics& m = result->variants.at(0).metrics;
    FidelityRow row;
    row.name = c.name();
    row.calibration = c.calibration();
    row.gpus = s.gpus();
    row.model = s.model().substr(s.model().rfind('/') + 1);
    row.model = row.model.substr(0, row.model.find(".textproto"));
    row.micro_batch = s.micro_batch();
    row.accumulation = s.accumulation();
    row.offload = OffloadOf(s);
    const double measured[3] = {c.fwd_ms(), c.bwd_ms(), c.step_ms()};
    const bool given[3] = {c.has_fwd_ms(), c.has_bwd_ms(), c.has_step_ms()};
    const double predicted[3] = {m.fwd_ms, m.bwd_ms, m.step_ms};
    for (int i = 0; i < 3; ++i) {
      row.measured[i] = measured[i];
      row.predicted[i] = predicted[i];
      if (!given[i] || (i == 2 && measured[i] < set.ignore_step_below_ms())) {
        row.error[i] = std::numeric_limits<double>::quiet_NaN();
        continue;
      }
      row.error[i] = (predicted[i] - measured[i]) / measured[i];
      const double e = std::abs(row.error[i]);
      sum += e;
      ++judged;
      if (!c.calibration()) {
        test_sum += e;
        ++test_judged;
      }
      if (e > report.max_abs_error) {
        report.max_abs_error = e;
        report.worst = absl::StrCat(c.name(), " ", kPhases[i]);
      }
    }
    report.rows.push_back(row);
  }
  report.mean_abs_error = judged > 0 ? sum / judged : 0;
  report.test_mean_abs_error = test_judged > 0 ? test_sum / test_judged : 0;
  return report;
}

std::string FidelityMarkdown(const FidelityReport& report) {
  std::string out =
      "| case | GPUs | model | micro-batch | acc | optimizer offload | "
      "FWD ms (meas. / pred. / err.) | BWD ms | STEP ms |\n"
      "|---|---|---|---|---|---|---|---|---|\n";
  for (const FidelityRow& r : report.rows) {
    out += absl::StrFormat("| %s%s | %d | %s | %d x 2048 | %d | %s |", r.name,
                           r.calibration ? " (cal.)" : "", r.gpus, r.model,
                           r.micro_batch, r.accumulation, r.offload);
    for (int i = 0; i < 3; ++i) {
      out += absl::StrFormat(
          " %s / %.1f / %s |",
          r.measured[i] > 0 ? absl::StrFormat("%.1f", r.measured[i])
                            : std::string("-"),
          r.predicted[i],
          std::isnan(r.error[i])
              ? std::string("-")
              : absl::StrFormat("%+.1f%%", 100 * r.error[i]));
    }
    out += "\n";
  }
  out += absl::StrFormat(
      "\nLargest error %.1f%% (%s); mean |error| %.1f%% over all cases, "
      "%.1f%% over the test cases (those not marked cal.).\n",
      100 * report.max_abs_error, report.worst, 100 * report.mean_abs_error,
      100 * report.test_mean_abs_error);
  return out;
}

}  // namespace whatif
}  // namespace zero3
