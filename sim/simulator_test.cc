// Copyright 2026 The zero3 Authors.
//
// Virtual-time semantics of the simulator. Every expected time is computed by
// hand from the figures of testing/test_profile.h, restated in each test.

#include "sim/simulator.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/runtime/runtime.h"
#include "core/util/check.h"
#include "core/util/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/testing/test_profile.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace sim {
namespace {

using runtime::Buffer;
using runtime::HostMemoryKind;
using runtime::KernelCall;
using runtime::Runtime;
using runtime::TensorRef;
using ::zero3::testing::IsOk;

struct Span {
  int64_t start = -1;
  int64_t end = -1;
};

// The span named `name` on one of rank `pid`'s stream tracks.
Span StreamSpan(const Trace& trace, int pid, absl::string_view name) {
  for (const Trace::Span& s : trace.spans()) {
    if (s.pid == pid && s.name == name &&
        absl::StartsWith(trace.TrackName(s.pid, s.tid), "stream")) {
      return {s.start_ns, s.end_ns};
    }
  }
  ADD_FAILURE() << "no stream span named " << name;
  return {};
}

std::unique_ptr<SimWorld> MakeWorld(int ranks, SimMode mode = SimMode::kTiming,
                                    bool strict = false) {
  SimOptions options;
  options.profile = TestProfile();
  options.world_size = ranks;
  options.mode = mode;
  options.trace = true;
  options.strict = strict;
  auto world = SimWorld::Create(options);
  ZR_CHECK_OK(world.status());
  return std::move(world).value();
}

// A fill of `floats` fp32 values: 4 * floats bytes written, so 4 * floats ns.
KernelCall Fill(const Buffer& buffer, int64_t floats, std::string label) {
  runtime::ops::Fill fill;
  fill.args.n = floats;
  fill.args.value = 1.0f;
  fill.x = TensorRef::Of(buffer, runtime::DType::kF32, 0, floats);
  return KernelCall(fill, std::move(label));
}

TEST(SimulatorTest, StreamRunsWorkInOrder) {
  auto world = MakeWorld(1);
  ASSERT_THAT(world->Run([](Runtime& rt) -> absl::Status {
    auto stream = rt.device().CreateStream("s").value();
    Buffer buf = rt.device().Allocate(400000, "buf").value();  // host 10 us
    EXPECT_EQ(rt.NowNanos(), 10000);
    // Launch at 10 us + 5 us; 400000 bytes at 1 byte/ns.
    EXPECT_OK(stream->Launch(Fill(buf, 100000, "k1")));
    EXPECT_OK(stream->Launch(Fill(buf, 100000, "k2")));  // enqueued at 20 us
    EXPECT_EQ(rt.NowNanos(), 20000);                     // launches do not wait
    EXPECT_OK(stream->Synchronize());
    EXPECT_EQ(rt.NowNanos(), 815000);  // k2 ends at 415 + 400 us
    return absl::OkStatus();
  }),
              IsOk());
  const Span k1 = StreamSpan(world->trace(), 0, "k1");
  const Span k2 = StreamSpan(world->trace(), 0, "k2");
  EXPECT_EQ(k1.start, 15000);
  EXPECT_EQ(k1.end, 415000);
  EXPECT_EQ(k2.start, 415000);  // after k1, not at its enqueue time (20 us)
  EXPECT_EQ(k2.end, 815000);
}

// Op timing as the CUDA backend's: an event on the stream before and after
// each operation, each costing the host an event call (1 us here). An
// operation the host issues into an idle stream is timed from its first
// event, so its time holds its own launch (5 us); one queued behind other
// work is timed from the end of that work, as it ran.
TEST(SimulatorTest, OpTimingTimesEachOperationBetweenTwoEvents) {
  SimOptions options;
  options.profile = TestProfile();
  options.mode = SimMode::kTiming;
  options.trace = true;
  options.op_timing = true;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SimWorld> world,
                       SimWorld::Create(options));
  ASSERT_THAT(world->Run([](Runtime& rt) -> absl::Status {
    auto stream = rt.device().CreateStream("s").value();
    Buffer buf = rt.device().Allocate(400000, "buf").value();  // host 10 us
    // Event at 11 us, launch 11..16 us, the kernel 16..16.4 us, the end
    // event recorded at 17 us.
    EXPECT_OK(stream->Launch(Fill(buf, 100, "small")));
    EXPECT_EQ(rt.NowNanos(), 17000);
    // Event at 18 us (the stream is idle), launch to 23 us: 23..423 us.
    EXPECT_OK(stream->Launch(Fill(buf, 100000, "long")));
    // Queued behind "long": its first event is reached at 423 us.
    EXPECT_OK(stream->Launch(Fill(buf, 100, "queued")));
    return stream->Synchronize();
  }),
              IsOk());
  std::vector<runtime::OpTiming> ops = world->TakeOpTimings(0);
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0].label, "small");
  EXPECT_EQ(ops[0].stream, "s");
  EXPECT_EQ(ops[0].kind, "fill");
  EXPECT_EQ(ops[0].start_ns, 11000);
  EXPECT_EQ(ops[0].end_ns, 17000);  // the kernel ran 0.4 us of these 6
  const Span small = StreamSpan(world->trace(), 0, "small");
  EXPECT_EQ(small.start, 16000);
  EXPECT_EQ(small.end, 16400);
  EXPECT_EQ(ops[1].start_ns, 18000);
  EXPECT_EQ(ops[1].end_ns, 423000);
  EXPECT_EQ(ops[2].start_ns, 423000);
  EXPECT_EQ(ops[2].end_ns, 423400);  // as it ran
  EXPECT_THAT(world->TakeOpTimings(0), ::testing::IsEmpty());
}

TEST(SimulatorTest, FullLaunchQueueBlocksTheHostUntilTheOldestIsDone) {
  SimOptions options;
  options.profile = TestProfile();
  options.profile.mutable_host()->set_stream_queue_depth(2);
  options.mode = SimMode::kTiming;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SimWorld> world,
                       SimWorld::Create(options));
  ASSERT_THAT(world->Run([](Runtime& rt) -> absl::Status {
    auto stream = rt.device().CreateStream("s").value();
    auto other = rt.device().CreateStream("other").value();
    Buffer buf = rt.device().Allocate(400000, "buf").value();  // host 10 us
    EXPECT_OK(stream->Launch(Fill(buf, 100000, "k1")));        // 15..415 us
    EXPECT_OK(stream->Launch(Fill(buf, 100000, "k2")));        // 415..815 us
    EXPECT_EQ(rt.NowNanos(), 20000);
    // Another stream has a queue of its own.
    EXPECT_OK(other->Launch(Fill(buf, 10, "small")));
    EXPECT_EQ(rt.NowNanos(), 25000);
    // Two commands queued: the third waits for k1, then launches (5 us).
    EXPECT_OK(stream->Launch(Fill(buf, 100000, "k3")));
    EXPECT_EQ(rt.NowNanos(), 420000);
    EXPECT_OK(stream->Synchronize());
    // k3 after k2 and the small kernel (40 ns), which found the SMs busy
    // until k2's end.
    EXPECT_EQ(rt.NowNanos(), 1215040);
    return absl::OkStatus();
  }),
              IsOk());
}

// The host's clock after a 400 us kernel (k1, on the device from 15 us),
// then `enqueue`, on one stream whose launch queue holds `depth` units.
int64_t HostClockAfterQueueing(
    sim::HardwareProfile profile, int depth,
    const std::function<absl::Status(Runtime&, runtime::Stream&,
                                     const Buffer&)>& enqueue) {
  SimOptions options;
  options.profile = std::move(profile);
  options.profile.mutable_host()->set_stream_queue_depth(depth);
  options.mode = SimMode::kTiming;
  std::unique_ptr<SimWorld> world = SimWorld::Create(options).value();
  int64_t now = -1;
  EXPECT_THAT(world->Run([&](Runtime& rt) -> absl::Status {
    auto stream = rt.device().CreateStream("s").value();
    Buffer buf = rt.device().Allocate(400000, "buf").value();  // host 10 us
    ZR_RETURN_IF_ERROR(stream->Launch(Fill(buf, 100000, "k1")));
    ZR_RETURN_IF_ERROR(enqueue(rt, *stream, buf));
    now = rt.NowNanos();
    return stream->Synchronize();
  }),
              IsOk());
  return now;
}

TEST(SimulatorTest, CommandsTakingMoreRoomFillTheLaunchQueueSooner) {
  // After k1: an event record (1 us on the host), then two small kernels
  // (5 us each), in a queue of 4 units.
  auto enqueue = [](Runtime& rt, runtime::Stream& s,
                    const Buffer& buf) -> absl::Status {
    auto event = rt.device().CreateEvent().value();
    ZR_RETURN_IF_ERROR(s.Record(*event));
    ZR_RETURN_IF_ERROR(s.Launch(Fill(buf, 10, "k2")));
    return s.Launch(Fill(buf, 10, "k3"));
  };
  // One unit each: 4 commands fit, nothing blocks.
  EXPECT_EQ(HostClockAfterQueueing(TestProfile(), 4, enqueue), 26000);
  // An event takes 2: k3 waits for k1's end (415 us), then launches.
  sim::HardwareProfile roomy_events = TestProfile();
  roomy_events.mutable_host()->set_queue_units_per_event(2.0);
  EXPECT_EQ(HostClockAfterQueueing(roomy_events, 4, enqueue), 420000);
  // Copies taking more room change nothing here.
  sim::HardwareProfile roomy_copies = TestProfile();
  roomy_copies.mutable_host()->set_queue_units_per_copy(3.0);
  EXPECT_EQ(HostClockAfterQueueing(roomy_copies, 4, enqueue), 26000);
}

TEST(SimulatorTest, TimedRecordsAndWaitsTakeTheirOwnRoom) {
  // After k1: a record of an event without timing, a timed one and a wait
  // (1 us each on the host), then two small kernels (5 us each), in a
  // queue of 4 units.
  auto enqueue = [](Runtime& rt, runtime::Stream& s,
                    const Buffer& buf) -> absl::Status {
    auto event = rt.device().CreateEvent().value();
    auto timed = rt.device().CreateTimedEvent().value();
    ZR_RETURN_IF_ERROR(s.Record(*event));
    ZR_RETURN_IF_ERROR(s.Record(*timed));
    ZR_RETURN_IF_ERROR(s.Wait(*event));
    ZR_RETURN_IF_ERROR(s.Launch(Fill(buf, 10, "k2")));
    return s.Launch(Fill(buf, 10, "k3"));
  };
  // One unit each: k2 fills the queue (k1, three events, k2 > 4), so it
  // waits for k1's end (415 us) and k3 launches behind it.
  EXPECT_EQ(HostClockAfterQueueing(TestProfile(), 4, enqueue), 425000);
  // The three take almost nothing (an H200: the record and the wait never
  // fill the queue): k1, k2 and k3 fit.
  sim::HardwareProfile free = TestProfile();
  free.mutable_host()->set_queue_units_per_event(0.1);
  free.mutable_host()->set_queue_units_per_timed_event(0.1);
  free.mutable_host()->set_queue_units_per_wait(0.1);
  EXPECT_EQ(HostClockAfterQueueing(free, 4, enqueue), 28000);
  // Each kind is charged its own room: any one of them at 1 again makes
  // k3 wait.
  for (auto setter : {&sim::HostProfile::set_queue_units_per_event,
                      &sim::HostProfile::set_queue_units_per_timed_event,
                      &sim::HostProfile::set_queue_units_per_wait}) {
    sim::HardwareProfile one = free;
    (one.mutable_host()->*setter)(1.0);
    EXPECT_EQ(HostClockAfterQueueing(one, 4, enqueue), 420000);
  }
}

TEST(SimulatorTest, OpsOfSeveralLaunchesTakeASlotPerLaunch) {
  // After k1: a sum of squares, two device launches on GPUs (partial sums,
  // their ordered sum), in a queue of 2 units.
  auto enqueue = [](Runtime&, runtime::Stream& s,
                    const Buffer& buf) -> absl::Status {
    runtime::ops::SumSquares ss;
    ss.args.n = 1000;
    ss.x = TensorRef::Of(buf, runtime::DType::kF32, 0, 1000);
    ss.out = TensorRef::Of(buf, runtime::DType::kF32, 1000, 2);
    return s.Launch(KernelCall(ss, "norm"));
  };
  EXPECT_EQ(HostClockAfterQueueing(TestProfile(), 2, enqueue), 20000);
  sim::HardwareProfile launches = TestProfile();
  launches.mutable_host()->set_queue_by_device_launches(true);
  EXPECT_EQ(HostClockAfterQueueing(launches, 2, enqueue), 420000);
}

TEST(SimulatorTest, CrossStreamEventWait) {
  auto world = MakeWorld(1);
  ASSERT_THAT(world->Run([](Runtime& rt) -> absl::Status {
    auto s1 = rt.device().CreateStream("s1").value();
    auto s2 = rt.device().CreateStream("s2").value();
    auto done = rt.device().CreateEvent().value();
    Buffer dev = rt.device().Allocate(400000, "dev").value();  // 10 us
    Buffer host =
        rt.AllocateHost(1000, HostMemoryKind::kPinned, "host").value();
    // 10 us allocation + 1000 bytes pinned at 1 byte/ns = 11 us.
    EXPECT_EQ(rt.NowNanos(), 21000);
    EXPECT_OK(s1->Launch(Fill(dev, 100000, "k")));  // [26, 426] us
    EXPECT_OK(s1->Record(*done));                   // host 27 us
    EXPECT_OK(s2->Wait(*done));                     // host 28 us
    // Enqueued at 30 us, but waits for k: 1000 bytes pinned D2H at 1 B/ns.
    EXPECT_OK(s2->Copy(host.All(), dev.Slice(0, 1000), "d2h"));
    EXPECT_EQ(rt.NowNanos(), 30000);
    EXPECT_OK(done->Synchronize());
    EXPECT_EQ(rt.NowNanos(), 426000);
    return absl::OkStatus();
  }),
              IsOk());
  const Span copy = StreamSpan(world->trace(), 0, "d2h");
  EXPECT_EQ(copy.start, 426000);
  EXPECT_EQ(copy.end, 427000);
}

TEST(SimulatorTest, PageableD2HBlocksHostAndWaitsForItsStream) {
  auto world = MakeWorld(1);
  ASSERT_THAT(world->Run([](Runtime& rt) -> absl::Status {
    auto s = rt.device().CreateStream("s").value();
    Buffer dev = rt.device().Allocate(400000, "dev").value();  // 10 us
    Buffer host =
        rt.AllocateHost(1000, HostMemoryKind::kPageable, "host").value();
    EXPECT_EQ(rt.NowNanos(), 20000);               // pageable: no pinning cost
    EXPECT_OK(s->Launch(Fill(dev, 100000, "k")));  // [25, 425] us
    // Call at 25 us, enqueued at 27 us; starts after k; 1000 bytes at
    // 0.5 B/ns = 2 us; the host returns only when it is done.
    EXPECT_OK(s->Copy(host.All(), dev.Slice(0, 1000), "d2h"));
    EXPECT_EQ(rt.NowNanos(), 427000);
    return absl::OkStatus();
  }),
              IsOk());
  const Span copy = StreamSpan(world->trace(), 0, "d2h");
  EXPECT_EQ(copy.start, 425000);
  EXPECT_EQ(copy.end, 427000);
  EXPECT_EQ(world->stats(0).host_blocked_ns, 427000 - 27000);
}

TEST(SimulatorTest, PageableH2DBlocksAboveStagingSizeOnly) {
  auto world = MakeWorld(1);
  ASSERT_THAT(world->Run([](Runtime& rt) -> absl::Status {
    auto s = rt.device().CreateStream("s").value();
    Buffer dev = rt.device().Allocate(400000, "dev").value();  // 10 us
    Buffer host =
        rt.AllocateHost(4000, HostMemoryKind::kPageable, "host").value();
    EXPECT_OK(s->Launch(Fill(dev, 100000, "k")));  // [25, 425] us
    // 1000 bytes <= 1024: staged at 1 B/ns (1 us) after the 2 us call, then
    // the host returns; the DMA runs after k at the pinned 1 B/ns.
    EXPECT_OK(s->Copy(dev.Slice(0, 1000), host.Slice(0, 1000), "small"));
    EXPECT_EQ(rt.NowNanos(), 28000);
    // 4000 bytes: blocks until done, at 0.25 B/ns = 16 us after "small".
    EXPECT_OK(s->Copy(dev.Slice(0, 4000), host.All(), "large"));
    EXPECT_EQ(rt.NowNanos(), 442000);
    return absl::OkStatus();
  }),
              IsOk());
  const Span small = StreamSpan(world->trace(), 0, "small");
  EXPECT_EQ(small.start, 425000);
  EXPECT_EQ(small.end, 426000);
  const Span large = StreamSpan(world->trace(), 0, "large");
  EXPECT_EQ(large.start, 426000);
  EXPECT_EQ(large.end, 442000);
}

TEST(SimulatorTest, PinnedD2HOverlapsKernelOnAnotherStream) {
  auto world = MakeWorld(1);
  ASSERT_THAT(world->Run([](Runtime& rt) -> absl::Status {
    auto compute = rt.device().CreateStream("compute").value();
    auto copy = rt.device().CreateStream("copy").value();
    Buffer dev = rt.device().Allocate(400000, "dev").value();  // 10 us
    Buffer host =
        rt.AllocateHost(100000, HostMemoryKind::kPinned, "host").value();
    EXPECT_EQ(rt.NowNanos(), 120000);  // 10 us + 100 us pinning
    EXPECT_OK(compute->Launch(Fill(dev, 100000, "k")));  // [125, 525] us
    EXPECT_OK(copy->Copy(host.All(), dev.Slice(0, 100000), "d2h"));
    EXPECT_EQ(rt.NowNanos(), 127000);  // the host is not blocked
    return absl::OkStatus();
  }),
              IsOk());
  const Span k = StreamSpan(world->trace(), 0, "k");
  const Span copy = StreamSpan(world->trace(), 0, "d2h");
  EXPECT_EQ(copy.start, 127000);  // during k
  EXPECT_EQ(copy.end, 227000);
  EXPECT_LT(copy.end, k.end);
}

TEST(SimulatorTest, H2DAndD2HRunConcurrently) {
  auto world = MakeWorld(1);
  ASSERT_THAT(world->Run([](Runtime& rt) -> absl::Status {
    auto up = rt.device().CreateStream("up").value();
    auto down = rt.device().CreateStream("down").value();
    Buffer dev = rt.device().Allocate(200000, "dev").value();
    Buffer host =
        rt.AllocateHost(200000, HostMemoryKind::kPinned, "host").value();
    // 10 us each allocation + 200 us pinning.
    EXPECT_EQ(rt.NowNanos(), 220000);
    EXPECT_OK(up->Copy(dev.Slice(0, 100000), host.Slice(0, 100000), "h2d"));
    EXPECT_OK(down->Copy(host.Slice(100000, 100000), dev.Slice(100000, 100000),
                         "d2h"));
    return absl::OkStatus();
  }),
              IsOk());
  const Span h2d = StreamSpan(world->trace(), 0, "h2d");
  const Span d2h = StreamSpan(world->trace(), 0, "d2h");
  EXPECT_EQ(h2d.start, 222000);
  EXPECT_EQ(h2d.end, 322000);
  EXPECT_EQ(d2h.start, 224000);  // its own engine: not after h2d
  EXPECT_EQ(d2h.end, 324000);
}

TEST(SimulatorTest, CopiesInOneDirectionShareTheLink) {
  auto world = MakeWorld(1);
  ASSERT_THAT(world->Run([](Runtime& rt) -> absl::Status {
    auto a = rt.device().CreateStream("a").value();
    auto b = rt.device().CreateStream("b").value();
    Buffer dev = rt.device().Allocate(200000, "dev").value();
    Buffer host =
        rt.AllocateHost(200000, HostMemoryKind::kPinned, "host").value();
    // 10 us each allocation + 200 us pinning.
    EXPECT_EQ(rt.NowNanos(), 220000);
    EXPECT_OK(a->Copy(host.Slice(0, 100000), dev.Slice(0, 100000), "first"));
    EXPECT_OK(b->Copy(host.Slice(100000, 100000), dev.Slice(100000, 100000),
                      "second"));
    return absl::OkStatus();
  }),
              IsOk());
  const Span first = StreamSpan(world->trace(), 0, "first");
  const Span second = StreamSpan(world->trace(), 0, "second");
  EXPECT_EQ(first.start, 222000);
  EXPECT_EQ(first.end, 322000);
  // Ready at 224 us on its own stream, but the D2H link is busy until 322 us:
  // the pair takes (100000 + 100000) bytes / 1 B/ns from the first start.
  EXPECT_EQ(second.start, 322000);
  EXPECT_EQ(second.end, 422000);
}

TEST(SimulatorTest, AllGatherStartsWhenTheLastRankArrives) {
  auto world = MakeWorld(4, SimMode::kData);
  ASSERT_THAT(world->Run([](Runtime& rt) -> absl::Status {
    auto s = rt.device().CreateStream("comm").value();
    Buffer send = rt.device().Allocate(4000, "send").value();   // 10 us
    Buffer recv = rt.device().Allocate(16000, "recv").value();  // 20 us
    EXPECT_OK(s->Launch(Fill(send, 1000, "fill")));             // [25, 29] us
    // Rank r does r * 10 us of host work (10000 r bytes at 1 B/ns) first.
    runtime::HostTask work;
    work.label = "work";
    work.memory_bytes = 10000 * rt.rank();
    EXPECT_OK(rt.RunHostTask(work));
    // Arrives at 25 + 10 r + 5 us; rank 3 last, at 60 us.
    EXPECT_OK(rt.world().AllGather(
        *s, TensorRef::Of(send, runtime::DType::kF32, 0, 1000),
        TensorRef::Of(recv, runtime::DType::kF32, 0, 4000), "ag"));
    EXPECT_OK(s->Synchronize());
    // Ring over 4 ranks: 3 steps x 1 us + 16000 bytes x 3/4 at 1 B/ns.
    EXPECT_EQ(rt.NowNanos(), 60000 + 3000 + 12000);
    if (rt.computes_values()) {
      std::vector<float> got(4000);
      // Values are checked by the conformance suite; here only the timing.
    }
    return absl::OkStatus();
  }),
              IsOk());
  for (int r = 0; r < 4; ++r) {
    const Span ag = StreamSpan(world->trace(), r, "ag");
    EXPECT_EQ(ag.start, 60000) << "rank " << r;
    EXPECT_EQ(ag.end, 75000) << "rank " << r;
  }
}

// NCCL runs one communicator's collectives in issue order, across streams:
// an all-gather issued after an all-reduce that waits for a long kernel
// waits too, though its own stream and the fabric are free.
TEST(SimulatorTest, OneCommunicatorsCollectivesRunInIssueOrder) {
  auto world = MakeWorld(2);
  ASSERT_THAT(world->Run([](Runtime& rt) -> absl::Status {
    auto busy = rt.device().CreateStream("busy").value();
    auto idle = rt.device().CreateStream("idle").value();
    Buffer dev = rt.device().Allocate(400000, "dev").value();
    Buffer send = rt.device().Allocate(4000, "send").value();
    Buffer recv = rt.device().Allocate(8000, "recv").value();
    EXPECT_OK(busy->Launch(Fill(dev, 100000, "long")));  // 400 us
    EXPECT_OK(rt.world().AllReduce(
        *busy, TensorRef::Of(send, runtime::DType::kF32, 0, 1000),
        TensorRef::Of(send, runtime::DType::kF32, 0, 1000),
        runtime::ReduceOp::kSum, "first"));
    EXPECT_OK(rt.world().AllGather(
        *idle, TensorRef::Of(send, runtime::DType::kF32, 0, 1000),
        TensorRef::Of(recv, runtime::DType::kF32, 0, 2000), "second"));
    EXPECT_OK(rt.device().Synchronize());
    return absl::OkStatus();
  }),
              IsOk());
  for (int r = 0; r < 2; ++r) {
    const Span kernel = StreamSpan(world->trace(), r, "long");
    const Span first = StreamSpan(world->trace(), r, "first");
    const Span second = StreamSpan(world->trace(), r, "second");
    EXPECT_GE(first.start, kernel.end) << "rank " << r;
    EXPECT_EQ(second.start, first.end) << "rank " << r;
  }
}

// A grouped all-gather is one collective: one ring's latency for all its
// parts' bytes.
TEST(SimulatorTest, AllGatherGroupPaysOneLatency) {
  auto world = MakeWorld(2);
  ASSERT_THAT(world->Run([](Runtime& rt) -> absl::Status {
    auto s = rt.device().CreateStream("comm").value();
    Buffer send = rt.device().Allocate(16000, "send").value();
    Buffer recv = rt.device().Allocate(32000, "recv").value();
    const runtime::AllGatherPart parts[] = {
        {TensorRef::Of(send, runtime::DType::kF32, 0, 1000),
         TensorRef::Of(recv, runtime::DType::kF32, 0, 2000)},
        {TensorRef::Of(send, runtime::DType::kF32, 1000, 3000),
         TensorRef::Of(recv, runtime::DType::kF32, 2000, 6000)}};
    EXPECT_OK(rt.world().AllGatherGroup(*s, parts, "group"));
    EXPECT_OK(s->Synchronize());
    return absl::OkStatus();
  }),
              IsOk());
  for (int r = 0; r < 2; ++r) {
    const Span group = StreamSpan(world->trace(), r, "group");
    // Ring over 2 ranks: 1 step x 1 us + (8000 + 24000) bytes x 1/2.
    EXPECT_EQ(group.end - group.start, 1000 + 16000) << "rank " << r;
  }
}

// A kernel running beside a collective loses the SMs the collective holds:
// 20 of 100 here, so it runs 20/80 of the overlap longer.
TEST(SimulatorTest, KernelsBesideACollectiveAreChargedItsSms) {
  for (const int held : {0, 20}) {
    SimOptions options;
    options.profile = TestProfile();
    options.profile.mutable_gpu()->set_sm_count(100);
    options.profile.mutable_fabric()->set_collective_sms(held);
    options.world_size = 2;
    options.trace = true;
    auto world = SimWorld::Create(options);
    ASSERT_OK(world.status());
    ASSERT_THAT((*world)->Run([](Runtime& rt) -> absl::Status {
      auto comm = rt.device().CreateStream("comm").value();
      auto compute = rt.device().CreateStream("compute").value();
      Buffer dev = rt.device().Allocate(400000, "dev").value();
      Buffer send = rt.device().Allocate(400000, "send").value();
      Buffer recv = rt.device().Allocate(800000, "recv").value();
      EXPECT_OK(rt.world().AllGather(
          *comm, TensorRef::Of(send, runtime::DType::kF32, 0, 100000),
          TensorRef::Of(recv, runtime::DType::kF32, 0, 200000), "ag"));
      EXPECT_OK(compute->Launch(Fill(dev, 100000, "kernel")));  // 400 us
      EXPECT_OK(rt.device().Synchronize());
      return absl::OkStatus();
    }),
                IsOk());
    const Trace& trace = (*world)->trace();
    for (int r = 0; r < 2; ++r) {
      const Span ag = StreamSpan(trace, r, "ag");
      const Span kernel = StreamSpan(trace, r, "kernel");
      const int64_t overlap = std::min(ag.end, kernel.start + 400000) -
                              std::max(ag.start, kernel.start);
      ASSERT_GT(overlap, 0) << "rank " << r;
      EXPECT_EQ(kernel.end - kernel.start, 400000 + (held ? overlap / 4 : 0))
          << "rank " << r << ", " << held << " SMs held";
    }
  }
}

// Every rank runs on a fiber: thousands of ranks meet in a collective
// several times; each round runs every rank once, the first in rank order
// (ties on the clock).
TEST(SimulatorTest, ThousandsOfRanksMeetInCollectives) {
  const int ranks = 3000;
  auto world = MakeWorld(ranks);
  std::vector<int> order;
  ASSERT_THAT(world->Run([&](Runtime& rt) -> absl::Status {
    auto s = rt.device().CreateStream("comm").value();
    Buffer buffer = rt.device().Allocate(4 * ranks, "b").value();
    for (int round = 0; round < 3; ++round) {
      order.push_back(rt.rank());
      EXPECT_OK(rt.world().AllReduce(
          *s, TensorRef::Of(buffer, runtime::DType::kF32, 0, ranks),
          TensorRef::Of(buffer, runtime::DType::kF32, 0, ranks),
          runtime::ReduceOp::kSum, "ar"));
    }
    EXPECT_OK(s->Synchronize());
    return rt.device().Free(buffer);
  }),
              IsOk());
  ASSERT_EQ(order.size(), 3u * ranks);
  for (int i = 0; i < ranks; ++i) EXPECT_EQ(order[i], i);
  for (int round = 1; round < 3; ++round) {
    std::vector<int> in_round(order.begin() + round * ranks,
                              order.begin() + (round + 1) * ranks);
    std::sort(in_round.begin(), in_round.end());
    for (int i = 0; i < ranks; ++i) EXPECT_EQ(in_round[i], i);
  }
}

TEST(SimulatorTest, TooManySimulatedRanksIsAnErrorNamingTheLimit) {
  SimOptions options;
  options.profile = TestProfile();
  options.world_size = kMaxSimulatedRanks + 1;
  options.mode = SimMode::kTiming;
  auto world = SimWorld::Create(options);
  EXPECT_EQ(world.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      std::string(world.status().message()),
      ::testing::HasSubstr(absl::StrCat("at most ", kMaxSimulatedRanks)));
  // The symmetric shortcut simulates one rank of any world.
  options.world_size = 100000;
  options.symmetric = true;
  EXPECT_OK(SimWorld::Create(options).status());
}

TEST(SimulatorTest, Copy2DMovesRowsBetweenPitches) {
  auto world = MakeWorld(1, SimMode::kData);
  ASSERT_THAT(world->Run([](Runtime& rt) -> absl::Status {
    auto s = rt.device().CreateStream("s").value();
    Buffer src = rt.device().Allocate(6 * 4, "src").value();
    Buffer dst = rt.device().Allocate(16 * 4, "dst").value();
    Buffer host = rt.AllocateHost(16 * 4, HostMemoryKind::kPinned, "h").value();
    float* h = static_cast<float*>(host.data());
    runtime::HostTask fill;
    fill.label = "fill";
    fill.writes = {host.All()};
    fill.run = [h] {
      for (int i = 0; i < 6; ++i) h[i] = static_cast<float>(i + 1);
      return absl::OkStatus();
    };
    EXPECT_OK(rt.RunHostTask(fill));
    EXPECT_OK(s->Copy(src.All(), host.Slice(0, 24), "h2d"));
    EXPECT_OK(s->Memset(dst.All(), 0, "zero"));
    // Two rows of 3 floats, packed in src, 8 floats apart in dst.
    EXPECT_OK(s->Copy2D(dst.All(), 32, src.All(), 12, 12, 2, "2d"));
    EXPECT_OK(s->Copy(host.All(), dst.All(), "d2h"));
    EXPECT_OK(s->Synchronize());
    const std::vector<float> got(h, h + 16);
    EXPECT_THAT(got, ::testing::ElementsAre(1, 2, 3, 0, 0, 0, 0, 0, 4, 5, 6, 0,
                                            0, 0, 0, 0));
    EXPECT_FALSE(
        s->Copy2D(dst.All(), 32, src.All(), 12, 12, 3, "too many").ok());
    return absl::OkStatus();
  }),
              IsOk());
  EXPECT_TRUE(world->races().empty());
}

TEST(SimulatorTest, GroupsRendezvousOnlyWithTheirMembers) {
  auto world = MakeWorld(4, SimMode::kData);
  ASSERT_THAT(world->Run([](Runtime& rt) -> absl::Status {
    auto s = rt.device().CreateStream("comm").value();
    // Pairs {0, 1} and {2, 3}; ranks 2 and 3 arrive 100 us later.
    const std::vector<int> pair =
        rt.rank() < 2 ? std::vector<int>{0, 1} : std::vector<int>{2, 3};
    runtime::Communicator* comm = rt.Group(pair).value();
    EXPECT_EQ(comm->size(), 2);
    EXPECT_EQ(comm->rank(), rt.rank() % 2);
    Buffer buf = rt.device().Allocate(4, "x").value();  // 10 us
    Buffer host = rt.AllocateHost(4, HostMemoryKind::kPinned, "h").value();
    runtime::ops::Fill fill;  // each rank fills its rank id + 1
    fill.args.n = 1;
    fill.args.value = static_cast<float>(rt.rank() + 1);
    fill.x = TensorRef::Of(buf, runtime::DType::kF32, 0, 1);
    EXPECT_OK(s->Launch(KernelCall(fill, "fill")));
    runtime::HostTask wait;
    wait.label = "wait";
    wait.memory_bytes = rt.rank() < 2 ? 0 : 100000;
    EXPECT_OK(rt.RunHostTask(wait));
    const TensorRef x = TensorRef::Of(buf, runtime::DType::kF32, 0, 1);
    EXPECT_OK(comm->AllReduce(*s, x, x, runtime::ReduceOp::kSum, "pair sum"));
    EXPECT_OK(s->Copy(host.All(), buf.All(), "d2h"));
    EXPECT_OK(s->Synchronize());
    EXPECT_EQ(*static_cast<float*>(host.data()), rt.rank() < 2 ? 3.0f : 7.0f);
    EXPECT_FALSE(rt.Group({0, 2, 1}).ok());
    EXPECT_FALSE(rt.Group({(rt.rank() + 1) % 4}).ok());
    return absl::OkStatus();
  }),
              IsOk());
  // The first pair did not wait for the second.
  EXPECT_LT(StreamSpan(world->trace(), 0, "pair sum").start,
            StreamSpan(world->trace(), 2, "pair sum").start);
}

TEST(SimulatorTest, DeviceSynchronizeWaitsForDestroyedStreams) {
  auto world = MakeWorld(1, SimMode::kData);
  ASSERT_THAT(world->Run([](Runtime& rt) -> absl::Status {
    Buffer dev = rt.device().Allocate(400000, "dev").value();  // 10 us
    // 10 us + 4 ns pinning: 20004 ns.
    Buffer host = rt.AllocateHost(4, HostMemoryKind::kPinned, "h").value();
    {
      auto s = rt.device().CreateStream("temporary").value();
      // [25004, 425004] ns, then 4 bytes at 1 B/ns.
      EXPECT_OK(s->Launch(Fill(dev, 100000, "fill")));
      EXPECT_OK(s->Copy(host.All(), dev.Slice(0, 4), "d2h"));
    }  // destroyed with work in flight
    EXPECT_OK(rt.device().Synchronize());
    EXPECT_EQ(rt.NowNanos(), 425008);
    runtime::HostTask read;
    read.label = "read";
    read.reads = {host.All()};
    EXPECT_OK(rt.RunHostTask(read));
    EXPECT_EQ(*static_cast<float*>(host.data()), 1.0f);
    return absl::OkStatus();
  }),
              IsOk());
  EXPECT_TRUE(world->races().empty());
}

TEST(SimulatorTest, HostTasksCostedFromHostProfile) {
  auto world = MakeWorld(1);
  ASSERT_THAT(world->Run([](Runtime& rt) -> absl::Status {
    runtime::HostTask task;
    task.label = "one thread";
    task.memory_bytes = 8000;  // 1 GB/s per thread: 8 us
    task.threads = 1;
    EXPECT_OK(rt.RunHostTask(task));
    EXPECT_EQ(rt.NowNanos(), 8000);
    task.label = "four threads";
    task.threads = 4;  // 4 x 1 GB/s, capped at 2 GB/s per rank: 4 us
    EXPECT_OK(rt.RunHostTask(task));
    EXPECT_EQ(rt.NowNanos(), 12000);
    task.label = "compute bound";
    task.memory_bytes = 0;
    task.flops = 40000;  // 4 threads x 1 GFLOP/s: 10 us
    EXPECT_OK(rt.RunHostTask(task));
    EXPECT_EQ(rt.NowNanos(), 22000);
    task.threads = 64;  // capped at the 4 cores of the rank
    EXPECT_OK(rt.RunHostTask(task));
    EXPECT_EQ(rt.NowNanos(), 32000);
    return absl::OkStatus();
  }),
              IsOk());
}

TEST(SimulatorTest, DataModeComputesAndTimingModeDoesNot) {
  for (SimMode mode : {SimMode::kData, SimMode::kTiming}) {
    auto world = MakeWorld(1, mode);
    ASSERT_THAT(world->Run([mode](Runtime& rt) -> absl::Status {
      EXPECT_EQ(rt.computes_values(), mode == SimMode::kData);
      auto s = rt.device().CreateStream("s").value();
      Buffer dev = rt.device().Allocate(16, "dev").value();
      Buffer host = rt.AllocateHost(16, HostMemoryKind::kPinned, "h").value();
      EXPECT_OK(s->Launch(Fill(dev, 4, "fill")));
      EXPECT_OK(s->Copy(host.All(), dev.All(), "d2h"));
      EXPECT_OK(s->Synchronize());
      if (mode == SimMode::kData) {
        EXPECT_EQ(
            host.data() != nullptr ? static_cast<float*>(host.data())[3] : 0.0f,
            1.0f);
      } else {
        EXPECT_EQ(host.data(), nullptr);
      }
      return absl::OkStatus();
    }),
                IsOk());
  }
}

TEST(SimulatorTest, DeadlockIsReportedWithTheCollective) {
  auto world = MakeWorld(2);
  const absl::Status status = world->Run([](Runtime& rt) -> absl::Status {
    auto s = rt.device().CreateStream("comm").value();
    Buffer buf = rt.device().Allocate(8, "buf").value();
    if (rt.rank() == 1) return absl::OkStatus();  // never joins
    return rt.world().AllReduce(*s,
                                TensorRef::Of(buf, runtime::DType::kF32, 0, 2),
                                TensorRef::Of(buf, runtime::DType::kF32, 0, 2),
                                runtime::ReduceOp::kSum, "lonely");
  });
  EXPECT_THAT(status, ::zero3::testing::StatusIs(
                          absl::StatusCode::kAborted,
                          ::testing::AllOf(::testing::HasSubstr("lonely"),
                                           ::testing::HasSubstr("finished"))));
}

TEST(SimulatorTest, MismatchedCollectivesAreAnError) {
  auto world = MakeWorld(2);
  const absl::Status status = world->Run([](Runtime& rt) -> absl::Status {
    auto s = rt.device().CreateStream("comm").value();
    Buffer buf = rt.device().Allocate(64, "buf").value();
    const int64_t n = rt.rank() == 0 ? 2 : 4;
    auto ref = TensorRef::Of(buf, runtime::DType::kF32, 0, n);
    return rt.world().AllReduce(*s, ref, ref, runtime::ReduceOp::kSum,
                                absl::StrCat("ar", rt.rank()));
  });
  EXPECT_THAT(status,
              ::zero3::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                         ::testing::HasSubstr("mismatch")));
}

// One multi-rank scenario with copies, kernels and collectives.
absl::Status Scenario(Runtime& rt) {
  auto compute = rt.device().CreateStream("compute").value();
  auto comm = rt.device().CreateStream("comm").value();
  auto ev = rt.device().CreateEvent().value();
  Buffer a = rt.device().Allocate(40000, "a").value();
  Buffer b = rt.device().Allocate(40000 * rt.world_size(), "b").value();
  Buffer h = rt.AllocateHost(40000, HostMemoryKind::kPinned, "h").value();
  for (int step = 0; step < 3; ++step) {
    ZR_RETURN_IF_ERROR(compute->Launch(Fill(a, 10000, "fill")));
    ZR_RETURN_IF_ERROR(compute->Record(*ev));
    ZR_RETURN_IF_ERROR(comm->Wait(*ev));
    ZR_RETURN_IF_ERROR(rt.world().AllGather(
        *comm, TensorRef::Of(a, runtime::DType::kF32, 0, 10000),
        TensorRef::Of(b, runtime::DType::kF32, 0, 10000 * rt.world_size()),
        "ag"));
    ZR_RETURN_IF_ERROR(comm->Copy(h.All(), b.Slice(0, 40000), "d2h"));
    ZR_RETURN_IF_ERROR(comm->Synchronize());
  }
  return absl::OkStatus();
}

std::string RunScenario(double jitter, uint64_t seed) {
  SimOptions options;
  options.profile = TestProfile();
  options.world_size = 3;
  options.trace = true;
  options.jitter = jitter;
  options.seed = seed;
  auto world = SimWorld::Create(options).value();
  ZR_CHECK_OK(world->Run(Scenario));
  return world->trace().ToJson();
}

TEST(SimulatorTest, SameInputsGiveByteIdenticalTraces) {
  const std::string a = RunScenario(0, 0);
  const std::string b = RunScenario(0, 0);
  EXPECT_EQ(a, b);
  EXPECT_GT(a.size(), 1000u);
}

TEST(SimulatorTest, JitterWithAFixedSeedRepeatsExactly) {
  const std::string plain = RunScenario(0, 0);
  const std::string a = RunScenario(0.2, 7);
  const std::string b = RunScenario(0.2, 7);
  const std::string c = RunScenario(0.2, 8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, plain);
  EXPECT_NE(a, c);
}

TEST(SimulatorTest, SymmetricShortcutMatchesFullSimulation) {
  for (int ranks : {2, 4}) {
    SimOptions options;
    options.profile = TestProfile();
    options.world_size = ranks;
    options.mode = SimMode::kTiming;
    auto full = SimWorld::Create(options).value();
    ASSERT_THAT(full->Run(Scenario), IsOk());
    options.symmetric = true;
    auto sym = SimWorld::Create(options).value();
    ASSERT_THAT(sym->Run(Scenario), IsOk());
    EXPECT_EQ(sym->simulated_ranks(), 1);
    for (int r = 0; r < ranks; ++r) {
      EXPECT_EQ(full->stats(r).host_now_ns, sym->stats(0).host_now_ns);
    }
  }
}

TEST(SimulatorTest, CalendarsAndHistoryDoNotGrowWithRetiredOps) {
  SimOptions options;
  options.profile = TestProfile();
  options.mode = SimMode::kTiming;
  auto world = SimWorld::Create(options).value();
  ASSERT_THAT(world->Run([](Runtime& rt) -> absl::Status {
    auto s = rt.device().CreateStream("s").value();
    Buffer dev = rt.device().Allocate(4000, "dev").value();
    for (int i = 0; i < 20000; ++i) {
      ZR_RETURN_IF_ERROR(s->Launch(Fill(dev, 1000, "k")));
      if (i % 10 == 9) ZR_RETURN_IF_ERROR(s->Synchronize());
    }
    return absl::OkStatus();
  }),
              IsOk());
  EXPECT_EQ(world->total_ops(), 20000);
}

}  // namespace
}  // namespace sim
}  // namespace zero3
