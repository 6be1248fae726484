// Copyright 2026 The zero3 Authors.
//
// The race detector, driven through the simulator as the engine drives it.

#include "sim/race_detector.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "core/runtime/runtime.h"
#include "core/util/check.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/simulator.h"
#include "sim/testing/test_profile.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace sim {
namespace {

using runtime::Buffer;
using runtime::DType;
using runtime::HostMemoryKind;
using runtime::KernelCall;
using runtime::Runtime;
using runtime::TensorRef;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::zero3::testing::IsOk;
using ::zero3::testing::IsOkAndHolds;

std::vector<RaceReport> RunAndCollect(const runtime::RankFunction& fn,
                                      bool strict = false, int ranks = 1) {
  SimOptions options;
  options.profile = TestProfile();
  options.mode = SimMode::kData;
  options.strict = strict;
  options.world_size = ranks;
  auto world = SimWorld::Create(options).value();
  ZR_CHECK_OK(world->Run(fn));
  return world->races();
}

std::vector<std::string> Messages(const std::vector<RaceReport>& reports) {
  std::vector<std::string> out;
  for (const RaceReport& r : reports) out.push_back(r.message);
  return out;
}

KernelCall Fill(const Buffer& b, int64_t floats, std::string label) {
  runtime::ops::Fill op;
  op.args.n = floats;
  op.args.value = 2.0f;
  op.x = TensorRef::Of(b, DType::kF32, 0, floats);
  return KernelCall(op, std::move(label));
}

// y += x, reading x.
KernelCall Consume(const Buffer& x, const Buffer& y, int64_t floats,
                   std::string label) {
  runtime::ops::Accumulate op;
  op.args.n = floats;
  op.x = TensorRef::Of(x, DType::kF32, 0, floats);
  op.y = TensorRef::Of(y, DType::kF32, 0, floats);
  return KernelCall(op, std::move(label));
}

runtime::HostTask ReadTask(const Buffer& b, std::string label) {
  runtime::HostTask t;
  t.label = std::move(label);
  t.reads = {b.All()};
  t.memory_bytes = b.bytes();
  return t;
}

// kQueryOnce: one Event::Query, made before the copy is done (false);
// kQueryUntilDone: Event::Query polled until it returns true.
enum class Barrier {
  kNone,
  kStreamSync,
  kEventSync,
  kQueryOnce,
  kQueryUntilDone
};

// The motivating race: gradients copied asynchronously into pinned host
// memory on the reduce stream, then read by the host optimizer.
std::vector<RaceReport> GradOffload(Barrier barrier) {
  return RunAndCollect([barrier](Runtime& rt) -> absl::Status {
    auto compute = rt.device().CreateStream("compute").value();
    auto reduce = rt.device().CreateStream("reduce").value();
    auto grads_ready = rt.device().CreateEvent().value();
    auto copied = rt.device().CreateEvent().value();
    Buffer grad = rt.device().Allocate(4096, "device grad").value();
    Buffer host =
        rt.AllocateHost(4096, HostMemoryKind::kPinned, "host fp32 grads")
            .value();
    EXPECT_OK(compute->Launch(Fill(grad, 1024, "backward")));
    EXPECT_OK(compute->Record(*grads_ready));
    EXPECT_OK(reduce->Wait(*grads_ready));
    EXPECT_OK(reduce->Copy(host.All(), grad.All(), "grad D2H"));
    if (barrier == Barrier::kStreamSync) {
      EXPECT_OK(reduce->Synchronize());
    }
    if (barrier == Barrier::kEventSync) {
      EXPECT_OK(reduce->Record(*copied));
      EXPECT_OK(copied->Synchronize());
    }
    if (barrier == Barrier::kQueryOnce) {
      EXPECT_OK(reduce->Record(*copied));
      EXPECT_THAT(copied->Query(), IsOkAndHolds(false));
    }
    if (barrier == Barrier::kQueryUntilDone) {
      EXPECT_OK(reduce->Record(*copied));
      int queries = 1;
      while (!copied->Query().value()) ++queries;
      EXPECT_GT(queries, 1) << "the first query came before the copy ended";
    }
    EXPECT_OK(rt.RunHostTask(ReadTask(host, "host adamw")));
    return absl::OkStatus();
  });
}

TEST(RaceDetectorTest, AsyncD2HReadByHostWithoutSyncIsARace) {
  const std::vector<RaceReport> reports = GradOffload(Barrier::kNone);
  ASSERT_EQ(reports.size(), 1u) << absl::StrJoin(Messages(reports), "\n");
  const RaceReport& r = reports[0];
  EXPECT_EQ(r.kind, RaceReport::Kind::kRace);
  EXPECT_EQ(r.buffer, "host fp32 grads");
  EXPECT_EQ(r.first.label, "grad D2H");
  EXPECT_TRUE(r.first_is_write);
  EXPECT_EQ(r.second.label, "host adamw");
  EXPECT_FALSE(r.second_is_write);
  EXPECT_THAT(r.message,
              AllOf(HasSubstr("host fp32 grads"), HasSubstr("grad D2H"),
                    HasSubstr("host adamw"), HasSubstr("stream 'reduce'"),
                    HasSubstr("host")));
}

TEST(RaceDetectorTest, StreamSynchronizeOrdersTheRead) {
  EXPECT_THAT(Messages(GradOffload(Barrier::kStreamSync)), IsEmpty());
}

TEST(RaceDetectorTest, EventRecordAndHostEventSyncOrdersTheRead) {
  EXPECT_THAT(Messages(GradOffload(Barrier::kEventSync)), IsEmpty());
}

TEST(RaceDetectorTest, EventQueryThatReturnedTrueOrdersTheRead) {
  EXPECT_THAT(Messages(GradOffload(Barrier::kQueryUntilDone)), IsEmpty());
}

TEST(RaceDetectorTest, EventQueryThatReturnedFalseOrdersNothing) {
  const std::vector<RaceReport> reports = GradOffload(Barrier::kQueryOnce);
  ASSERT_EQ(reports.size(), 1u) << absl::StrJoin(Messages(reports), "\n");
  EXPECT_EQ(reports[0].first.label, "grad D2H");
  EXPECT_EQ(reports[0].second.label, "host adamw");
}

// A gathered-parameter buffer reused by the next all-gather while a kernel
// still reads it.
std::vector<RaceReport> GatherReuse(bool wait_for_reader) {
  return RunAndCollect(
      [wait_for_reader](Runtime& rt) -> absl::Status {
        auto compute = rt.device().CreateStream("compute").value();
        auto gather = rt.device().CreateStream("allgather").value();
        auto read_done = rt.device().CreateEvent().value();
        Buffer shard = rt.device().Allocate(512, "shard").value();
        Buffer full = rt.device().Allocate(1024, "gathered params").value();
        Buffer out = rt.device().Allocate(1024, "activations").value();
        const auto s = TensorRef::Of(shard, DType::kF32, 0, 128);
        const auto f = TensorRef::Of(full, DType::kF32, 0, 256);
        EXPECT_OK(gather->Launch(Fill(shard, 128, "init shard")));
        EXPECT_OK(compute->Launch(Fill(out, 256, "init out")));
        EXPECT_OK(rt.world().AllGather(*gather, s, f, "gather layer 0"));
        auto gathered = rt.device().CreateEvent().value();
        EXPECT_OK(gather->Record(*gathered));
        EXPECT_OK(compute->Wait(*gathered));
        EXPECT_OK(compute->Launch(Consume(full, out, 256, "layer 0 forward")));
        if (wait_for_reader) {
          EXPECT_OK(compute->Record(*read_done));
          EXPECT_OK(gather->Wait(*read_done));
        }
        EXPECT_OK(rt.world().AllGather(*gather, s, f, "gather layer 1"));
        EXPECT_OK(rt.device().Synchronize());
        return absl::OkStatus();
      },
      false, 2);
}

TEST(RaceDetectorTest, BufferReusedByNextAllGatherBeforeReaderFinished) {
  const std::vector<RaceReport> reports = GatherReuse(false);
  ASSERT_FALSE(reports.empty());
  EXPECT_THAT(reports[0].message,
              AllOf(HasSubstr("gathered params"), HasSubstr("layer 0 forward"),
                    HasSubstr("gather layer 1")));
}

TEST(RaceDetectorTest, EventFromReaderToNextAllGatherOrdersReuse) {
  EXPECT_THAT(Messages(GatherReuse(true)), IsEmpty());
}

TEST(RaceDetectorTest, FreeWhileQueuedWorkUsesTheBuffer) {
  const auto reports = RunAndCollect([](Runtime& rt) -> absl::Status {
    auto s = rt.device().CreateStream("compute").value();
    Buffer b = rt.device().Allocate(4096, "scratch").value();
    EXPECT_OK(s->Launch(Fill(b, 1024, "fill scratch")));
    EXPECT_OK(rt.device().Free(b));
    return absl::OkStatus();
  });
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].kind, RaceReport::Kind::kFreeWhileInUse);
  EXPECT_THAT(reports[0].message,
              AllOf(HasSubstr("scratch"), HasSubstr("fill scratch")));
}

TEST(RaceDetectorTest, FreeAfterSynchronizeIsFine) {
  EXPECT_THAT(Messages(RunAndCollect([](Runtime& rt) -> absl::Status {
                auto s = rt.device().CreateStream("compute").value();
                Buffer b = rt.device().Allocate(4096, "scratch").value();
                EXPECT_OK(s->Launch(Fill(b, 1024, "fill scratch")));
                EXPECT_OK(s->Synchronize());
                EXPECT_OK(rt.device().Free(b));
                return absl::OkStatus();
              })),
              IsEmpty());
}

TEST(RaceDetectorTest, UseAfterFree) {
  const auto reports = RunAndCollect([](Runtime& rt) -> absl::Status {
    auto s = rt.device().CreateStream("compute").value();
    Buffer b = rt.device().Allocate(4096, "scratch").value();
    EXPECT_OK(rt.device().Free(b));
    // The handle outlives the allocation; in data mode the bytes are gone,
    // so only timing mode could run it. The detector reports before running.
    runtime::ops::Fill op;
    op.args.n = 0;  // touches no bytes: nothing to run, still an access
    op.x = TensorRef(b.Slice(0, 4), DType::kF32);
    EXPECT_OK(s->Launch(KernelCall(op, "late fill")));
    return absl::OkStatus();
  });
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].kind, RaceReport::Kind::kUseAfterFree);
  EXPECT_THAT(reports[0].message,
              AllOf(HasSubstr("scratch"), HasSubstr("late fill")));
}

TEST(RaceDetectorTest, ReadOfNeverWrittenBytes) {
  const auto reports = RunAndCollect([](Runtime& rt) -> absl::Status {
    auto s = rt.device().CreateStream("compute").value();
    Buffer dev = rt.device().Allocate(64, "uninitialized").value();
    Buffer host = rt.AllocateHost(64, HostMemoryKind::kPinned, "h").value();
    EXPECT_OK(s->Launch(Fill(dev, 8, "half")));  // first 32 bytes only
    EXPECT_OK(s->Copy(host.All(), dev.All(), "d2h"));
    EXPECT_OK(s->Synchronize());
    return absl::OkStatus();
  });
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].kind, RaceReport::Kind::kUninitializedRead);
  EXPECT_EQ(reports[0].offset, 32);
  EXPECT_THAT(reports[0].message,
              AllOf(HasSubstr("uninitialized"), HasSubstr("d2h")));
}

std::vector<RaceReport> PageableGradOffload(bool strict) {
  return RunAndCollect(
      [](Runtime& rt) -> absl::Status {
        auto reduce = rt.device().CreateStream("reduce").value();
        Buffer grad = rt.device().Allocate(4096, "device grad").value();
        Buffer host =
            rt.AllocateHost(4096, HostMemoryKind::kPageable, "host fp32 grads")
                .value();
        EXPECT_OK(reduce->Launch(Fill(grad, 1024, "backward")));
        EXPECT_OK(reduce->Copy(host.All(), grad.All(), "grad D2H"));
        EXPECT_OK(rt.RunHostTask(ReadTask(host, "host adamw")));
        return absl::OkStatus();
      },
      strict);
}

TEST(RaceDetectorTest, PageableCopySynchronizesTheHostOutsideStrictMode) {
  EXPECT_THAT(Messages(PageableGradOffload(false)), IsEmpty());
}

TEST(RaceDetectorTest, StrictModeReportsThePageableVariant) {
  const auto reports = PageableGradOffload(true);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_THAT(reports[0].message,
              AllOf(HasSubstr("host fp32 grads"), HasSubstr("grad D2H"),
                    HasSubstr("host adamw")));
}

TEST(RaceDetectorTest, HistoryIsPrunedAtSynchronize) {
  RaceDetector d(0);
  const int s = d.AddAgent("stream");
  for (int i = 0; i < 100; ++i) {
    d.OnAllocate(i + 1, "b", 64, true);
    d.Join(s, 0);
    d.Tick(s);
    d.OnAccess(i + 1, 0, 64, true, OpInfo{"w", s, 0, 0});
  }
  EXPECT_EQ(d.history_size(), 100);
  d.Join(0, s);
  d.Prune();
  EXPECT_EQ(d.history_size(), 0);
  EXPECT_TRUE(d.reports().empty());
}

}  // namespace
}  // namespace sim
}  // namespace zero3
