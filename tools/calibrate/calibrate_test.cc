// Copyright 2026 The zero3 Authors.
//
// Calibrating the simulator must give back the profile it simulates: the
// procedure measures what it claims to.

#include "tools/calibrate/calibrate.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/kernels/op_args.h"
#include "core/model/presets.h"
#include "core/util/check.h"
#include "core/zero/host_adam.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/cost_model.h"
#include "sim/profiles.h"
#include "sim/simulator.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace calibrate {
namespace {

// Calibrates a simulation of `truth` on two GPUs, from `base` (truth
// itself by default).
Result CalibrateOn(const sim::HardwareProfile& truth,
                   const sim::HardwareProfile* base = nullptr,
                   const std::string& nvme_path = "") {
  sim::SimOptions so;
  so.profile = truth;
  so.world_size = 2;
  so.mode = sim::SimMode::kTiming;
  auto world = sim::SimWorld::Create(so).value();
  Options o;
  o.base = base != nullptr ? *base : truth;
  o.models = {model::LoadModelSpec("qwen2.5-0.5b").value()};
  o.batches = {{2, 2048}};  // attention large enough to be compute-bound
  o.reps = 3;
  o.max_bytes = int64_t{64} << 20;
  o.adam_elements = 1 << 20;
  o.nvme_path = nvme_path;
  o.nvme_bytes = int64_t{256} << 20;
  Result result;
  EXPECT_THAT(world->Run([&](runtime::Runtime& rt) -> absl::Status {
    auto r = Calibrate(rt, o);
    if (!r.ok()) return r.status();
    if (rt.rank() == 0) result = *r;
    return absl::OkStatus();
  }),
              ::zero3::testing::IsOk());
  return result;
}

TEST(CalibrateTest, CalibratingTheSimulatorReturnsItsProfile) {
  // The shipped profile without its in-step adjustments (calibrate
  // measures operations alone and drops them).
  sim::HardwareProfile truth = sim::LoadProfile("h200_sxm").value();
  ClearInStepAdjustments(&truth);
  const Result result = CalibrateOn(truth);
  const sim::HardwareProfile& got = result.profile;
  EXPECT_FALSE(got.gpu().has_gemm_in_step_factor());
  EXPECT_EQ(got.host_link().pageable_d2h_curve_size(), 0);
  EXPECT_FALSE(got.host_link().has_pageable_shared_efficiency());
  EXPECT_FALSE(got.gpu().has_optimizer_in_step_factor());
  EXPECT_FALSE(got.gpu().has_single_gpu_in_step_scale());
  auto near = [](double a, double b, double rel) {
    return std::abs(a - b) <= rel * std::abs(b);
  };
  // Copies: 64 MiB, so the fixed latency is < 1% of the time.
  EXPECT_TRUE(near(got.host_link().pinned_h2d_gbps(),
                   truth.host_link().pinned_h2d_gbps(), 0.01));
  EXPECT_TRUE(near(got.host_link().pinned_d2h_gbps(),
                   truth.host_link().pinned_d2h_gbps(), 0.01));
  EXPECT_TRUE(near(got.host_link().pageable_h2d_gbps(),
                   truth.host_link().pageable_h2d_gbps(), 0.01));
  EXPECT_TRUE(near(got.host_link().pageable_d2h_gbps(),
                   truth.host_link().pageable_d2h_gbps(), 0.01));
  EXPECT_EQ(got.host_link().pageable_h2d_async_max_bytes(),
            truth.host_link().pageable_h2d_async_max_bytes());
  EXPECT_TRUE(near(got.host_link().staging_gbps(),
                   truth.host_link().staging_gbps(), 0.05));
  EXPECT_TRUE(near(got.host_link().bidirectional_efficiency(),
                   truth.host_link().bidirectional_efficiency(), 0.01));
  EXPECT_TRUE(near(got.host().launch_us(), truth.host().launch_us(), 0.01));
  ASSERT_GT(truth.host().stream_queue_depth(), 0);
  EXPECT_EQ(got.host().stream_queue_depth(), truth.host().stream_queue_depth());
  // The simulator counts commands of every kind alike.
  const std::string depth = absl::StrCat(truth.host().stream_queue_depth());
  EXPECT_THAT(
      result.report,
      ::testing::HasSubstr(absl::StrCat(
          "launch queue by command (12 long GEMMs first): tiny "
          "kernels ",
          depth, ", 3-operand kernels ", depth, ", 32^3 GEMMs ", depth,
          ", 64-token attention backwards ", depth, ", event records ", depth,
          ", timed event records ", depth, ", 1 KiB device copies ", depth,
          ", waits for another stream's event ", depth)));
  EXPECT_EQ(got.host().queue_units_per_copy(), 1.0);
  EXPECT_FALSE(got.host().queue_by_device_launches());
  EXPECT_TRUE(near(got.host().pin_gbps(), truth.host().pin_gbps(), 0.05));
  EXPECT_TRUE(
      near(got.gpu().hbm_efficiency(), truth.gpu().hbm_efficiency(), 0.01));
  // Every measured GEMM costs, in the calibrated profile, what it cost in
  // the simulation that measured it.
  sim::CostModel model = sim::CostModel::Create(truth).value();
  ASSERT_FALSE(got.gpu().gemm_table().empty());
  for (const sim::GemmPoint& g : got.gpu().gemm_table()) {
    sim::KernelWork w;
    w.compute_class = sim::ComputeClass::kMatmul;
    w.flops = 2.0 * g.m() * g.n() * g.k();
    w.bytes = 2.0 * (g.m() * g.k() + g.k() * g.n() + g.m() * g.n());
    EXPECT_TRUE(near(g.us(), model.KernelNanos(w) / 1e3, 0.05))
        << g.m() << "x" << g.n() << "x" << g.k() << ": " << g.us();
  }
  EXPECT_TRUE(near(got.gpu().attention_efficiency(),
                   truth.gpu().attention_efficiency(), 0.05));
  // Attention at the model's shape: one point, timed as the simulation
  // timed it.
  ASSERT_EQ(got.gpu().attention_table_size(), 1);
  const sim::AttentionPoint& a = got.gpu().attention_table(0);
  EXPECT_EQ(a.batch(), 2);
  EXPECT_EQ(a.seq(), 2048);
  const model::ModelSpec spec = model::LoadModelSpec("qwen2.5-0.5b").value();
  EXPECT_EQ(a.num_heads(), spec.num_heads());
  EXPECT_EQ(a.num_kv_heads(), spec.num_kv_heads());
  kernels::AttentionArgs args;
  args.batch = a.batch();
  args.seq = a.seq();
  args.num_heads = a.num_heads();
  args.num_kv_heads = a.num_kv_heads();
  args.head_dim = a.head_dim();
  const sim::KernelWork aw =
      sim::AttentionWork(args, /*backward=*/true, kernels::DType::kBF16);
  EXPECT_TRUE(near(a.backward_us(), model.KernelNanos(aw) / 1e3, 0.05))
      << a.backward_us();
  // Collectives on 2 ranks: the profile's curve plus its per-step latency.
  ASSERT_FALSE(got.fabric().allgather_busbw().empty());
  for (const sim::CurvePoint& c : got.fabric().allgather_busbw()) {
    const double expected = model.BusBandwidthGbps(
        sim::CollectiveKind::kAllGather, static_cast<int64_t>(c.size()), false);
    EXPECT_LE(c.value(), expected * 1.001);
    EXPECT_GE(c.value(), expected * 0.5);
  }
  // Host AdamW: one thread at the per-thread bandwidth; all of this
  // machine's threads at what the simulator gives them (two ranks on the
  // node). The base's bandwidth-by-threads curve is another machine's: gone.
  const int threads = zero::OptimizerThreads(0);
  sim::CostModel host = sim::CostModel::Create(truth).value();
  host.set_ranks_per_node(2);
  EXPECT_TRUE(near(got.host().memory_bandwidth_gbps_per_thread(),
                   truth.host().memory_bandwidth_gbps_per_thread(), 0.02));
  EXPECT_TRUE(near(got.host().memory_bandwidth_gbps_per_rank(),
                   host.HostTaskGbps(std::min(threads, host.HostCores())),
                   0.02));
  EXPECT_EQ(got.host().memory_bandwidth_by_threads_size(), 0);
  // The written profile loads again.
  EXPECT_TRUE(sim::ParseProfile(ProfileText(result), "calibrated").ok());
}

// A calibrated profile names the device it measured and holds its memory,
// not the base profile's (an H100 calibrated from h200_sxm has 80 GB).
// The drive behind --nvme-path, timed through the swapper's file: the
// node's read and write rates come back (two ranks sharing them).
TEST(CalibrateTest, TheDrivesRatesComeBack) {
  sim::HardwareProfile truth = sim::LoadProfile("h200_sxm").value();
  ClearInStepAdjustments(&truth);
  truth.mutable_host()->set_nvme_read_gbps_per_node(12);
  truth.mutable_host()->set_nvme_write_gbps_per_node(6);
  const char* tmp = std::getenv("TEST_TMPDIR");
  const Result result =
      CalibrateOn(truth, nullptr, tmp != nullptr ? tmp : "/tmp");
  EXPECT_NEAR(result.profile.host().nvme_read_gbps_per_node(), 12, 0.12);
  EXPECT_NEAR(result.profile.host().nvme_write_gbps_per_node(), 6, 0.06);
  EXPECT_THAT(result.report, ::testing::HasSubstr("NVMe under"));
}

TEST(CalibrateTest, TheDevicesNameAndMemoryReplaceTheBases) {
  const sim::HardwareProfile base = sim::LoadProfile("h200_sxm").value();
  sim::HardwareProfile truth = base;
  truth.mutable_gpu()->set_name("NVIDIA H100 80GB HBM3");
  truth.mutable_gpu()->set_memory_gib(79.19);
  const Result result = CalibrateOn(truth, &base);
  EXPECT_EQ(result.profile.gpu().name(), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(result.profile.gpu().memory_gib(), 79.19);
  EXPECT_EQ(result.profile.description(),
            "NVIDIA H100 80GB HBM3, 79.19 GiB, measured by zero3 calibrate "
            "(what it does not measure: the NVIDIA H200 SXM profile's)");
  EXPECT_EQ(result.profile.gpu().peak_bf16_tflops(),
            base.gpu().peak_bf16_tflops());
  EXPECT_THAT(result.report,
              ::testing::HasSubstr("gpu.memory_gib 79.19: the device's"));
}

// A GEMM timed faster than the GPU's peak is a glitch: calibrate measures
// it again and, faster still, leaves it out of the table.
TEST(CalibrateTest, AGemmFasterThanThePeakIsLeftOut) {
  sim::HardwareProfile truth = sim::LoadProfile("h200_sxm").value();
  ClearInStepAdjustments(&truth);
  sim::GemmPoint* glitch = truth.mutable_gpu()->add_gemm_table();
  glitch->set_m(2048);
  glitch->set_n(2048);
  glitch->set_k(2048);
  glitch->set_trans_b(true);
  glitch->set_us(5);  // 3,400 TFLOP/s
  const Result result = CalibrateOn(truth);
  for (const sim::GemmPoint& g : result.profile.gpu().gemm_table()) {
    EXPECT_FALSE(g.m() == 2048 && g.n() == 2048 && g.k() == 2048)
        << "the glitch is in the table";
  }
  EXPECT_THAT(result.report,
              ::testing::HasSubstr("gemm   2048 x   2048 x   2048 NT: 5.0 us, "
                                   "faster than the 989 TFLOP/s peak twice: "
                                   "left out"));
}

TEST(CalibrateTest, LaunchQueueRoomPerKindComesBack) {
  sim::HardwareProfile truth = sim::LoadProfile("h200_sxm").value();
  ClearInStepAdjustments(&truth);
  sim::HostProfile& h = *truth.mutable_host();
  h.set_stream_queue_depth(2000);
  h.set_queue_units_per_kernel(1.0);
  h.set_queue_units_per_gemm(2.0);
  h.set_queue_units_per_event(1.5);
  h.set_queue_units_per_timed_event(1.25);
  h.set_queue_units_per_wait(2.5);
  h.set_queue_units_per_copy(3.0);
  h.set_queue_by_device_launches(true);
  const sim::HostProfile got = CalibrateOn(truth).profile.host();
  // Depths of ~2000 units round a kind's room by < 0.5%; calibrate rounds
  // it to 0.01.
  EXPECT_NEAR(got.queue_units_per_kernel(), 1.0, 0.02);
  EXPECT_NEAR(got.queue_units_per_gemm(), 2.0, 0.02);
  EXPECT_NEAR(got.queue_units_per_event(), 1.5, 0.02);
  EXPECT_NEAR(got.queue_units_per_timed_event(), 1.25, 0.02);
  EXPECT_NEAR(got.queue_units_per_wait(), 2.5, 0.02);
  EXPECT_NEAR(got.queue_units_per_copy(), 3.0, 0.02);
  EXPECT_TRUE(got.queue_by_device_launches());
  EXPECT_NEAR(got.stream_queue_depth(), 2000, 2000 * 0.005);
}

}  // namespace
}  // namespace calibrate
}  // namespace zero3
