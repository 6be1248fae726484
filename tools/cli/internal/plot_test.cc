// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/plot.h"

#include <cmath>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// A sweep of `key` over `values`, total_ms = 10 * the value's position + 1.
whatif::ScenarioResult Sweep(const std::string& key,
                             const std::vector<std::string>& values) {
  whatif::ScenarioResult r;
  r.name = "sweep";
  for (size_t i = 0; i < values.size(); ++i) {
    whatif::VariantResult v;
    v.settings = {{key, values[i]}};
    v.metrics.total_ms = 10.0 * i + 1;
    r.variants.push_back(v);
  }
  return r;
}

TEST(PlotTest, LabelsCarryUnits) {
  EXPECT_EQ(MetricLabel("total_ms"), "total (ms)");
  EXPECT_EQ(MetricLabel("exposed_comm_ms"), "exposed comm (ms)");
  EXPECT_EQ(MetricLabel("device_memory_gib"), "device memory (GiB)");
  EXPECT_EQ(MetricLabel("tokens_per_s"), "tokens/s");
  EXPECT_EQ(KeyLabel("gpus"), "GPUs");
  EXPECT_EQ(KeyLabel("seq"), "sequence length (tokens)");
  EXPECT_EQ(KeyLabel("hardware.host_link.pinned_d2h_gbps"),
            "hardware.host_link.pinned_d2h_gbps (GB/s)");
  EXPECT_EQ(KeyLabel("zero3.grad_offload"), "zero3.grad_offload");
}

TEST(PlotTest, GpuCountsGoOnALog2Axis) {
  ASSERT_OK_AND_ASSIGN(
      PlotData d,
      CollectPlotData(Sweep("gpus", {"8", "64", "512"}), "total_ms", "gpus"));
  EXPECT_TRUE(d.log2_x);
  EXPECT_THAT(d.x, ElementsAre(8, 64, 512));
  ASSERT_EQ(d.y.size(), 1u);
  EXPECT_THAT(d.y[0], ElementsAre(1, 11, 21));
  const std::string script =
      PlotScript(d, "sweep", "total_ms", "gpus", "d.dat", "out.png", true);
  EXPECT_THAT(script, HasSubstr("set terminal pngcairo"));
  EXPECT_THAT(script, HasSubstr("background rgb 'white'"));
  EXPECT_THAT(script, HasSubstr("set logscale x 2"));
  EXPECT_THAT(script, HasSubstr("set xlabel 'GPUs'"));
  EXPECT_THAT(script, HasSubstr("set ylabel 'total (ms)'"));
}

TEST(PlotTest, OtherKeysInOrderOfAppearance) {
  ASSERT_OK_AND_ASSIGN(
      PlotData d,
      CollectPlotData(Sweep("zero3.grad_offload", {"blocking", "async"}),
                      "total_ms", "zero3.grad_offload"));
  EXPECT_FALSE(d.log2_x);
  EXPECT_THAT(d.x, ElementsAre(0, 1));
  const std::string script = PlotScript(
      d, "sweep", "total_ms", "zero3.grad_offload", "d.dat", "o.svg", false);
  EXPECT_THAT(script, HasSubstr("set terminal svg"));
  EXPECT_THAT(script, Not(HasSubstr("logscale")));
}

}  // namespace
}  // namespace internal
}  // namespace cli
}  // namespace zero3
