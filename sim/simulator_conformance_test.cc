// Copyright 2026 The zero3 Authors.
//
// The backend conformance suite (testing/backend_conformance.h) on the
// simulator in data mode, twice: with the round-figure test profile, and
// with the shipped H200 profile in strict mode, where pageable copies do not
// synchronize the host, so the suite cannot pass by leaning on them. Either
// way a case fails if the race detector reports anything (the launcher's
// Report counts races): the suite's programs are race-free, so a report is
// a simulator bug.

#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "core/runtime/launcher.h"
#include "core/util/status_macros.h"
#include "sim/profiles.h"
#include "sim/sim_launcher.h"
#include "sim/simulator.h"
#include "sim/testing/test_profile.h"
#include "testing/backend_conformance.h"

namespace zero3 {
namespace sim {
namespace {

// A launcher of `ranks` simulated ranks in data mode, race detection on.
absl::StatusOr<std::unique_ptr<runtime::Launcher>> Simulated(SimOptions options,
                                                             int ranks) {
  options.world_size = ranks;
  options.mode = SimMode::kData;
  options.detect_races = true;
  return SimLauncher::Create(std::move(options));
}

// Registered from a static initializer, the way TEST() registers its tests:
// zr_cc_test links gtest_main, whose main() runs every test registered by
// then, so this file needs no main() of its own (and keeps gtest's flag
// handling). RegisterConformanceTests reads no other file's statics, so the
// order of static initialization does not matter; profiles are loaded when
// a test runs, not here.
bool RegisterSimulatorConformanceTests() {
  testing::ConformanceBackend test_profile;
  test_profile.name = "Sim";
  test_profile.max_ranks = 8;
  test_profile.launcher = [](int ranks) {
    SimOptions options;
    options.profile = TestProfile();
    return Simulated(std::move(options), ranks);
  };
  testing::RegisterConformanceTests(test_profile);

  testing::ConformanceBackend strict_h200;
  strict_h200.name = "SimStrictH200";
  strict_h200.max_ranks = 8;
  strict_h200.launcher =
      [](int ranks) -> absl::StatusOr<std::unique_ptr<runtime::Launcher>> {
    SimOptions options;
    ZR_ASSIGN_OR_RETURN(options.profile, LoadProfile("h200_sxm"));
    options.strict = true;
    return Simulated(std::move(options), ranks);
  };
  testing::RegisterConformanceTests(strict_h200);
  return true;
}

[[maybe_unused]] const bool kRegistered = RegisterSimulatorConformanceTests();

}  // namespace
}  // namespace sim
}  // namespace zero3
