// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/simulator_flags.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/profiles.h"

namespace zero3 {
namespace cli {
namespace internal {

void SimulatorFlags::Define(FlagSet& flags) {
  flags.AddString("hardware", &hardware_, "NAME|FILE",
                  absl::StrCat("simulator hardware profile (",
                               absl::StrJoin(sim::ProfileNames(), ", "),
                               ") or a profile file"));
  flags.AddString("mode", &mode_text_, "data|timing",
                  "simulator mode: data computes real values; timing only "
                  "costs them (any model size)");
  flags.AddString("races", &races_, "on|off",
                  "simulator: run the race detector (default: on in data "
                  "mode, off in timing mode, where it costs most)");
  flags.AddBool("strict", &strict_,
                "race detection treats pageable copies as asynchronous");
  flags.AddDouble("jitter", &jitter_, "X",
                  "perturb every simulated cost by up to +-X (e.g. 0.1)");
  flags.AddBool("symmetric", &symmetric_,
                "timing mode: simulate rank 0 only (ranks are symmetric)");
  flags.SetDefaultText("symmetric", absl::StrCat("off up to ", kSymmetricAbove,
                                                 " ranks, on above"));
}

absl::Status SimulatorFlags::Check(int64_t ranks, bool symmetric_given) {
  if (mode_text_ == "data") {
    mode_ = sim::SimMode::kData;
  } else if (mode_text_ == "timing") {
    mode_ = sim::SimMode::kTiming;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--mode must be data or timing, got '", mode_text_, "'"));
  }
  if (!data_mode() && ranks > kSymmetricAbove && !symmetric_given) {
    symmetric_ = true;
    symmetric_by_default_ = true;
  }
  if (symmetric_ && data_mode()) {
    return absl::InvalidArgumentError("--symmetric needs --mode timing");
  }
  if (races_.empty()) {
    detect_races_ = data_mode();
  } else if (races_ == "on" || races_ == "off") {
    detect_races_ = races_ == "on";
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--races must be on or off, got '", races_, "'"));
  }
  return absl::OkStatus();
}

void SimulatorFlags::Apply(sim::SimOptions* options) const {
  options->mode = mode_;
  options->strict = strict_;
  options->jitter = jitter_;
  options->symmetric = symmetric_;
  options->detect_races = detect_races_;
}

}  // namespace internal
}  // namespace cli
}  // namespace zero3
