// Copyright 2026 The zero3 Authors.
//
// The backend conformance suite (testing/backend_conformance.h) on the
// simulator in data mode, twice: with the round-figure test profile, and
// with the shipped H200 profile in strict mode, where pageable copies do not
// synchronize the host, so the suite cannot pass by leaning on them. Either
// way a run fails if the race detector reports anything: the suite's
// programs are race-free, so a report is a simulator bug.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/runtime/runtime.h"
#include "core/util/status_macros.h"
#include "sim/profiles.h"
#include "sim/simulator.h"
#include "sim/testing/test_profile.h"
#include "testing/backend_conformance.h"

namespace zero3 {
namespace sim {
namespace {

absl::Status RunSimulated(SimOptions options, int ranks,
                          const runtime::RankFunction& fn) {
  options.world_size = ranks;
  options.mode = SimMode::kData;
  options.detect_races = true;
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<SimWorld> world,
                      SimWorld::Create(std::move(options)));
  ZR_RETURN_IF_ERROR(world->Run(fn));
  const std::vector<RaceReport> races = world->races();
  if (!races.empty()) {
    std::vector<std::string> messages;
    for (const RaceReport& race : races) messages.push_back(race.message);
    return absl::InternalError(absl::StrCat(races.size(), " race report(s):\n",
                                            absl::StrJoin(messages, "\n")));
  }
  return absl::OkStatus();
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
  test_profile.run = [](int ranks, const runtime::RankFunction& fn) {
    SimOptions options;
    options.profile = TestProfile();
    return RunSimulated(std::move(options), ranks, fn);
  };
  testing::RegisterConformanceTests(test_profile);

  testing::ConformanceBackend strict_h200;
  strict_h200.name = "SimStrictH200";
  strict_h200.max_ranks = 8;
  strict_h200.run = [](int ranks,
                       const runtime::RankFunction& fn) -> absl::Status {
    SimOptions options;
    ZR_ASSIGN_OR_RETURN(options.profile, LoadProfile("h200_sxm"));
    options.strict = true;
    return RunSimulated(std::move(options), ranks, fn);
  };
  testing::RegisterConformanceTests(strict_h200);
  return true;
}

[[maybe_unused]] const bool kRegistered = RegisterSimulatorConformanceTests();

}  // namespace
}  // namespace sim
}  // namespace zero3
