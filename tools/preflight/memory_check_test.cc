// Copyright 2026 The zero3 Authors.

#include "tools/preflight/memory_check.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace preflight {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::zero3::testing::IsOk;
using ::zero3::testing::StatusIs;

constexpr int64_t kGiB = int64_t{1} << 30;

MemoryEstimate Estimate() {
  MemoryEstimate e;
  e.device_bytes = 6 * kGiB;
  e.pinned_bytes = 2 * kGiB;
  e.pageable_bytes = 3 * kGiB;
  e.local_ranks = 2;
  e.device_in_host_memory = true;
  return e;
}

Available Plenty() {
  Available a;
  a.device_free_bytes = 140 * kGiB;
  a.device_source = "h200_sxm, simulated";
  a.host.total_bytes = 64 * kGiB;
  a.host.available_bytes = 60 * kGiB;
  a.pinned_budget_bytes = 16 * kGiB;
  return a;
}

TEST(MemoryCheckTest, FitsWhenEverythingFits) {
  EXPECT_THAT(CheckMemory(Estimate(), Plenty(), RunShape{}), IsOk());
}

TEST(MemoryCheckTest, HostOfSimulatedRanksNamesTheFixes) {
  Available a = Plenty();
  a.host.available_bytes = 19 * kGiB;
  RunShape run;
  run.simulator_data_mode = true;
  EXPECT_THAT(
      CheckMemory(Estimate(), a, run),
      StatusIs(
          absl::StatusCode::kResourceExhausted,
          AllOf(HasSubstr("need about 22.00 GiB"), HasSubstr("11.00 GiB each"),
                HasSubstr("19.00 GiB available"), HasSubstr("--mode timing"),
                HasSubstr("fewer ranks"))));
}

TEST(MemoryCheckTest, HostNamesTheSpeculativeStepsCopy) {
  Available a = Plenty();
  a.host.available_bytes = 19 * kGiB;
  RunShape run;
  run.speculative = true;
  EXPECT_THAT(CheckMemory(Estimate(), a, run),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("offload_optimizer.super_offload false")));
  run.speculative = false;
  EXPECT_THAT(CheckMemory(Estimate(), a, run),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       ::testing::Not(HasSubstr("super_offload"))));
}

TEST(MemoryCheckTest, HostSuggestsBf16StatesWhereTheyApply) {
  Available a = Plenty();
  a.host.available_bytes = 19 * kGiB;
  RunShape run;
  run.bf16_states_possible = true;
  EXPECT_THAT(CheckMemory(Estimate(), a, run),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("bf16.bf16_master_weights_and_grads")));
  run.bf16_states_possible = false;
  run.speculative = true;
  run.host_state_bytes = 6;
  EXPECT_THAT(CheckMemory(Estimate(), a, run),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       ::testing::AllOf(
                           ::testing::Not(HasSubstr("bf16_master")),
                           HasSubstr("takes 6 bytes per host-share element"))));
}

TEST(MemoryCheckTest, TimingModeAllocatesNoHostMemory) {
  Available a = Plenty();
  a.host.available_bytes = 1 * kGiB;
  RunShape run;
  run.allocates = false;
  EXPECT_THAT(CheckHost(Estimate(), a, run), IsOk());
}

TEST(MemoryCheckTest, ACgroupLimitCounts) {
  Available a = Plenty();
  a.host.cgroup_limit_bytes = 16 * kGiB;
  a.host.cgroup_usage_bytes = 1 * kGiB;
  EXPECT_THAT(CheckHost(Estimate(), a, RunShape{}),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("cgroup limit 16.00 GiB")));
}

TEST(MemoryCheckTest, DeviceSuggestsOffload) {
  Available a = Plenty();
  a.device_free_bytes = 4 * kGiB;
  EXPECT_THAT(CheckDevice(Estimate(), a, RunShape{}),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("about 6.00 GiB, 4.00 GiB free"),
                             HasSubstr("offload_param.device=cpu"),
                             HasSubstr("micro-batch"))));
  a.device_free_bytes = -1;  // known on the GPU only
  EXPECT_THAT(CheckDevice(Estimate(), a, RunShape{}), IsOk());
}

TEST(MemoryCheckTest, DeviceNamesTheStreamedStepsSlots) {
  Available a = Plenty();
  a.device_free_bytes = 4 * kGiB;
  RunShape run;
  run.offload_optimizer = true;
  run.streamed_slots = 16;
  run.streams_all = true;
  EXPECT_THAT(CheckDevice(Estimate(), a, run),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("zero3.offloaded_step \"auto\""),
                             HasSubstr("zero3.offloaded_step_buffers, 16 now"),
                             Not(HasSubstr("offload the optimizer")))));
  // auto with its two slots: nothing of the streamed step to give back.
  run.streamed_slots = 2;
  run.streams_all = false;
  EXPECT_THAT(CheckDevice(Estimate(), a, run),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(Not(HasSubstr("offloaded_step")),
                             HasSubstr("more ranks"))));
}

TEST(MemoryCheckTest, PinnedOverBudgetNamesTheKeyUnlessItFallsBack) {
  Available a = Plenty();
  a.pinned_budget_bytes = 1 * kGiB;
  EXPECT_THAT(CheckPinned(Estimate(), a),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("zero3.max_pinned_bytes"),
                             HasSubstr("pinned_fallback: pageable"),
                             HasSubstr("pin_memory: false"))));
  a.pinned_fallback = true;
  EXPECT_THAT(CheckPinned(Estimate(), a), IsOk());
}

TEST(MemoryCheckTest, TableAndMemlockNote) {
  Available a = Plenty();
  a.memlock_bytes = 8 << 20;
  const std::string table = FormatEstimate(Estimate(), a, RunShape{});
  EXPECT_THAT(table, AllOf(HasSubstr("device (in host RAM)"),
                           HasSubstr("6.00 GiB"), HasSubstr("22.00 GiB"),
                           HasSubstr("RLIMIT_MEMLOCK is 8.0 MiB")));
  a.memlock_bytes = -1;
  EXPECT_EQ(MemlockNote(Estimate(), a), "");
}

}  // namespace
}  // namespace preflight
}  // namespace zero3
