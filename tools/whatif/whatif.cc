// Copyright 2026 The zero3 Authors.
//
// whatif.cc: a scenario run variant by variant, its metrics and the
// fastest variants.

#include "tools/whatif/whatif.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/util/status_macros.h"
#include "core/util/suggest.h"
#include "core/util/text_proto.h"
#include "tools/whatif/whatif_internal.h"

namespace zero3 {
namespace whatif {

using internal::ComparedRate;
using internal::Expand;
using internal::FindBaseline;
using internal::Label;
using internal::RunVariant;
using internal::Variant;

namespace internal {

std::string Label(
    const std::vector<std::pair<std::string, std::string>>& settings,
    bool full_keys) {
  if (settings.empty()) return "(base)";
  std::vector<std::string> parts;
  for (const auto& [k, v] : settings) {
    const std::string key =
        full_keys ? k : std::string(k.substr(k.rfind('.') + 1));
    parts.push_back(absl::StrCat(key, "=", v));
  }
  return absl::StrJoin(parts, " ");
}

bool ShortKeysAreUnique(const ScenarioResult& r) {
  if (r.variants.empty()) return true;
  std::vector<std::string> shorts;
  for (const auto& [k, v] : r.variants[0].settings) {
    shorts.push_back(std::string(k.substr(k.rfind('.') + 1)));
  }
  std::vector<std::string> sorted = shorts;
  std::sort(sorted.begin(), sorted.end());
  return std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
}

}  // namespace internal

std::vector<std::string> MetricNames() {
  return {"fwd_ms",          "bwd_ms",          "step_ms",
          "total_ms",        "tokens_per_s",    "exposed_copy_ms",
          "exposed_comm_ms", "host_blocked_ms", "device_memory_gib",
          "pinned_host_gib", "bound_ms",        "bound_reached",
          "bound_device_ms", "bound_host_ms",   "bound_h2d_ms",
          "bound_d2h_ms",    "bound_comm_ms",   "bound_drive_ms"};
}

absl::StatusOr<double> MetricValue(const Metrics& m, const std::string& name) {
  const double values[] = {
      m.fwd_ms,          m.bwd_ms,          m.step_ms,
      m.total_ms,        m.tokens_per_s,    m.exposed_copy_ms,
      m.exposed_comm_ms, m.host_blocked_ms, m.device_memory_gib,
      m.pinned_host_gib, m.bound.ms(),      m.bound.Reached(m.total_ms),
      m.bound.device_ms, m.bound.host_ms,   m.bound.h2d_ms,
      m.bound.d2h_ms,    m.bound.comm_ms,   m.bound.drive_ms};
  const std::vector<std::string> names = MetricNames();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return values[i];
  }
  const std::string near = NearestName(name, names);
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown metric '", name, "'",
      near.empty() ? "" : absl::StrCat(" (did you mean '", near, "'?)"),
      "; metrics: ", absl::StrJoin(names, ", ")));
}

absl::StatusOr<Scenario> LoadScenario(const std::string& path) {
  Scenario s;
  ZR_RETURN_IF_ERROR(ReadTextProtoFile(path, "scenario", &s));
  if (!s.has_name()) {
    std::string name = path.substr(path.rfind('/') + 1);
    s.set_name(name.substr(0, name.find('.')));
  }
  return s;
}

namespace internal {

double ComparedRate(const ScenarioResult& r, const VariantResult& v) {
  return v.metrics.tokens_per_s /
         (r.per_gpu ? static_cast<double>(v.gpus) : 1.0);
}

}  // namespace internal

absl::StatusOr<ScenarioResult> RunScenario(const Scenario& scenario,
                                           const RunOptions& options) {
  ZR_ASSIGN_OR_RETURN(std::vector<Variant> variants, Expand(scenario));
  ScenarioResult result;
  result.name = scenario.name();
  result.description = scenario.description();
  ZR_ASSIGN_OR_RETURN(result.baseline, FindBaseline(scenario, variants));
  // With the GPU count varied, more GPUs always train more tokens per
  // second: the comparison is per GPU.
  for (const Variant& v : variants) {
    if (v.gpus != variants.front().gpus) result.per_gpu = true;
  }
  for (const Variant& v : variants) {
    absl::StatusOr<VariantResult> r =
        RunVariant(scenario, v, options, &result.notices);
    if (!r.ok()) {
      return Annotate(r.status(),
                      absl::StrCat("variant ", Label(v.settings, true)));
    }
    r->gpus = v.gpus;
    result.variants.push_back(std::move(*r));
    const VariantResult& done = result.variants.back();
    const int index = static_cast<int>(result.variants.size()) - 1;
    auto faster = [&](int best) {
      return !done.does_not_fit.has_value() &&
             (best < 0 || ComparedRate(result, done) >
                              ComparedRate(result, result.variants[best]));
    };
    if (faster(result.fastest)) result.fastest = index;
    if (!done.changes_training && faster(result.fastest_exact)) {
      result.fastest_exact = index;
    }
    if (options.progress) {
      options.progress(static_cast<int>(result.variants.size()),
                       static_cast<int>(variants.size()),
                       Label(v.settings, true));
    }
  }
  return result;
}

}  // namespace whatif
}  // namespace zero3
