// Copyright 2026 The zero3 Authors.
//
// Every synchronization the engine relies on, removed one at a time: the
// race detector must report the race it prevents, naming the buffer and the
// operations involved. With all of them in place it reports nothing (see
// equivalence_test for the full configuration matrix).

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "core/model/presets.h"
#include "core/util/check.h"
#include "core/zero/sync_points.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/testing/test_profile.h"
#include "testing/equivalence.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace testing {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;

struct Case {
  zero::Sync sync;
  // Substrings one report must contain.
  std::vector<std::string> expected;
};

std::vector<std::string> RacesWithout(
    const Case& c, const std::function<void(zero::ZeroOptions&)>& adjust = {}) {
  auto spec = model::LoadModelSpec("tiny").value();
  zero::ZeroOptions o;
  o.micro_batch = 2;
  o.seq = 8;
  o.seed = 3;
  o.offload_optimizer = true;
  o.param_persistence_threshold = 0;  // every parameter gathered and released
  o.accumulation = 2;
  o.syncs.Drop(c.sync);
  if (adjust) adjust(o);
  auto data = model::SyntheticBatches(spec.vocab_size(), 1);
  sim::SimOptions sim;
  sim.profile = sim::TestProfile();
  sim.profile.mutable_gpu()->set_memory_gib(64);
  auto result = RunZero(spec, o, 2, 2, *data, sim);
  ZR_CHECK_OK(result.status());
  return result->races;
}

class DropSyncTest : public ::testing::TestWithParam<Case> {};

TEST_P(DropSyncTest, DetectorReportsTheRace) {
  const Case& c = GetParam();
  const std::vector<std::string> races = RacesWithout(c);
  ASSERT_FALSE(races.empty())
      << "dropping " << zero::SyncName(c.sync) << " went unnoticed";
  std::vector<::testing::Matcher<const std::string&>> all;
  for (const std::string& s : c.expected) all.push_back(HasSubstr(s));
  EXPECT_THAT(races, Contains(::testing::AllOfArray(all)))
      << absl::StrJoin(races, "\n");
}

INSTANTIATE_TEST_SUITE_P(
    All, DropSyncTest,
    ::testing::Values(
        Case{zero::Sync::kGradOffloadBeforeStep,
             {"race on 'host gradients", "grad D2H", "adamw"}},
        Case{zero::Sync::kGatherBeforeCompute,
             {"race on 'gathered parameter'", "all-gather param"}},
        Case{zero::Sync::kParamBufferReuse,
             {"race on 'gathered parameter'", "all-gather param"}},
        Case{zero::Sync::kGradsReadyBeforeReduce,
             {"race on 'gradient slot'", "bucket param"}},
        Case{zero::Sync::kGradSlotReuse,
             {"race on 'gradient slot'", "bucket param"}},
        Case{zero::Sync::kParamsUpdatedBeforeGather,
             {"race on 'parameter shard'", "all-gather param"}},
        Case{zero::Sync::kLossRead, {"race on 'loss (host)'", "read loss"}}),
    [](const ::testing::TestParamInfo<Case>& info) {
      std::string name(zero::SyncName(info.param.sync));
      for (char& ch : name) {
        if (ch == '-') ch = '_';
      }
      return name;
    });

// Without accumulation, bf16 gradients go to the host straight from the
// reduced bucket; the same synchronization guards them.
TEST(DropSyncTest, DirectLowPrecisionOffloadNeedsTheSameSync) {
  const std::vector<std::string> races = RacesWithout(
      Case{zero::Sync::kGradOffloadBeforeStep, {}}, [](zero::ZeroOptions& o) {
        o.dtype = runtime::DType::kBF16;
        o.accumulation = 1;
      });
  EXPECT_THAT(races,
              Contains(AllOf(HasSubstr("race on 'host gradients (bf16)'"),
                             HasSubstr("grad D2H"), HasSubstr("adamw"))))
      << absl::StrJoin(races, "\n");
}

TEST(DropSyncTest, EverySyncIsCovered) {
  // A new entry in sync_points.h needs a case above.
  EXPECT_EQ(zero::AllSyncs().size(), 7u);
}

}  // namespace
}  // namespace testing
}  // namespace zero3
