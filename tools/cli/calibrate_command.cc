// Copyright 2026 The zero3 Authors.

#include "tools/cli/calibrate_command.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/io/write_file.h"
#include "core/model/presets.h"
#include "core/runtime/launcher.h"
#include "core/util/status_macros.h"
#include "sim/host_share.h"
#include "sim/profiles.h"
#include "sim/simulator.h"
#include "tools/calibrate/calibrate.h"
#include "tools/calibrate/in_step_fit.h"
#include "tools/cli/calibrate_steps.h"
#include "tools/cli/internal/backend.h"
#include "tools/cli/internal/launcher_factory.h"
#include "tools/cli/internal/output_path.h"

namespace zero3 {
namespace cli {
namespace {

// "2x2048,4x2048" as (sequences, tokens) pairs; errors name --`flag`.
absl::StatusOr<std::vector<std::pair<int64_t, int64_t>>> ParseBatches(
    absl::string_view flag, absl::string_view text) {
  std::vector<std::pair<int64_t, int64_t>> batches;
  for (absl::string_view b : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::vector<std::string> parts = absl::StrSplit(b, 'x');
    int64_t n = 0, s = 0;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &n) ||
        !absl::SimpleAtoi(parts[1], &s) || n < 1 || s < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", flag, ": '", b, "' is not SEQUENCESxTOKENS (e.g. 4x2048)"));
    }
    batches.push_back({n, s});
  }
  return batches;
}

class CalibrateCommand : public Command {
 public:
  absl::string_view name() const override { return "calibrate"; }
  absl::string_view summary() const override {
    return "measure this machine's GPUs, links and host into a hardware "
           "profile for the simulator";
  }
  absl::string_view description() const override {
    return "Measures, through the CUDA backend, what a simulator hardware "
           "profile needs - GEMM times at the model presets' shapes, attention "
           "forward and backward, memory bandwidth and the shortest kernel, "
           "launch and copy-call costs, pinned and pageable copies in both "
           "directions and how long they block the host, collective bus "
           "bandwidth by size (with --gpus 2 or more), host AdamW throughput "
           "by thread count - then runs a few training steps with every "
           "operation timed and fits the in-step figures (how much slower "
           "GEMMs, attention, elementwise kernels and the device AdamW run "
           "inside a step than alone, the host AdamW's rate inside a step), "
           "keeping each only where it improves the prediction of held-out "
           "steps. It writes the profile (text format) with a comment on how "
           "each figure was taken. Peaks and capacities come from --base. "
           "With --backend sim it measures the simulator itself (kernels "
           "alone without --base's in-step figures, training steps with "
           "them), which gives --base's device, link and fabric figures "
           "back; the host's are at this machine's thread count "
           "(host.cores_per_rank and the rank's AdamW bandwidth as the "
           "simulator gives them that many threads), as a run here would "
           "use them.";
  }
  void DefineFlags(FlagSet& flags) override {
    flags.AddString("backend", &backend_, "cuda|sim", "what to measure");
    flags.AddString(
        "base", &base_, "NAME|FILE",
        "profile supplying peaks, capacities and unmeasured figures");
    flags.AddString("name", &name_, "NAME", "name of the written profile");
    flags.AddInt("gpus", &gpus_, "N",
                 "GPUs (ranks) for the collectives, in this process",
                 {1, 1024});
    flags.AddString("models", &models_, "A,B,...",
                    "presets whose shapes to measure");
    flags.AddString("batches", &batches_, "BxS,...",
                    "micro-batches (sequences x tokens)");
    flags.AddInt("reps", &reps_, "N", "repetitions per timing (median kept)",
                 {1, 10000});
    flags.AddInt("max-mib", &max_mib_, "N", "largest copy and collective, MiB",
                 {1, 1 << 20});
    flags.AddString("out", &out_path_, "FILE",
                    "write the profile here (else stdout)");
    flags.AddString("nvme-path", &nvme_path_, "DIR",
                    "also measure the drive behind DIR with the NVMe "
                    "swapper's file and pattern (host.nvme_read/"
                    "write_gbps_per_node)");
    flags.AddInt("nvme-mib", &nvme_mib_, "N",
                 "MiB each rank writes and reads on --nvme-path",
                 {128, 1 << 24});
    flags.AddBool("no-fit", &no_fit_,
                  "skip the training steps: no in-step figures");
    flags.AddString("fit-model", &fit_model_, "NAME|FILE,...",
                    "models of the in-step fit's training steps (each at "
                    "every fit and judge micro-batch; the figures are "
                    "fitted over all of them)");
    flags.AddString("fit-batches", &fit_batches_, "BxS,...",
                    "micro-batches the in-step figures are fitted on (each "
                    "without and with the optimizer offloaded, pinned)");
    flags.AddString("judge-batches", &judge_batches_, "BxS,...",
                    "held-out micro-batches that judge the fitted figures "
                    "(empty: keep them all)");
    flags.AddBool("fit-pageable", &fit_pageable_,
                  "also fit the pageable copies' in-step rates, from cases "
                  "offloading to pageable memory");
    flags.AddInt(
        "fit-steps", &fit_steps_, "N",
        "training steps per case (the first not timed; on GPUs one more "
        "runs with every operation timed)",
        {2, 1000});
  }
  int Run(const std::vector<std::string>& positional, std::ostream& out,
          std::ostream& err) override {
    absl::Status s = Execute(out, err);
    if (!s.ok()) {
      err << "error: " << s.message() << "\n";
      return s.code() == absl::StatusCode::kInvalidArgument ? kExitUsage
                                                            : kExitFailure;
    }
    return kExitOk;
  }

 private:
  absl::Status Execute(std::ostream& out, std::ostream& err) {
    const absl::Time start = absl::Now();
    ZR_ASSIGN_OR_RETURN(calibrate::Options o, ParseOptions());
    ZR_ASSIGN_OR_RETURN(backend_kind_, internal::BackendNamed(backend_));
    if (!out_path_.empty()) {
      ZR_RETURN_IF_ERROR(
          internal::CheckOutputFile("--out", ResolveUserPath(out_path_)));
    }
    std::vector<calibrate::StepCase> cases;
    if (!no_fit_) {
      ZR_ASSIGN_OR_RETURN(cases, FitCases());
      ZR_RETURN_IF_ERROR(PreflightCases(
          cases, o.base, backend_kind_ == internal::Backend::kCuda));
      AddFitShapes(cases, &o);
    }
    auto progress = [&err, start](const std::string& what) {
      err << absl::StrFormat("calibrate [%6.1f s]: %s",
                             absl::ToDoubleSeconds(absl::Now() - start), what)
          << std::endl;
    };
    o.progress = progress;
    ZR_ASSIGN_OR_RETURN(calibrate::Result result, Measure(o, err));
    // A failed fit still writes what was measured alone, then fails.
    absl::Status fitted = absl::OkStatus();
    if (!no_fit_) fitted = FitInStep(o.base, cases, progress, err, &result);
    err << result.report;
    ZR_RETURN_IF_ERROR(WriteProfile(calibrate::ProfileText(result), out, err));
    err << absl::StrFormat("calibration took %.1f s\n",
                           absl::ToDoubleSeconds(absl::Now() - start));
    if (fitted.ok()) return absl::OkStatus();
    return absl::Status(
        fitted.code(),
        absl::StrCat("the in-step fit failed (the profile was written "
                     "without in-step figures): ",
                     fitted.message()));
  }

  // The in-step fit's cases: each --fit-model at --fit-batches (fitted)
  // and --judge-batches (held out), on --gpus GPUs.
  absl::StatusOr<std::vector<calibrate::StepCase>> FitCases() const {
    std::vector<model::ModelSpec> specs;
    for (absl::string_view name : absl::StrSplit(fit_model_, ',')) {
      if (name.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--fit-model: '", fit_model_,
            "' has an empty name; give models separated by commas, e.g. "
            "qwen2.5-1.5b,qwen2.5-0.5b"));
      }
      ZR_ASSIGN_OR_RETURN(model::ModelSpec spec,
                          model::LoadModelSpec(std::string(name)));
      specs.push_back(std::move(spec));
    }
    ZR_ASSIGN_OR_RETURN(const auto fit,
                        ParseBatches("fit-batches", fit_batches_));
    ZR_ASSIGN_OR_RETURN(const auto judge,
                        ParseBatches("judge-batches", judge_batches_));
    if (fit.empty()) {
      return absl::InvalidArgumentError(
          "--fit-batches is empty: name at least one micro-batch (e.g. "
          "2x2048), or skip the fit with --no-fit");
    }
    std::vector<calibrate::StepCase> cases;
    for (const model::ModelSpec& spec : specs) {
      std::vector<calibrate::StepCase> more = calibrate::DefaultCases(
          spec, fit, judge, static_cast<int>(gpus_), fit_pageable_);
      for (calibrate::StepCase& c : more) cases.push_back(std::move(c));
    }
    return cases;
  }

  // The isolated measurements cover the fit cases' GEMMs and attention.
  static void AddFitShapes(const std::vector<calibrate::StepCase>& cases,
                           calibrate::Options* o) {
    for (const calibrate::StepCase& c : cases) {
      const std::pair<int64_t, int64_t> b = {c.options.micro_batch,
                                             c.options.seq};
      if (std::find(o->batches.begin(), o->batches.end(), b) ==
          o->batches.end()) {
        o->batches.push_back(b);
      }
      if (std::none_of(o->models.begin(), o->models.end(),
                       [&](const model::ModelSpec& m) {
                         return m.name() == c.spec.name();
                       })) {
        o->models.push_back(c.spec);
      }
    }
  }

  // Fits the in-step figures of `result`'s isolated profile from training
  // steps on --backend: the GPUs, or the simulator with all of `base`.
  absl::Status FitInStep(
      const sim::HardwareProfile& base,
      const std::vector<calibrate::StepCase>& cases,
      const std::function<void(const std::string&)>& progress,
      std::ostream& err, calibrate::Result* result) const {
    sim::HardwareProfile isolated = result->profile;
    ZR_RETURN_IF_ERROR(sim::SetHostOfThisProcess(0, &isolated));
    calibrate::StepRunner run;
    if (backend_kind_ == internal::Backend::kSim) {
      sim::HardwareProfile machine = base;
      ZR_RETURN_IF_ERROR(sim::SetHostOfThisProcess(0, &machine));
      run = calibrate::SimulatedStepRunner(machine);
    } else {
      run = GpuStepRunner(isolated, &err);
    }
    calibrate::FitOptions fo;
    fo.steps = static_cast<int>(fit_steps_);
    fo.progress = progress;
    ZR_ASSIGN_OR_RETURN(calibrate::FitResult fit,
                        calibrate::FitInStep(isolated, cases, run, fo));
    result->profile = std::move(fit.profile);
    result->fit_notes = std::move(fit.notes);
    result->fit_notes.push_back(absl::StrFormat(
        "host.cores_per_rank %d, cores_per_node %d: this process's, which the "
        "fit's predictions used",
        isolated.host().cores_per_rank(), isolated.host().cores_per_node()));
    absl::StrAppend(&result->report, fit.report);
    return absl::OkStatus();
  }

  // The flags as calibrate::Options.
  absl::StatusOr<calibrate::Options> ParseOptions() const {
    calibrate::Options o;
    ZR_ASSIGN_OR_RETURN(o.base, sim::LoadProfile(base_));
    // Unnamed, the profile says it was calibrated, so that --predict and
    // whatif do not print the base's name for it.
    o.base.set_name(name_.empty() ? absl::StrCat(o.base.name(), "_calibrated")
                                  : name_);
    for (absl::string_view m :
         absl::StrSplit(models_, ',', absl::SkipEmpty())) {
      ZR_ASSIGN_OR_RETURN(model::ModelSpec spec, model::LoadModelSpec(m));
      o.models.push_back(spec);
    }
    ZR_ASSIGN_OR_RETURN(o.batches, ParseBatches("batches", batches_));
    if (!nvme_path_.empty()) {
      o.nvme_path = ResolveUserPath(nvme_path_);
      o.nvme_bytes = nvme_mib_ << 20;
    }
    if (reps_ < 1 || max_mib_ < 1 || gpus_ < 1) {
      return absl::InvalidArgumentError(
          "--reps, --max-mib and --gpus must be positive");
    }
    o.reps = static_cast<int>(reps_);
    o.max_bytes = max_mib_ << 20;
    return o;
  }

  // Calibrates on --gpus ranks of --backend; rank 0's result.
  absl::StatusOr<calibrate::Result> Measure(const calibrate::Options& o,
                                            std::ostream& err) const {
    internal::LauncherOptions lo;
    // The simulator's kernels alone: without the in-step figures.
    lo.sim.profile = o.base;
    calibrate::ClearInStepAdjustments(&lo.sim.profile);
    lo.sim.world_size = static_cast<int>(gpus_);
    lo.sim.mode = sim::SimMode::kTiming;
    lo.cuda.ranks_in_process = static_cast<int>(gpus_);
    lo.cuda.rank.log = &err;
    ZR_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Launcher> launcher,
                        internal::MakeLauncher(backend_kind_, lo));
    calibrate::Result result;
    ZR_RETURN_IF_ERROR(launcher->Run([&](runtime::Runtime& rt) -> absl::Status {
      ZR_ASSIGN_OR_RETURN(calibrate::Result r, calibrate::Calibrate(rt, o));
      if (rt.rank() == 0) result = std::move(r);
      return absl::OkStatus();
    }));
    return result;
  }

  // The profile to --out (through a temporary file) or stdout.
  absl::Status WriteProfile(const std::string& text, std::ostream& out,
                            std::ostream& err) const {
    if (out_path_.empty()) {
      out << text;
      return absl::OkStatus();
    }
    const std::string path = ResolveUserPath(out_path_);
    ZR_RETURN_IF_ERROR(io::WriteWholeFile(path, text));
    err << "profile written to " << path << "\n";
    return absl::OkStatus();
  }

  std::string backend_ = "cuda";
  internal::Backend backend_kind_ = internal::Backend::kCuda;  // resolved
  std::string base_ = "h200_sxm";
  std::string name_;
  int64_t gpus_ = 1;
  std::string models_ = "qwen2.5-0.5b,qwen2.5-1.5b,qwen2.5-3b";
  std::string batches_ = "2x2048,4x2048,8x2048";
  int64_t reps_ = 5;
  int64_t max_mib_ = 512;
  std::string nvme_path_;
  int64_t nvme_mib_ = 1024;
  std::string out_path_;
  bool no_fit_ = false;
  std::string fit_model_ = "qwen2.5-1.5b";
  std::string fit_batches_ = "2x2048";
  std::string judge_batches_ = "4x2048";
  int64_t fit_steps_ = 3;
  bool fit_pageable_ = false;
};

}  // namespace

std::unique_ptr<Command> NewCalibrateCommand() {
  return std::make_unique<CalibrateCommand>();
}

}  // namespace cli
}  // namespace zero3
