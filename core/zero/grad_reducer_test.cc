// Copyright 2026 The zero3 Authors.
//
// grad_reducer_test.cc: GradReducer::DeviceBytes reports the device memory
// Create allocates, on simulated ranks (whose devices count every byte).

#include "core/zero/grad_reducer.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "core/util/status_macros.h"
#include "gtest/gtest.h"
#include "sim/simulator.h"
#include "sim/testing/test_profile.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace zero {
namespace {

using ::zero3::testing::IsOk;

// Parameter sizes (not multiples of the ranks, so they are padded) and the
// modules that read them: module 3 reads parameter 0 too, as a head tied to
// the embedding does, so parameter 0 gets a gradient buffer of its own.
const std::vector<int64_t> kNumels = {1001, 37, 515, 515, 37, 2048, 9};
const std::vector<model::ModuleInfo> kModules = {{"embed", {0}},
                                                 {"layer 0", {1, 2, 3}},
                                                 {"layer 1", {4, 5}},
                                                 {"head", {0, 6}}};

struct Case {
  int world = 1;
  runtime::DType dtype = runtime::DType::kF32;
  bool offload_optimizer = false;
  int accumulation = 1;
  int64_t bucket = 1 << 10;
  bool speculative = false;
  bool per_param_fp32 = false;
  int host_begin_param = -1;  // the host share's first parameter; -1: none
};

// Creates a reducer on every rank of `c`'s world and compares the device
// bytes it allocated with what DeviceBytes reports.
absl::Status ExpectReportedBytes(const Case& c) {
  sim::SimOptions so;
  so.profile = sim::TestProfile();
  so.world_size = c.world;
  so.mode = sim::SimMode::kTiming;
  ZR_ASSIGN_OR_RETURN(auto world, sim::SimWorld::Create(so));
  return world->Run([&](runtime::Runtime& rt) -> absl::Status {
    ZeroOptions o;
    o.dtype = c.dtype;
    o.offload_optimizer = c.offload_optimizer;
    o.accumulation = c.accumulation;
    o.reduce_bucket_size = c.bucket;
    if (c.speculative) o.speculative_step = SpeculativeStep::kOn;
    o.per_param_fp32_grads = c.per_param_fp32;
    const ShardLayout layout(kNumels, c.world, rt.rank());
    runtime::Device& dev = rt.device();
    ZR_ASSIGN_OR_RETURN(auto stream, dev.CreateStream("compute"));
    ZeroContext ctx;
    ctx.rt = &rt;
    ctx.dp = &rt.world();
    ctx.compute = ctx.gather = ctx.reduce = stream.get();
    ctx.layout = &layout;
    ctx.options = &o;
    ctx.dtype = c.dtype;
    ctx.host_begin = c.host_begin_param < 0
                         ? layout.total()
                         : layout.param(c.host_begin_param).offset;
    const GradReducer::DeviceFootprint reported =
        GradReducer::DeviceBytes(o, c.dtype, layout, kModules);
    const int64_t before = dev.memory_stats().bytes_in_use;
    ZR_ASSIGN_OR_RETURN(auto reducer, GradReducer::Create(ctx, kModules));
    const int64_t allocated = dev.memory_stats().bytes_in_use - before;
    EXPECT_EQ(allocated, reported.Bytes(ctx.host_begin))
        << "rank " << rt.rank() << " of " << c.world;
    EXPECT_EQ(reported.bytes_per_device_element,
              GradReducer::StraightToHost(o, c.dtype) ? 4 : 0);
    reducer.reset();
    EXPECT_EQ(dev.memory_stats().bytes_in_use, before);
    return absl::OkStatus();
  });
}

TEST(GradReducerTest, DeviceBytesMatchOneRankOnTheDevice) {
  EXPECT_THAT(ExpectReportedBytes({}), IsOk());
}

TEST(GradReducerTest, DeviceBytesMatchSeveralRanksAndBuckets) {
  Case c;
  c.world = 4;
  c.dtype = runtime::DType::kBF16;
  c.accumulation = 2;
  for (int64_t bucket : {int64_t{1}, int64_t{600}, int64_t{1} << 20}) {
    c.bucket = bucket;
    EXPECT_THAT(ExpectReportedBytes(c), IsOk()) << "bucket " << bucket;
  }
}

// Straight to the host, the fp32 partition holds only the device share.
TEST(GradReducerTest, DeviceBytesMatchWithGradientsStraightToTheHost) {
  Case c;
  c.world = 2;
  c.dtype = runtime::DType::kBF16;
  c.offload_optimizer = true;
  for (int first_on_host : {0, 3, 6}) {
    c.host_begin_param = first_on_host;
    EXPECT_THAT(ExpectReportedBytes(c), IsOk())
        << "host from " << first_on_host;
  }
}

TEST(GradReducerTest, DeviceBytesMatchWithOffloadAccumulationAndSpeculation) {
  Case c;
  c.world = 2;
  c.dtype = runtime::DType::kBF16;
  c.offload_optimizer = true;
  c.accumulation = 3;
  c.host_begin_param = 2;
  EXPECT_THAT(ExpectReportedBytes(c), IsOk());
  c.accumulation = 1;
  c.speculative = true;
  EXPECT_THAT(ExpectReportedBytes(c), IsOk());
}

// DeepSpeed's path holds a device buffer for the round trip of the largest
// parameter partition.
TEST(GradReducerTest, DeviceBytesMatchWithDeepSpeedsGradientPath) {
  Case c;
  c.world = 2;
  c.dtype = runtime::DType::kBF16;
  c.offload_optimizer = true;
  c.per_param_fp32 = true;
  for (int accumulation : {1, 2}) {
    c.accumulation = accumulation;
    EXPECT_THAT(ExpectReportedBytes(c), IsOk())
        << "accumulation " << accumulation;
  }
}

}  // namespace
}  // namespace zero
}  // namespace zero3
