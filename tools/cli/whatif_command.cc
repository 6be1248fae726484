// Copyright 2026 The zero3 Authors.

#include "tools/cli/whatif_command.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/io/write_file.h"
#include "core/model/presets.h"
#include "core/util/key_value.h"
#include "core/util/status_macros.h"
#include "sim/profiles.h"
#include "tools/cli/flag_limits.h"
#include "tools/cli/internal/output_path.h"
#include "tools/cli/internal/plot.h"
#include "tools/whatif/whatif.h"

namespace zero3 {
namespace cli {
namespace {

std::string FileName(
    const std::vector<std::pair<std::string, std::string>>& s) {
  std::string name;
  for (const auto& [k, v] : s) {
    if (!name.empty()) name += "__";
    name += k.substr(k.rfind('.') + 1) + "-" + v;
  }
  if (name.empty()) name = "base";
  for (char& c : name) {
    if (!isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' &&
        c != '.')
      c = '_';
  }
  return name;
}

class WhatifCommand : public Command {
 public:
  absl::string_view name() const override { return "whatif"; }
  absl::string_view summary() const override {
    return "what a training step would cost on hardware you do not have";
  }
  absl::string_view description() const override {
    return "Runs ZeRO-3 in timing mode on a simulated hardware profile for a "
           "scenario - from SCENARIO (a text-format file, see "
           "tools/whatif/scenarios/) and/or the flags, which override the "
           "file - and prints FWD, BWD, STEP, the step total, tokens/s, the "
           "exposed (not overlapped) copy and communication time, the time "
           "the host thread was blocked, the device-memory peak, pinned "
           "host memory and the step's lower bound (its busiest resource's "
           "time) with the share of it reached, with deltas against the "
           "baseline variant. KEYs of "
           "--set and --vary are scenario keys (hardware, model, gpus, tp, "
           "micro_batch, seq, accumulation, host_cores_per_gpu, "
           "host_memory_gbps), configuration keys with "
           "DeepSpeed's dotted names (zero3.grad_offload, "
           "zero_optimization.offload_optimizer.pin_memory, ...) or "
           "hardware-profile figures (hardware.host_link.pinned_d2h_gbps). "
           "Without a configuration the base is DeepSpeed's defaults with "
           "bf16 and CPU optimizer offload. Ranks of a data-parallel group "
           "are symmetric, so only rank 0 is simulated unless --full. A "
           "variant "
           "that runs out of device memory is reported as not fitting, with "
           "its peak need, and the sweep goes on; the exit status is 0 when "
           "at least one variant fits. With several variants a line names "
           "the fitting one with the most tokens/s.";
  }

  void DefineFlags(FlagSet& flags) override {
    flags.AddPositional("SCENARIO", "a text-format scenario file", false);
    flags.AddString("hardware", &hardware_, "NAME|FILE",
                    absl::StrCat("hardware profile (",
                                 absl::StrJoin(sim::ProfileNames(), ", "),
                                 "); default h200_sxm"));
    flags.AddString(
        "model", &model_, "NAME|FILE",
        absl::StrCat("model (", absl::StrJoin(model::PresetNames(), ", "),
                     "); default qwen2.5-1.5b"));
    // 0 stands for "not given": SCENARIO's value, else the default shown.
    flags.AddInt("gpus", &gpus_, "N", "GPUs (ranks)", kRanksRange);
    flags.SetDefaultText("gpus", "8");
    flags.AddInt("tp", &tp_, "N", "tensor-parallel degree", kRanksRange);
    flags.SetDefaultText("tp", "1");
    flags.AddInt("micro-batch", &micro_batch_, "N", "sequences per micro-batch",
                 kMicroBatchRange);
    flags.SetDefaultText("micro-batch", "4");
    flags.AddInt("seq", &seq_, "N", "tokens per sequence", kSeqRange);
    flags.SetDefaultText("seq", "2048");
    flags.AddInt("accumulation", &accumulation_, "N",
                 "gradient accumulation steps", kAccumulationRange);
    flags.SetDefaultText("accumulation", "1");
    flags.AddInt("host-cores-per-gpu", &host_cores_, "N",
                 "host cores each GPU's rank has (scenario key "
                 "host_cores_per_gpu)",
                 IntRange{0, 4096});
    flags.SetDefaultText("host-cores-per-gpu", "the profile's");
    flags.AddDouble("host-memory-gbps", &host_gbps_, "GBPS",
                    "the node's host memory bandwidth (scenario key "
                    "host_memory_gbps)");
    flags.SetDefaultText("host-memory-gbps", "the profile's");
    flags.AddString("config", &config_, "FILE",
                    "a DeepSpeed JSON or zero3 configuration");
    flags.AddRepeated("set", &set_, "KEY=VALUE", "set a key for every variant");
    flags.AddRepeated(
        "vary", &vary_, "KEY=V1,V2,...",
        "one variant per value; several --vary give the cross product");
    flags.AddString("baseline", &baseline_, "KEY=VALUE[,...]",
                    "the variant deltas are against (default: the first)");
    flags.AddInt("steps", &steps_, "N",
                 "steps simulated per variant (the last is reported)",
                 kWhatifStepsRange);
    flags.SetDefaultText("steps", "3");
    flags.AddInt("save-interval", &save_interval_, "N",
                 "also estimate saving a checkpoint every N steps "
                 "(zero3.checkpoint_write: async or blocking; "
                 "docs/checkpoints.md)",
                 IntRange{0, 1000000});
    flags.AddInt("eval-interval", &eval_interval_, "N",
                 "also simulate evaluating held-out data every N steps, as "
                 "train --eval-interval does, and what it costs per step",
                 IntRange{0, 1000000});
    flags.AddInt("eval-iters", &eval_iters_, "N",
                 "with --eval-interval: global batches per evaluation",
                 IntRange{0, 1000000});
    flags.SetDefaultText("eval-iters", "10");
    flags.SetDefaultText("eval-interval", "off");
    flags.SetDefaultText("save-interval", "off");
    flags.AddString("format", &format_, "table|json", "output format");
    flags.AddString("csv", &csv_, "FILE", "also write the figures as CSV");
    flags.AddString("trace-dir", &trace_dir_, "DIR",
                    "write a Chrome trace per variant");
    flags.AddString("plot", &plot_, "FILE.svg|FILE.png",
                    "draw a metric against a varied key (gnuplot; PNG for a "
                    ".png name, SVG otherwise)");
    flags.AddString("plot-metric", &plot_metric_, "NAME",
                    absl::StrCat("metric to plot (",
                                 absl::StrJoin(whatif::MetricNames(), ", "),
                                 "); default total_ms"));
    flags.AddString("plot-x", &plot_x_, "KEY",
                    "varied key on the x axis (default: the first)");
    flags.AddBool(
        "explain", &explain_,
        "print the cost model's terms for one operation of each kind");
    flags.AddBool("full", &full_,
                  "simulate every rank (no symmetric shortcut)");
    flags.AddBool("progress", &progress_,
                  "print a line on stderr as each variant finishes (also "
                  "without this flag when stderr is a terminal)");
  }

  int Run(const std::vector<std::string>& positional, std::ostream& out,
          std::ostream& err) override {
    absl::Status s = Execute(positional, out, err);
    if (!s.ok()) {
      err << "error: " << s.message() << "\n";
      return s.code() == absl::StatusCode::kInvalidArgument ||
                     s.code() == absl::StatusCode::kNotFound
                 ? kExitUsage
                 : kExitFailure;
    }
    return kExitOk;
  }

 private:
  absl::Status Execute(const std::vector<std::string>& positional,
                       std::ostream& out, std::ostream& err) {
    whatif::Scenario scenario;
    whatif::RunOptions run;
    run.full = full_;
    if (!positional.empty()) {
      const std::string path = ResolveUserPath(positional[0]);
      ZR_ASSIGN_OR_RETURN(scenario, whatif::LoadScenario(path));
      const size_t slash = path.rfind('/');
      run.base_dir = slash == std::string::npos ? "." : path.substr(0, slash);
    } else {
      scenario.set_name("command line");
    }
    if (!hardware_.empty()) scenario.set_hardware(hardware_);
    if (!model_.empty()) scenario.set_model(model_);
    if (gpus_ != 0) scenario.set_gpus(static_cast<int>(gpus_));
    if (tp_ != 0) scenario.set_tp(static_cast<int>(tp_));
    if (micro_batch_ != 0) scenario.set_micro_batch(micro_batch_);
    if (seq_ != 0) scenario.set_seq(seq_);
    if (accumulation_ != 0)
      scenario.set_accumulation(static_cast<int>(accumulation_));
    if (steps_ != 0) scenario.set_steps(static_cast<int>(steps_));
    if (save_interval_ != 0) {
      scenario.set_save_interval(static_cast<int>(save_interval_));
    }
    if (eval_interval_ != 0) {
      scenario.set_eval_interval(static_cast<int>(eval_interval_));
    }
    if (eval_iters_ != 0) {
      scenario.set_eval_iters(static_cast<int>(eval_iters_));
    }
    if (!config_.empty()) {
      scenario.set_config(ResolveUserPath(config_));
      run.base_dir.clear();
    }
    for (const std::string& s : set_) scenario.add_set(s);
    if (host_cores_ > 0) {
      scenario.add_set(absl::StrCat("host_cores_per_gpu=", host_cores_));
    }
    if (host_gbps_ < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--host-memory-gbps: expected a positive bandwidth, got ",
          host_gbps_));
    }
    if (host_gbps_ > 0) {
      scenario.add_set(absl::StrCat("host_memory_gbps=", host_gbps_));
    }
    for (const std::string& v : vary_) {
      const absl::optional<KeyValue> kv = SplitKeyValue(v);
      if (!kv.has_value() || kv->key.empty() || kv->value.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--vary '", v, "': expected KEY=V1,V2,... (e.g. tp=1,2)"));
      }
      whatif::Vary* vary = scenario.add_vary();
      vary->set_key(std::string(kv->key));
      for (absl::string_view value : absl::StrSplit(kv->value, ',')) {
        vary->add_values(std::string(value));
      }
    }
    if (!baseline_.empty()) scenario.set_baseline(baseline_);
    if (gpus_ < 0 || tp_ < 0 || micro_batch_ < 0 || seq_ < 0 ||
        accumulation_ < 0) {
      return absl::InvalidArgumentError("sizes must be positive");
    }
    if (format_ != "table" && format_ != "json") {
      return absl::InvalidArgumentError(
          absl::StrCat("--format must be table or json, got '", format_, "'"));
    }
    if (!plot_.empty()) {
      ZR_RETURN_IF_ERROR(
          whatif::MetricValue(whatif::Metrics(), plot_metric_).status());
    }
    ZR_RETURN_IF_ERROR(CheckOutputs());
    if (explain_) {
      ZR_ASSIGN_OR_RETURN(std::string text,
                          whatif::ExplainScenario(scenario, run));
      out << text;
      return absl::OkStatus();
    }
    run.traces = !trace_dir_.empty();
    if (progress_ || isatty(STDERR_FILENO)) {
      const absl::Time start = absl::Now();
      run.progress = [&err, start](int done, int total,
                                   const std::string& label) {
        err << absl::StrFormat("whatif: %d/%d variants done (%s; %.1f s)\n",
                               done, total, label,
                               absl::ToDoubleSeconds(absl::Now() - start));
        err.flush();
      };
    }
    ZR_ASSIGN_OR_RETURN(whatif::ScenarioResult result,
                        whatif::RunScenario(scenario, run));
    for (const std::string& n : result.notices) err << "notice: " << n << "\n";
    out << (format_ == "json" ? whatif::FormatJson(result)
                              : whatif::FormatTable(result));
    if (!csv_.empty()) {
      ZR_RETURN_IF_ERROR(
          io::WriteWholeFile(ResolveUserPath(csv_), whatif::FormatCsv(result)));
    }
    if (run.traces) {
      const std::string dir = ResolveUserPath(trace_dir_);
      for (const whatif::VariantResult& v : result.variants) {
        if (v.does_not_fit.has_value()) continue;  // no step ran
        const std::string path =
            absl::StrCat(dir, "/", FileName(v.settings), ".json");
        ZR_RETURN_IF_ERROR(io::WriteWholeFile(path, v.trace_json));
      }
      err << "traces written to " << dir << "\n";
    }
    if (!plot_.empty()) {
      ZR_RETURN_IF_ERROR(internal::PlotSweep(result, plot_metric_, plot_x_,
                                             ResolveUserPath(plot_), err));
    }
    if (result.fastest < 0) {
      return absl::ResourceExhaustedError(
          "no variant fits the device's memory (see the table)");
    }
    return absl::OkStatus();
  }

  // --csv, --plot and --trace-dir can be written (the directory created).
  absl::Status CheckOutputs() const {
    if (!csv_.empty()) {
      ZR_RETURN_IF_ERROR(
          internal::CheckOutputFile("--csv", ResolveUserPath(csv_)));
    }
    if (!plot_.empty()) {
      ZR_RETURN_IF_ERROR(
          internal::CheckOutputFile("--plot", ResolveUserPath(plot_)));
    }
    if (!trace_dir_.empty()) {
      ZR_RETURN_IF_ERROR(internal::PrepareOutputDir(
          "--trace-dir", ResolveUserPath(trace_dir_)));
    }
    return absl::OkStatus();
  }

  std::string hardware_, model_, config_, baseline_;
  int64_t gpus_ = 0, tp_ = 0, micro_batch_ = 0, seq_ = 0, accumulation_ = 0,
          steps_ = 0;
  int64_t save_interval_ = 0;
  int64_t eval_interval_ = 0;
  int64_t eval_iters_ = 0;
  int64_t host_cores_ = 0;
  double host_gbps_ = 0;
  std::vector<std::string> set_, vary_;
  std::string format_ = "table";
  std::string csv_, trace_dir_, plot_;
  std::string plot_metric_ = "total_ms";
  std::string plot_x_;
  bool explain_ = false;
  bool full_ = false;
  bool progress_ = false;
};

}  // namespace

std::unique_ptr<Command> NewWhatifCommand() {
  return std::make_unique<WhatifCommand>();
}

}  // namespace cli
}  // namespace zero3
