// Copyright 2026 The zero3 Authors.
//
// Profiles against GPU measurements: every configuration of each set in
// tools/whatif/fidelity/ (the shipped H200 profile on two GPUs; a profile
// calibrated on a one-GPU machine), replayed on the simulator, must stay
// within the error the set states (docs/fidelity.md).

#include "tools/whatif/fidelity.h"

#include <cmath>
#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace whatif {
namespace {

std::string Base() {
  return std::string(std::getenv("TEST_SRCDIR")) + "/zero3";
}

// Every phase of every case within the set's bound (or the case's own),
// and the mean within the set's.
void ExpectWithinStatedError(const std::string& file, int min_cases) {
  ASSERT_OK_AND_ASSIGN(
      FidelitySet set,
      LoadFidelitySet(Base() + "/tools/whatif/fidelity/" + file));
  ASSERT_GE(set.cases_size(), min_cases);
  ASSERT_OK_AND_ASSIGN(FidelityReport report, ReplayFidelity(set, "", Base()));
  ASSERT_EQ(report.rows.size(), static_cast<size_t>(set.cases_size()));
  const char* phases[] = {"FWD", "BWD", "STEP"};
  for (int c = 0; c < set.cases_size(); ++c) {
    const FidelityCase& fc = set.cases(c);
    const double bound = fc.has_max_error() ? fc.max_error() : set.max_error();
    const FidelityRow& row = report.rows[c];
    for (int i = 0; i < 3; ++i) {
      if (std::isnan(row.error[i])) continue;
      EXPECT_LE(std::abs(row.error[i]), bound)
          << file << ": " << fc.name() << " " << phases[i] << ": measured "
          << row.measured[i] << " ms, predicted " << row.predicted[i] << " ms";
    }
  }
  EXPECT_LE(report.mean_abs_error, set.max_mean_error()) << file;
}

TEST(FidelityTest, ShippedProfileStaysWithinTheStatedError) {
  ExpectWithinStatedError("h200_2x.textproto", 12);
}

// The calibrate-then-predict workflow on a one-GPU machine: the profile
// calibrate wrote there, against configurations it did not fit on.
TEST(FidelityTest, CalibratedProfileStaysWithinTheStatedError) {
  ExpectWithinStatedError("h200_1x_calibrated.textproto", 9);
}

// Replay is a real check: a profile with a slower host link or GPU moves
// the predictions out of bounds.
// DeepSpeed's BWD, from zero3's engine in DeepSpeed's gradient path with
// DeepSpeed's host work per parameter; FWD and STEP are not judged.
TEST(FidelityTest, DeepSpeedsBackwardStaysWithinTheStatedError) {
  ExpectWithinStatedError("deepspeed_1x.textproto", 6);
}

TEST(FidelityTest, AWrongProfileFails) {
  ASSERT_OK_AND_ASSIGN(
      FidelitySet set,
      LoadFidelitySet(Base() + "/tools/whatif/fidelity/h200_2x.textproto"));
  ASSERT_OK_AND_ASSIGN(FidelityReport report,
                       ReplayFidelity(set, "a100_sxm", Base()));
  EXPECT_GT(report.max_abs_error, set.max_error());
  EXPECT_GT(report.mean_abs_error, set.max_mean_error());
}

TEST(FidelityTest, BadFileIsNamed) {
  EXPECT_THAT(LoadFidelitySet("/nonexistent/set.textproto"),
              testing::StatusIs(absl::StatusCode::kNotFound,
                                ::testing::HasSubstr("/nonexistent/set")));
}

}  // namespace
}  // namespace whatif
}  // namespace zero3
