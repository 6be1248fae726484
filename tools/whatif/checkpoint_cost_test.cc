// Copyright 2026 The zero3 Authors.
//
// The checkpoint cost model: it grows with the bytes saved, an
// asynchronous save costs the run less than a blocking one, and a write
// longer than the interval stalls the next save.

#include "tools/whatif/checkpoint_cost.h"

#include "gtest/gtest.h"
#include "sim/profiles.h"

namespace zero3 {
namespace whatif {
namespace {

CheckpointCostInput Input(int64_t params_per_rank, bool async) {
  CheckpointCostInput in;
  in.profile = sim::LoadProfile("h200_sxm").value();
  in.bytes_per_rank = 12 * params_per_rank;
  in.ranks_per_node = 8;
  in.async = async;
  in.interval = 100;
  in.step_ms = 1000;
  in.host_optimizer_ms = 200;
  return in;
}

TEST(CheckpointCostTest, GrowsWithTheModel) {
  for (bool async : {false, true}) {
    const CheckpointCost small = EstimateCheckpointCost(Input(100e6, async));
    const CheckpointCost large = EstimateCheckpointCost(Input(1000e6, async));
    EXPECT_GT(small.per_step_ms, 0);
    EXPECT_GT(large.snapshot_ms, small.snapshot_ms);
    EXPECT_GT(large.write_ms, small.write_ms);
    EXPECT_GT(large.per_step_ms, small.per_step_ms);
  }
}

TEST(CheckpointCostTest, AsyncHidesTheWrite) {
  const CheckpointCost blocking = EstimateCheckpointCost(Input(500e6, false));
  const CheckpointCost async = EstimateCheckpointCost(Input(500e6, true));
  // 6 GB per rank at 2/8 GB/s: 24 s of writing, hidden by 100 s of steps
  // but for the snapshot and the slower host optimizer steps.
  EXPECT_NEAR(blocking.write_ms, 24000, 1);
  EXPECT_NEAR(blocking.stall_ms, blocking.snapshot_ms + blocking.write_ms,
              1e-6);
  EXPECT_NEAR(async.stall_ms, async.snapshot_ms, 1e-6);
  EXPECT_GT(async.slowdown_ms, 0);
  EXPECT_LT(async.per_step_ms, blocking.per_step_ms / 2);
  // More often than the write takes: the next save waits for it.
  CheckpointCostInput often = Input(500e6, true);
  often.interval = 10;
  const CheckpointCost waits = EstimateCheckpointCost(often);
  EXPECT_GT(waits.stall_ms, waits.snapshot_ms + 10000);
}

TEST(CheckpointCostTest, DeviceStateCrossesTheHostLinkFirst) {
  CheckpointCostInput on_device = Input(500e6, true);
  on_device.offload = false;
  EXPECT_GT(EstimateCheckpointCost(on_device).snapshot_ms,
            EstimateCheckpointCost(Input(500e6, true)).snapshot_ms);
}

}  // namespace
}  // namespace whatif
}  // namespace zero3
