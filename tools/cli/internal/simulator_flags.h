// Copyright 2026 The zero3 Authors.
//
// simulator_flags.h: zero3 train's simulator flags (--hardware, --mode,
// --races, --strict, --jitter, --symmetric) and what they decide: the
// simulated world's options, with --mode and --races resolved once.
//
//   SimulatorFlags sim;
//   sim.Define(flags);                                     // in DefineFlags
//   ZR_RETURN_IF_ERROR(sim.Check(ranks, flags.given("symmetric")));
//   sim.Apply(&sim_options);
//
// Not thread-safe: the flag parser writes the members.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_SIMULATOR_FLAGS_H_
#define ZERO3_TOOLS_CLI_INTERNAL_SIMULATOR_FLAGS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "sim/simulator.h"
#include "tools/cli/flags.h"

namespace zero3 {
namespace cli {
namespace internal {

// Timing mode above this many ranks simulates rank 0 only unless
// --no-symmetric is given.
inline constexpr int64_t kSymmetricAbove = 8;

class SimulatorFlags {
 public:
  // Adds the flags, as one block.
  void Define(FlagSet& flags);

  // Resolves --mode and --races (InvalidArgument naming the flag and its
  // value) and --symmetric: on by default in timing mode above
  // kSymmetricAbove `ranks` unless `symmetric_given`; with --mode data an
  // error.
  absl::Status Check(int64_t ranks, bool symmetric_given);

  // --mode data (values computed), after Check.
  bool data_mode() const { return mode_ == sim::SimMode::kData; }
  // Whether Check turned --symmetric on by default (the run says so).
  bool symmetric_by_default() const { return symmetric_by_default_; }
  // The --hardware name or file.
  const std::string& hardware() const { return hardware_; }

  // The simulator's mode, race detection, strictness, jitter and symmetry,
  // after Check.
  void Apply(sim::SimOptions* options) const;

 private:
  std::string hardware_ = "h200_sxm";
  std::string mode_text_ = "data";
  std::string races_;
  bool strict_ = false;
  double jitter_ = 0;
  bool symmetric_ = false;
  sim::SimMode mode_ = sim::SimMode::kData;
  bool detect_races_ = true;
  bool symmetric_by_default_ = false;
};

}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_SIMULATOR_FLAGS_H_
