// Copyright 2026 The zero3 Authors.

#include "tools/cli/calibrate_command.h"

#include <cstdio>
#include <fstream>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/io/write_file.h"
#include "core/model/presets.h"
#include "core/runtime/launcher.h"
#include "core/util/status_macros.h"
#include "sim/profiles.h"
#include "sim/simulator.h"
#include "tools/calibrate/calibrate.h"
#include "tools/cli/internal/launcher_factory.h"
#include "tools/cli/internal/output_path.h"

namespace zero3 {
namespace cli {
namespace {

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
           "by thread count - and writes the profile (text format) with a "
           "comment on how each figure was taken. Peaks and capacities come "
           "from --base. With --backend sim it measures the simulator itself, "
           "which must give --base back.";
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
    ZR_ASSIGN_OR_RETURN(const calibrate::Options o, ParseOptions());
    if (backend_ != "cuda" && backend_ != "sim") {
      return absl::InvalidArgumentError(
          absl::StrCat("--backend must be cuda or sim, got '", backend_, "'"));
    }
    if (!out_path_.empty()) {
      ZR_RETURN_IF_ERROR(
          internal::CheckOutputFile("--out", ResolveUserPath(out_path_)));
    }
    ZR_ASSIGN_OR_RETURN(const calibrate::Result result, Measure(o, err));
    err << result.report;
    return WriteProfile(calibrate::ProfileText(result), out, err);
  }

  // The flags as calibrate::Options.
  absl::StatusOr<calibrate::Options> ParseOptions() const {
    calibrate::Options o;
    ZR_ASSIGN_OR_RETURN(o.base, sim::LoadProfile(base_));
    if (!name_.empty()) o.base.set_name(name_);
    for (absl::string_view m :
         absl::StrSplit(models_, ',', absl::SkipEmpty())) {
      ZR_ASSIGN_OR_RETURN(model::ModelSpec spec, model::LoadModelSpec(m));
      o.models.push_back(spec);
    }
    for (absl::string_view b :
         absl::StrSplit(batches_, ',', absl::SkipEmpty())) {
      std::vector<std::string> parts = absl::StrSplit(b, 'x');
      int64_t n = 0, s = 0;
      if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &n) ||
          !absl::SimpleAtoi(parts[1], &s) || n < 1 || s < 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--batches: '", b, "' is not SEQUENCESxTOKENS (e.g. 4x2048)"));
      }
      o.batches.push_back({n, s});
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
    lo.sim.profile = o.base;
    lo.sim.world_size = static_cast<int>(gpus_);
    lo.sim.mode = sim::SimMode::kTiming;
    lo.cuda.ranks_in_process = static_cast<int>(gpus_);
    lo.cuda.rank.log = &err;
    ZR_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Launcher> launcher,
                        internal::MakeLauncher(backend_, lo));
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
  std::string base_ = "h200_sxm";
  std::string name_;
  int64_t gpus_ = 1;
  std::string models_ = "qwen2.5-0.5b,qwen2.5-1.5b,qwen2.5-3b";
  std::string batches_ = "2x2048,4x2048";
  int64_t reps_ = 5;
  int64_t max_mib_ = 512;
  std::string out_path_;
};

}  // namespace

std::unique_ptr<Command> NewCalibrateCommand() {
  return std::make_unique<CalibrateCommand>();
}

}  // namespace cli
}  // namespace zero3
