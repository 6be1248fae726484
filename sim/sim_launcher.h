// Copyright 2026 The zero3 Authors.
//
// sim_launcher.h: runtime::Launcher on the simulator.
//
// Every simulated rank runs in this process (rank 0 alone with the
// symmetric shortcut), so this process leads the job and sees every rank's
// results. Report writes the Chrome trace, where one was asked for, and the
// race detector's reports (or that it was off); each race counts as a
// problem. The description names the mode and, in timing mode or where it
// is off, the race detector. Operations are
// not timed one by one (Unimplemented): the trace has them.

#ifndef ZERO3_SIM_SIM_LAUNCHER_H_
#define ZERO3_SIM_SIM_LAUNCHER_H_

#include <memory>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/runtime/launcher.h"
#include "core/runtime/runtime.h"
#include "sim/simulator.h"

namespace zero3 {
namespace sim {

class SimLauncher : public runtime::Launcher {
 public:
  // A launcher over a new SimWorld of `options`. Report writes the trace to
  // `trace_path` where it is not empty (then options.trace must be set).
  static absl::StatusOr<std::unique_ptr<SimLauncher>> Create(
      SimOptions options, std::string trace_path = "");

  int world_size() const override;
  int first_local_rank() const override { return 0; }
  int local_ranks() const override;
  std::string description() const override;
  absl::Status Run(const runtime::RankFunction& fn) override;
  absl::StatusOr<int> Report(std::ostream& out) override;

  // The simulated world, for what only the simulator has.
  SimWorld& world() { return *world_; }

 private:
  SimLauncher(std::unique_ptr<SimWorld> world, std::string trace_path);

  std::unique_ptr<SimWorld> world_;
  std::string trace_path_;
};

}  // namespace sim
}  // namespace zero3

#endif  // ZERO3_SIM_SIM_LAUNCHER_H_
