// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/metrics/step_metrics.h"

#include <cmath>

#include "gtest/gtest.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace metrics {
namespace {

TEST(StepMetricsTest, FloatAsDecimal) {
  EXPECT_EQ(FloatAsDecimal(static_cast<double>(1e-3f)), 1e-3);
  EXPECT_EQ(FloatAsDecimal(static_cast<double>(3e-4f)), 3e-4);
  EXPECT_EQ(FloatAsDecimal(static_cast<double>(2.5e-5f)), 2.5e-5);
  EXPECT_EQ(FloatAsDecimal(0.5), 0.5);
  EXPECT_EQ(FloatAsDecimal(0), 0);
  // A double that is not a float stays as it is.
  EXPECT_EQ(FloatAsDecimal(0.1), 0.1);
  EXPECT_EQ(FloatAsDecimal(1.0 / 3), 1.0 / 3);
  EXPECT_TRUE(std::isnan(FloatAsDecimal(std::nan(""))));
}

}  // namespace
}  // namespace metrics
}  // namespace internal
}  // namespace cli
}  // namespace zero3
