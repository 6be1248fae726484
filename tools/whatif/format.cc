// Copyright 2026 The zero3 Authors.
//
// format.cc: a scenario's results as a table, JSON and CSV.

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/config/json.h"
#include "tools/whatif/whatif.h"
#include "tools/whatif/whatif_internal.h"

namespace zero3 {
namespace whatif {

using internal::ComparedRate;
using internal::Label;
using internal::ShortKeysAreUnique;

// The evaluation's cost for the variants that have it (eval_interval).
void AppendEvalTable(const ScenarioResult& r,
                     const std::vector<std::string>& labels, size_t width,
                     std::string* out) {
  if (r.fastest < 0 || !r.variants[r.fastest].eval_ms.has_value()) return;
  const VariantResult& f = r.variants[r.fastest];
  absl::StrAppend(out, "\nevaluation every ", f.eval_interval, " steps, ",
                  f.eval_iters, " global batches of forward passes:\n");
  absl::StrAppend(
      out, absl::StrFormat("%-*s %10s %12s %9s %12s\n", width, "variant",
                           "eval ms", "per step ms", "per step", "tokens/s"));
  for (size_t i = 0; i < r.variants.size(); ++i) {
    const VariantResult& v = r.variants[i];
    if (!v.eval_ms.has_value() || v.does_not_fit.has_value()) continue;
    const double per_step = *v.eval_ms / v.eval_interval;
    const double total = v.metrics.total_ms;
    absl::StrAppend(
        out,
        absl::StrFormat("%-*s %10.1f %12.2f %8.2f%% %12.0f\n", width, labels[i],
                        *v.eval_ms, per_step, 100 * per_step / total,
                        v.metrics.tokens_per_s * total / (total + per_step)));
  }
  absl::StrAppend(out,
                  "eval ms: one evaluation; per step: over the interval; "
                  "tokens/s: training tokens over the step and its share of "
                  "the evaluation.\n");
}

// The checkpoint costs of the variants that have them (save_interval).
void AppendCheckpointTable(const ScenarioResult& r,
                           const std::vector<std::string>& labels, size_t width,
                           std::string* out) {
  if (r.fastest < 0 || !r.variants[r.fastest].checkpoint.has_value()) return;
  absl::StrAppend(out, "\ncheckpoint every ",
                  r.variants[r.fastest].checkpoint->interval, " steps:\n");
  absl::StrAppend(out,
                  absl::StrFormat("%-*s %9s %10s %10s %10s %10s %9s\n", width,
                                  "variant", "mode", "snapshot", "shard ms",
                                  "stall ms", "slower ms", "per step"));
  for (size_t i = 0; i < r.variants.size(); ++i) {
    const std::optional<CheckpointCost>& c = r.variants[i].checkpoint;
    if (!c.has_value()) continue;
    absl::StrAppend(
        out,
        absl::StrFormat("%-*s %9s %10.1f %10.1f %10.1f %10.1f %8.2f%%\n", width,
                        labels[i],
                        r.variants[i].checkpoint_async ? "async" : "blocking",
                        c->snapshot_ms, c->write_ms, c->stall_ms,
                        c->slowdown_ms, 100 * c->overhead));
  }
  absl::StrAppend(
      out,
      "snapshot: copies to host memory (the step stops); shard: the write to "
      "storage (host.storage_write_gbps_per_node); stall: the loop waits, "
      "per save; slower: longer steps while an async write runs, per save; "
      "per step: (stall + slower) / interval over the step total.\n");
}

namespace {

// "does not fit: needs 151.20 GiB of 140.40 GiB device memory".
std::string NotFitText(const VariantResult& v) {
  const DoesNotFit& f = *v.does_not_fit;
  if (f.need_gib <= 0) {
    return absl::StrFormat("does not fit in %.2f GiB of device memory",
                           f.capacity_gib);
  }
  return absl::StrFormat(
      "does not fit: needs %.2f GiB of %.2f GiB device memory", f.need_gib,
      f.capacity_gib);
}

// The line naming the fastest fitting variant, after the table.
void AppendFastest(const ScenarioResult& r, bool full_keys, std::string* out) {
  if (r.fastest < 0) {
    absl::StrAppend(out, "\nno variant fits the device's memory.\n");
    return;
  }
  const VariantResult& v = r.variants[r.fastest];
  if (r.per_gpu) {
    absl::StrAppend(
        out, absl::StrFormat("\nfastest per GPU that fits: %s (%.0f tokens/s, "
                             "%.0f per GPU)\n",
                             Label(v.settings, full_keys),
                             v.metrics.tokens_per_s, ComparedRate(r, v)));
    return;
  }
  absl::StrAppend(
      out, absl::StrFormat("\nfastest that fits: %s (%.0f tokens/s)%s\n",
                           Label(v.settings, full_keys), v.metrics.tokens_per_s,
                           v.changes_training
                               ? "; it changes the training (one-step "
                                 "delayed update)"
                               : ""));
  if (v.changes_training && r.fastest_exact >= 0) {
    const VariantResult& exact = r.variants[r.fastest_exact];
    absl::StrAppend(
        out, absl::StrFormat("fastest exact that fits: %s (%.0f tokens/s)\n",
                             Label(exact.settings, full_keys),
                             exact.metrics.tokens_per_s));
  }
  // What zero3.offloaded_step "auto" chose, where a variant asks for it.
  for (const VariantResult& a : r.variants) {
    for (const auto& [key, value] : a.settings) {
      if (key != "zero3.offloaded_step" || value != "auto") continue;
      absl::StrAppend(
          out, absl::StrFormat("%s: %g%% of the offloaded optimizer state "
                               "stepped on the device\n",
                               Label(a.settings, full_keys),
                               100 * a.device_step_share));
    }
  }
}

// The change of each variant against the baseline, in percent.
void AppendChanges(const ScenarioResult& r,
                   const std::vector<std::string>& labels, size_t width,
                   std::string* out) {
  if (r.variants[r.baseline].does_not_fit) {
    absl::StrAppend(out,
                    "\nno changes against the baseline (*): it does not "
                    "fit.\n");
    return;
  }
  const Metrics& b = r.variants[r.baseline].metrics;
  auto pct = [](double v, double base) {
    if (base == 0) return v == 0 ? std::string("0%") : std::string("n/a");
    return absl::StrFormat("%+.1f%%", 100.0 * (v - base) / base);
  };
  absl::StrAppend(out, "\nchange against the baseline (*):\n");
  absl::StrAppend(
      out, absl::StrFormat("%-*s %9s %9s %9s %9s %11s\n", width, "variant",
                           "FWD", "BWD", "STEP", "total", "tokens/s"));
  for (size_t i = 0; i < r.variants.size(); ++i) {
    if (static_cast<int>(i) == r.baseline) continue;
    if (r.variants[i].does_not_fit.has_value()) {
      absl::StrAppend(
          out, absl::StrFormat("%-*s %9s\n", width, labels[i], "does not fit"));
      continue;
    }
    const Metrics& m = r.variants[i].metrics;
    absl::StrAppend(
        out,
        absl::StrFormat("%-*s %9s %9s %9s %9s %11s\n", width, labels[i],
                        pct(m.fwd_ms, b.fwd_ms), pct(m.bwd_ms, b.bwd_ms),
                        pct(m.step_ms, b.step_ms), pct(m.total_ms, b.total_ms),
                        pct(m.tokens_per_s, b.tokens_per_s)));
  }
}

}  // namespace

std::string FormatTable(const ScenarioResult& r) {
  const bool short_keys = ShortKeysAreUnique(r);
  std::vector<std::string> labels;
  size_t width = 7;
  for (size_t i = 0; i < r.variants.size(); ++i) {
    std::string l = Label(r.variants[i].settings, !short_keys);
    if (static_cast<int>(i) == r.baseline) l += " *";
    width = std::max(width, l.size());
    labels.push_back(l);
  }
  std::string out;
  absl::StrAppend(
      &out, "scenario ", r.name,
      r.description.empty() ? "" : absl::StrCat(": ", r.description), "\n");
  const std::string header =
      absl::StrFormat("%-*s %9s %9s %9s %9s %11s %9s %9s %9s %8s %8s %9s %6s\n",
                      width, "variant", "FWD ms", "BWD ms", "STEP ms",
                      "total ms", "tokens/s", "copy* ms", "comm* ms", "blocked",
                      "mem GiB", "pin GiB", "bound ms", "reach");
  absl::StrAppend(&out, header);
  for (size_t i = 0; i < r.variants.size(); ++i) {
    const Metrics& m = r.variants[i].metrics;
    if (r.variants[i].does_not_fit.has_value()) {
      absl::StrAppend(&out, absl::StrFormat("%-*s %s\n", width, labels[i],
                                            NotFitText(r.variants[i])));
      continue;
    }
    absl::StrAppend(
        &out, absl::StrFormat("%-*s %9.1f %9.1f %9.1f %9.1f %11.0f %9.1f %9.1f "
                              "%9.1f %8.2f %8.2f %9.1f %5.0f%%\n",
                              width, labels[i], m.fwd_ms, m.bwd_ms, m.step_ms,
                              m.total_ms, m.tokens_per_s, m.exposed_copy_ms,
                              m.exposed_comm_ms, m.host_blocked_ms,
                              m.device_memory_gib, m.pinned_host_gib,
                              m.bound.ms(), 100 * m.bound.Reached(m.total_ms)));
  }
  if (r.variants.size() > 1) AppendFastest(r, !short_keys, &out);
  if (r.variants.size() > 1) AppendChanges(r, labels, width, &out);
  absl::StrAppend(
      &out,
      "\ncopy*/comm*: time a host-device copy / a collective ran while "
      "no kernel did; blocked: host thread blocked; bound: the busiest "
      "resource's time (the device's kernels, the host's tasks, PCIe each "
      "way, the collectives), below which no schedule takes the step; reach: "
      "bound / total; times of rank 0's last simulated step.\n");
  AppendCheckpointTable(r, labels, width, &out);
  AppendEvalTable(r, labels, width, &out);
  return out;
}

// A variant's checkpoint and evaluation figures by name, as JSON and CSV
// carry them; none without save_interval and eval_interval.
std::vector<std::pair<std::string, double>> CostFigures(
    const VariantResult& v) {
  std::vector<std::pair<std::string, double>> figures;
  if (v.checkpoint.has_value()) {
    const CheckpointCost& c = *v.checkpoint;
    figures = {{"checkpoint_interval", c.interval},
               {"checkpoint_async", v.checkpoint_async ? 1 : 0},
               {"checkpoint_snapshot_ms", c.snapshot_ms},
               {"checkpoint_write_ms", c.write_ms},
               {"checkpoint_stall_ms", c.stall_ms},
               {"checkpoint_slowdown_ms", c.slowdown_ms},
               {"checkpoint_per_step_ms", c.per_step_ms},
               {"checkpoint_overhead", c.overhead}};
  }
  if (v.eval_ms.has_value() && v.eval_interval > 0) {
    const double per_step = *v.eval_ms / v.eval_interval;
    const double total = v.metrics.total_ms;
    figures.insert(
        figures.end(),
        {{"eval_interval", v.eval_interval},
         {"eval_iters", v.eval_iters},
         {"eval_ms", *v.eval_ms},
         {"eval_per_step_ms", per_step},
         {"eval_overhead", total > 0 ? per_step / total : 0},
         {"tokens_per_s_with_eval",
          total > 0 ? v.metrics.tokens_per_s * total / (total + per_step)
                    : 0}});
  }
  return figures;
}

std::string FormatJson(const ScenarioResult& r) {
  std::string out = absl::StrCat(
      "{\n  \"scenario\": ", config::QuoteJsonString(r.name),
      ",\n  \"description\": ", config::QuoteJsonString(r.description),
      ",\n  \"baseline\": ", r.baseline, ",\n  \"fastest_fitting\": ",
      r.fastest < 0 ? std::string("null") : absl::StrCat(r.fastest),
      ",\n  \"fastest_exact_fitting\": ",
      r.fastest_exact < 0 ? std::string("null") : absl::StrCat(r.fastest_exact),
      ",\n  \"variants\": [");
  const std::vector<std::string> names = MetricNames();
  for (size_t i = 0; i < r.variants.size(); ++i) {
    const VariantResult& v = r.variants[i];
    absl::StrAppend(&out, i == 0 ? "\n" : ",\n", "    {\"settings\": {");
    for (size_t k = 0; k < v.settings.size(); ++k) {
      absl::StrAppend(&out, k == 0 ? "" : ", ",
                      config::QuoteJsonString(v.settings[k].first), ": ",
                      config::QuoteJsonString(v.settings[k].second));
    }
    absl::StrAppend(&out, "}, \"fits\": ", v.does_not_fit ? "false" : "true");
    if (v.does_not_fit.has_value()) {
      absl::StrAppend(&out, ", \"memory_need_gib\": ",
                      config::FormatJsonDouble(v.does_not_fit->need_gib),
                      ", \"memory_capacity_gib\": ",
                      config::FormatJsonDouble(v.does_not_fit->capacity_gib),
                      ", \"does_not_fit\": ",
                      config::QuoteJsonString(v.does_not_fit->message));
    }
    if (v.changes_training) {
      absl::StrAppend(&out, ", \"changes_training\": true");
    }
    for (const std::string& n : names) {
      absl::StrAppend(&out, ", \"", n, "\": ",
                      config::FormatJsonDouble(*MetricValue(v.metrics, n)));
    }
    for (const auto& [n, value] : CostFigures(v)) {
      // The interval and the async flag are counts, written as such.
      const bool count = value == std::floor(value) && std::abs(value) < 1e9;
      absl::StrAppend(&out, ", \"", n, "\": ",
                      count ? absl::StrCat(static_cast<int64_t>(value))
                            : config::FormatJsonDouble(value));
    }
    absl::StrAppend(&out, "}");
  }
  absl::StrAppend(&out, "\n  ]\n}\n");
  return out;
}

std::string FormatCsv(const ScenarioResult& r) {
  std::string out;
  std::vector<std::string> header;
  if (!r.variants.empty()) {
    for (const auto& [k, v] : r.variants[0].settings) header.push_back(k);
  }
  for (const std::string& n : MetricNames()) header.push_back(n);
  // Every fitting variant has the checkpoint figures or none does.
  const size_t figures =
      r.fastest < 0 ? 0 : CostFigures(r.variants[r.fastest]).size();
  if (figures > 0) {
    for (const auto& [n, v] : CostFigures(r.variants[r.fastest])) {
      header.push_back(n);
    }
  }
  header.push_back("baseline");
  header.push_back("fits");
  header.push_back("memory_capacity_gib");  // set when it does not fit
  absl::StrAppend(&out, absl::StrJoin(header, ","), "\n");
  for (size_t i = 0; i < r.variants.size(); ++i) {
    std::vector<std::string> row;
    for (const auto& [k, v] : r.variants[i].settings) row.push_back(v);
    for (const std::string& n : MetricNames()) {
      row.push_back(
          absl::StrFormat("%.6g", *MetricValue(r.variants[i].metrics, n)));
    }
    for (const auto& [n, v] : CostFigures(r.variants[i])) {
      row.push_back(absl::StrFormat("%.6g", v));
    }
    if (r.variants[i].does_not_fit) row.resize(row.size() + figures);
    row.push_back(static_cast<int>(i) == r.baseline ? "1" : "0");
    const std::optional<DoesNotFit>& f = r.variants[i].does_not_fit;
    row.push_back(f.has_value() ? "0" : "1");
    row.push_back(f.has_value() ? absl::StrFormat("%.6g", f->capacity_gib)
                                : std::string());
    absl::StrAppend(&out, absl::StrJoin(row, ","), "\n");
  }
  return out;
}

}  // namespace whatif
}  // namespace zero3
