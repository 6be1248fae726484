// Copyright 2026 The zero3 Authors.

#include "sim/sim_launcher.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/util/check.h"
#include "core/util/status_macros.h"
#include "sim/trace.h"

namespace zero3 {
namespace sim {

absl::StatusOr<std::unique_ptr<SimLauncher>> SimLauncher::Create(
    SimOptions options, std::string trace_path) {
  ZR_CHECK(trace_path.empty() || options.trace);
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<SimWorld> world,
                      SimWorld::Create(std::move(options)));
  return std::unique_ptr<SimLauncher>(
      new SimLauncher(std::move(world), std::move(trace_path)));
}

SimLauncher::SimLauncher(std::unique_ptr<SimWorld> world,
                         std::string trace_path)
    : world_(std::move(world)), trace_path_(std::move(trace_path)) {}

int SimLauncher::world_size() const { return world_->options().world_size; }

int SimLauncher::local_ranks() const { return world_->simulated_ranks(); }

std::string SimLauncher::description() const {
  const SimOptions& o = world_->options();
  if (o.mode == SimMode::kData) {
    return absl::StrCat(o.profile.name(), " (data",
                        o.detect_races ? "" : ", race detector off", ")");
  }
  return absl::StrCat(o.profile.name(), " (timing, race detector ",
                      o.detect_races ? "on" : "off", ")");
}

absl::Status SimLauncher::Run(const runtime::RankFunction& fn) {
  return world_->Run(fn);
}

absl::StatusOr<int> SimLauncher::Report(std::ostream& out) {
  if (!trace_path_.empty()) {
    ZR_RETURN_IF_ERROR(world_->trace().WriteFile(trace_path_));
    out << "trace written to " << trace_path_ << "\n";
  }
  if (!world_->options().detect_races) {
    out << "race detector: off\n";
    return 0;
  }
  const std::vector<RaceReport> races = world_->races();
  out << "race detector: " << races.size()
      << (races.size() == 1 ? " race" : " races") << " found\n";
  for (const RaceReport& r : races) out << "  " << r.message << "\n";
  return static_cast<int>(races.size());
}

}  // namespace sim
}  // namespace zero3
