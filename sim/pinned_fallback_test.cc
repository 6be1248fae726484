// Copyright 2026 The zero3 Authors.
//
// The pinned-memory budget on the simulator: an allocation over
// max_pinned_bytes fails naming the key, or with the pageable fallback
// becomes a pageable buffer that is counted as such.

#include <memory>

#include "core/runtime/owned_buffer.h"
#include "core/runtime/pinned_memory.h"
#include "core/runtime/runtime.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/simulator.h"
#include "sim/testing/test_profile.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace sim {
namespace {

using ::testing::HasSubstr;
using ::zero3::testing::IsOk;
using ::zero3::testing::StatusIs;

std::unique_ptr<SimWorld> MakeWorld(bool fallback) {
  SimOptions options;
  options.profile = TestProfile();
  options.mode = SimMode::kData;
  options.max_pinned_bytes = 4096;
  options.pinned_fallback = fallback;
  return SimWorld::Create(options).value();
}

TEST(PinnedFallbackTest, OverTheBudgetFailsNamingTheKey) {
  auto world = MakeWorld(/*fallback=*/false);
  EXPECT_THAT(world->Run([](runtime::Runtime& rt) -> absl::Status {
    auto fits =
        runtime::AllocateHost(rt, 4096, runtime::HostMemoryKind::kPinned, "a");
    if (!fits.ok()) return fits.status();
    return runtime::AllocateHost(rt, 1, runtime::HostMemoryKind::kPinned,
                                 "one byte too many")
        .status();
  }),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("zero3.max_pinned_bytes")));
}

TEST(PinnedFallbackTest, OverTheBudgetBecomesPageable) {
  auto world = MakeWorld(/*fallback=*/true);
  ASSERT_THAT(world->Run([](runtime::Runtime& rt) -> absl::Status {
    auto a =
        runtime::AllocateHost(rt, 4096, runtime::HostMemoryKind::kPinned, "a");
    auto b =
        runtime::AllocateHost(rt, 8192, runtime::HostMemoryKind::kPinned, "b");
    if (!a.ok() || !b.ok()) return absl::InternalError("not allocated");
    EXPECT_EQ(a->space(), runtime::MemorySpace::kPinnedHost);
    EXPECT_EQ(b->space(), runtime::MemorySpace::kPageableHost);
    EXPECT_EQ(b->bytes(), 8192);
    const runtime::PinnedMemoryStats s = rt.pinned_memory().stats();
    EXPECT_EQ(s.bytes_in_use, 4096);
    EXPECT_EQ(s.fallback_allocations, 1);
    EXPECT_EQ(s.fallback_bytes, 8192);
    EXPECT_THAT(rt.pinned_memory().Summary(),
                HasSubstr("8.0 KiB pageable instead"));
    return absl::OkStatus();
  }),
              IsOk());
}

// A copy into the fallback buffer takes the pageable path: the host waits
// for it, as it does not for a copy into pinned memory.
TEST(PinnedFallbackTest, TheFallbackBufferCopiesAtPageableRates) {
  auto world = MakeWorld(/*fallback=*/true);
  ASSERT_THAT(world->Run([](runtime::Runtime& rt) -> absl::Status {
    auto stream = rt.device().CreateStream("s").value();
    auto device = runtime::AllocateDevice(rt.device(), 4096, "d").value();
    auto pinned =
        runtime::AllocateHost(rt, 4096, runtime::HostMemoryKind::kPinned, "p")
            .value();
    auto fallback =
        runtime::AllocateHost(rt, 4096, runtime::HostMemoryKind::kPinned, "f")
            .value();
    EXPECT_EQ(fallback.space(), runtime::MemorySpace::kPageableHost);
    const int64_t t0 = rt.NowNanos();
    EXPECT_TRUE(stream->Copy(pinned.All(), device.All(), "to pinned").ok());
    const int64_t pinned_host_ns = rt.NowNanos() - t0;
    const int64_t t1 = rt.NowNanos();
    EXPECT_TRUE(stream->Copy(fallback.All(), device.All(), "to fallback").ok());
    const int64_t fallback_host_ns = rt.NowNanos() - t1;
    EXPECT_GT(fallback_host_ns, pinned_host_ns);
    return rt.device().Synchronize();
  }),
              IsOk());
}

}  // namespace
}  // namespace sim
}  // namespace zero3
