// Copyright 2026 The zero3 Authors.
//
// The CUDA backend on a real GPU: what the conformance suite does not pin
// down (the caching allocator's reuse and its safety, error messages,
// pinned accounting and limits, collectives on several GPUs in bf16 and
// fp16). Skips itself where no GPU is visible.

#include "backends/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/collective_checks.h"
#include "backends/cuda/cuda_rank.h"
#include "core/kernels/dtype.h"
#include "core/util/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace cuda {
namespace {

using runtime::Buffer;
using runtime::HostMemoryKind;
using runtime::Stream;
using runtime::TensorRef;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::zero3::testing::IsOk;
using ::zero3::testing::StatusIs;

// Holds a stream at a host callback until Release(), so the test decides
// when the work queued behind it runs. Released on destruction, so a
// failing test cannot leave the GPU stuck.
class StreamGate {
 public:
  explicit StreamGate(Stream& stream) {
    auto* s = dynamic_cast<CudaStream*>(&stream);
    ok_ = s != nullptr && cudaLaunchHostFunc(s->raw(), &StreamGate::Hold,
                                             &open_) == cudaSuccess;
  }
  ~StreamGate() { Release(); }
  void Release() { open_.store(true); }
  bool ok() const { return ok_; }

 private:
  static void Hold(void* open) {
    auto* flag = static_cast<std::atomic<bool>*>(open);
    while (!flag->load()) std::this_thread::yield();
  }
  std::atomic<bool> open_{false};
  bool ok_ = false;
};

class CudaBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (VisibleCudaDevices() == 0) GTEST_SKIP() << "no GPU visible";
    CudaRuntimeOptions options;
    options.max_pinned_bytes = max_pinned_bytes_;
    ASSERT_OK_AND_ASSIGN(rt_, CudaRuntime::Create(options));
  }
  void TearDown() override {
    if (rt_ != nullptr) {
      EXPECT_THAT(rt_->Shutdown(), IsOk());
    }
  }

  std::vector<uint8_t> HostBytes(const Buffer& host) {
    const auto* p = static_cast<const uint8_t*>(host.data());
    return std::vector<uint8_t>(p, p + host.bytes());
  }

  int64_t max_pinned_bytes_ = 0;
  std::unique_ptr<CudaRuntime> rt_;
};

TEST_F(CudaBackendTest, Device) {
  EXPECT_FALSE(rt_->device().name().empty());
  EXPECT_GT(rt_->device().total_memory_bytes(), int64_t{1} << 30);
  EXPECT_EQ(rt_->rank(), 0);
  EXPECT_EQ(rt_->world_size(), 1);
  EXPECT_TRUE(rt_->computes_values());
  const int64_t t0 = rt_->NowNanos();
  EXPECT_GE(rt_->NowNanos(), t0);
}

TEST_F(CudaBackendTest, CachedBlocksAreReusedWithoutCudaMalloc) {
  CudaDevice& device = rt_->cuda_device();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> stream,
                       device.CreateStream("s"));
  // A "step" that allocates, uses and frees the same sizes, three times.
  int64_t reserves_after_first = 0;
  for (int step = 0; step < 3; ++step) {
    std::vector<Buffer> buffers;
    for (int64_t size : {int64_t{100}, int64_t{3} << 20, int64_t{200} << 20}) {
      ASSERT_OK_AND_ASSIGN(Buffer b, device.Allocate(size, "step buffer"));
      ASSERT_THAT(stream->Memset(b.All(), 0, "touch"), IsOk());
      buffers.push_back(b);
    }
    EXPECT_EQ(device.memory_stats().bytes_in_use, 100 + (203 << 20));
    for (const Buffer& b : buffers) ASSERT_THAT(device.Free(b), IsOk());
    ASSERT_THAT(stream->Synchronize(), IsOk());
    if (step == 0)
      reserves_after_first = device.allocator_stats().reserve_calls;
  }
  EXPECT_EQ(device.allocator_stats().reserve_calls, reserves_after_first);
  EXPECT_GE(device.allocator_stats().cache_hits, 6);
  EXPECT_EQ(device.memory_stats().bytes_in_use, 0);
  EXPECT_EQ(device.memory_stats().peak_bytes_in_use, 100 + (203 << 20));
}

// A buffer freed while queued work still uses it is not handed out again
// until that work is done.
TEST_F(CudaBackendTest, FreedBlockWaitsForQueuedWork) {
  CudaDevice& device = rt_->cuda_device();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> stream,
                       device.CreateStream("s"));
  ASSERT_OK_AND_ASSIGN(Buffer a, device.Allocate(1 << 20, "a"));
  // A second block of the class in the cache, so that nothing below needs
  // cudaMalloc while the stream is held.
  ASSERT_OK_AND_ASSIGN(Buffer spare, device.Allocate(1 << 20, "spare"));
  ASSERT_THAT(stream->Memset(spare.All(), 0, "spare"), IsOk());
  ASSERT_THAT(stream->Synchronize(), IsOk());
  ASSERT_THAT(device.Free(spare), IsOk());
  const int64_t reserves = device.allocator_stats().reserve_calls;
  {
    StreamGate gate(*stream);
    ASSERT_TRUE(gate.ok());
    ASSERT_THAT(stream->Memset(a.All(), 7, "queued behind the gate"), IsOk());
    ASSERT_THAT(device.Free(a), IsOk());
    // `a` is still to be written by the memset: the spare block comes back.
    ASSERT_OK_AND_ASSIGN(Buffer b, device.Allocate(1 << 20, "b"));
    EXPECT_NE(b.data(), a.data());
    EXPECT_EQ(b.data(), spare.data());
    ASSERT_THAT(device.Free(b), IsOk());
    gate.Release();
    ASSERT_THAT(stream->Synchronize(), IsOk());
  }
  // Once the work is done, both blocks are reusable without cudaMalloc.
  ASSERT_OK_AND_ASSIGN(Buffer c, device.Allocate(1 << 20, "c"));
  ASSERT_OK_AND_ASSIGN(Buffer d, device.Allocate(1 << 20, "d"));
  EXPECT_EQ(device.allocator_stats().reserve_calls, reserves);
  ASSERT_THAT(device.Free(c), IsOk());
  ASSERT_THAT(device.Free(d), IsOk());
}

// The same when the stream that uses the buffer is destroyed before the
// buffer is freed: its queued work still counts.
TEST_F(CudaBackendTest, FreedBlockWaitsForWorkOfADestroyedStream) {
  CudaDevice& device = rt_->cuda_device();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> keeper,
                       device.CreateStream("keeper"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> stream,
                       device.CreateStream("short-lived"));
  ASSERT_OK_AND_ASSIGN(Buffer a, device.Allocate(1 << 20, "a"));
  ASSERT_OK_AND_ASSIGN(Buffer spare, device.Allocate(1 << 20, "spare"));
  ASSERT_THAT(keeper->Memset(spare.All(), 0, "spare"), IsOk());
  ASSERT_THAT(keeper->Synchronize(), IsOk());
  ASSERT_THAT(device.Free(spare), IsOk());
  {
    StreamGate gate(*stream);
    ASSERT_TRUE(gate.ok());
    ASSERT_THAT(stream->Memset(a.All(), 7, "queued behind the gate"), IsOk());
    stream.reset();  // destroyed with its work still queued
    ASSERT_THAT(device.Free(a), IsOk());
    ASSERT_OK_AND_ASSIGN(Buffer b, device.Allocate(1 << 20, "b"));
    EXPECT_NE(b.data(), a.data());
    ASSERT_THAT(device.Free(b), IsOk());
    gate.Release();
    ASSERT_THAT(device.Synchronize(), IsOk());
  }
  const int64_t reserves = device.allocator_stats().reserve_calls;
  ASSERT_OK_AND_ASSIGN(Buffer c, device.Allocate(1 << 20, "c"));
  ASSERT_OK_AND_ASSIGN(Buffer d, device.Allocate(1 << 20, "d"));
  EXPECT_EQ(device.allocator_stats().reserve_calls, reserves);
  ASSERT_THAT(device.Free(c), IsOk());
  ASSERT_THAT(device.Free(d), IsOk());
}

TEST_F(CudaBackendTest, OutOfMemoryIsResourceExhaustedAndRecoverable) {
  CudaDevice& device = rt_->cuda_device();
  EXPECT_THAT(device.Allocate(device.total_memory_bytes() + 1, "too much"),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("too much"), HasSubstr("GPU 0"))));
  // The whole device: the context itself holds some, so cudaMalloc fails.
  EXPECT_THAT(device.Allocate(device.total_memory_bytes(), "everything"),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("everything"), HasSubstr("in use by"),
                             HasSubstr("the driver reports"))));
  EXPECT_EQ(device.memory_stats().allocations, 0);
  // The failure left no error behind.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> stream,
                       device.CreateStream("s"));
  ASSERT_OK_AND_ASSIGN(Buffer b, device.Allocate(4096, "after"));
  ASSERT_THAT(stream->Memset(b.All(), 1, "after"), IsOk());
  ASSERT_THAT(stream->Synchronize(), IsOk());
  ASSERT_THAT(device.Free(b), IsOk());
}

TEST_F(CudaBackendTest, FreeOfStaleHandle) {
  CudaDevice& device = rt_->cuda_device();
  ASSERT_OK_AND_ASSIGN(Buffer a, device.Allocate(4096, "a"));
  ASSERT_THAT(device.Free(a), IsOk());
  EXPECT_THAT(device.Free(a), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(CudaBackendTest, HostMemoryIsZeroFilledAndPinnedIsAccounted) {
  for (HostMemoryKind kind :
       {HostMemoryKind::kPinned, HostMemoryKind::kPageable}) {
    for (int64_t size : {int64_t{1}, int64_t{5000}, (int64_t{3} << 20) + 1}) {
      const int64_t pinned_before = rt_->pinned_memory().stats().bytes_in_use;
      ASSERT_OK_AND_ASSIGN(Buffer b, rt_->AllocateHost(size, kind, "host"));
      EXPECT_EQ(b.space(), kind == HostMemoryKind::kPinned
                               ? runtime::MemorySpace::kPinnedHost
                               : runtime::MemorySpace::kPageableHost);
      EXPECT_EQ(HostBytes(b), std::vector<uint8_t>(size, 0));
      EXPECT_EQ(rt_->pinned_memory().stats().bytes_in_use,
                pinned_before + (kind == HostMemoryKind::kPinned ? size : 0));
      cudaPointerAttributes attributes;
      ASSERT_EQ(cudaPointerGetAttributes(&attributes, b.data()), cudaSuccess);
      EXPECT_EQ(attributes.type, kind == HostMemoryKind::kPinned
                                     ? cudaMemoryTypeHost
                                     : cudaMemoryTypeUnregistered);
      ASSERT_THAT(rt_->FreeHost(b), IsOk());
      EXPECT_EQ(rt_->pinned_memory().stats().bytes_in_use, pinned_before);
    }
  }
  Buffer stale;
  EXPECT_THAT(rt_->FreeHost(stale),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

class CudaBackendPinnedLimitTest : public CudaBackendTest {
 protected:
  CudaBackendPinnedLimitTest() { max_pinned_bytes_ = 1 << 20; }
};

TEST_F(CudaBackendPinnedLimitTest, PinnedLimitIsEnforced) {
  ASSERT_OK_AND_ASSIGN(
      Buffer a, rt_->AllocateHost(600 << 10, HostMemoryKind::kPinned, "a"));
  EXPECT_THAT(rt_->AllocateHost(600 << 10, HostMemoryKind::kPinned, "b"),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("for b"), HasSubstr("limit"))));
  // Pageable memory is not limited.
  ASSERT_OK_AND_ASSIGN(
      Buffer c, rt_->AllocateHost(4 << 20, HostMemoryKind::kPageable, "c"));
  ASSERT_THAT(rt_->FreeHost(a), IsOk());
  ASSERT_THAT(rt_->FreeHost(c), IsOk());
}

TEST_F(CudaBackendTest, CopiesInEveryDirection) {
  CudaDevice& device = rt_->cuda_device();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> s, device.CreateStream("s"));
  for (HostMemoryKind kind :
       {HostMemoryKind::kPinned, HostMemoryKind::kPageable}) {
    for (int64_t size : {int64_t{1}, int64_t{777}, (int64_t{5} << 20) + 5}) {
      ASSERT_OK_AND_ASSIGN(Buffer src, rt_->AllocateHost(size + 8, kind, "s"));
      auto* p = static_cast<uint8_t*>(src.data());
      for (int64_t i = 0; i < size + 8; ++i) p[i] = static_cast<uint8_t>(i * 7);
      ASSERT_OK_AND_ASSIGN(Buffer d1, device.Allocate(size + 64, "d1"));
      ASSERT_OK_AND_ASSIGN(Buffer d2, device.Allocate(size + 64, "d2"));
      ASSERT_OK_AND_ASSIGN(Buffer dst, rt_->AllocateHost(size + 8, kind, "d"));
      ASSERT_OK_AND_ASSIGN(
          Buffer dst2,
          rt_->AllocateHost(size, HostMemoryKind::kPageable, "d2"));
      ASSERT_THAT(s->Copy(d1.Slice(13, size), src.Slice(3, size), "h2d"),
                  IsOk());
      ASSERT_THAT(s->Copy(d2.Slice(1, size), d1.Slice(13, size), "d2d"),
                  IsOk());
      ASSERT_THAT(s->Copy(dst.Slice(5, size), d2.Slice(1, size), "d2h"),
                  IsOk());
      ASSERT_THAT(s->Copy(dst2.All(), dst.Slice(5, size), "h2h"), IsOk());
      ASSERT_THAT(s->Synchronize(), IsOk());
      const auto* q = static_cast<const uint8_t*>(dst.data());
      const auto* q2 = static_cast<const uint8_t*>(dst2.data());
      for (int64_t i = 0; i < size; ++i) {
        ASSERT_EQ(q[5 + i], p[3 + i]) << i;
        ASSERT_EQ(q2[i], p[3 + i]) << i;
      }
      EXPECT_EQ(q[0], 0);
      for (const Buffer& h : {src, dst, dst2}) {
        ASSERT_THAT(rt_->FreeHost(h), IsOk());
      }
      ASSERT_THAT(device.Free(d1), IsOk());
      ASSERT_THAT(device.Free(d2), IsOk());
    }
  }
  ASSERT_OK_AND_ASSIGN(Buffer a, device.Allocate(16, "a"));
  ASSERT_OK_AND_ASSIGN(Buffer b, device.Allocate(12, "b"));
  EXPECT_THAT(s->Copy(a.All(), b.All(), "mismatch"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("destination has 16 bytes, source 12")));
}

TEST_F(CudaBackendTest, Copy2DAndMemset) {
  CudaDevice& device = rt_->cuda_device();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> s, device.CreateStream("s"));
  // 4 rows of 3 bytes from pitch 5 to pitch 4.
  ASSERT_OK_AND_ASSIGN(Buffer host,
                       rt_->AllocateHost(20, HostMemoryKind::kPinned, "host"));
  auto* h = static_cast<uint8_t*>(host.data());
  for (int i = 0; i < 20; ++i) h[i] = static_cast<uint8_t>(i + 1);
  ASSERT_OK_AND_ASSIGN(Buffer src, device.Allocate(20, "src"));
  ASSERT_OK_AND_ASSIGN(Buffer dst, device.Allocate(16, "dst"));
  ASSERT_THAT(s->Copy(src.All(), host.All(), "up"), IsOk());
  ASSERT_THAT(s->Memset(dst.All(), 0xEE, "fill"), IsOk());
  ASSERT_THAT(s->Copy2D(dst.All(), 4, src.All(), 5, 3, 4, "2d"), IsOk());
  ASSERT_OK_AND_ASSIGN(Buffer out,
                       rt_->AllocateHost(16, HostMemoryKind::kPinned, "out"));
  ASSERT_THAT(s->Copy(out.All(), dst.All(), "down"), IsOk());
  ASSERT_THAT(s->Synchronize(), IsOk());
  const std::vector<uint8_t> want = {1,  2,  3,  0xEE, 6,  7,  8,  0xEE,
                                     11, 12, 13, 0xEE, 16, 17, 18, 0xEE};
  EXPECT_EQ(HostBytes(out), want);
  EXPECT_THAT(s->Copy2D(dst.All(), 4, src.All(), 5, 5, 4, "too wide"),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(s->Copy2D(host.All(), 4, src.All(), 5, 3, 4, "host"),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(s->Memset(host.All(), 0, "host"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(CudaBackendTest, EventsOrderStreams) {
  CudaDevice& device = rt_->cuda_device();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> producer,
                       device.CreateStream("producer"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> consumer,
                       device.CreateStream("consumer"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<runtime::Event> produced,
                       device.CreateEvent());
  // Never recorded: complete.
  ASSERT_THAT(produced->Synchronize(), IsOk());
  ASSERT_THAT(consumer->Wait(*produced), IsOk());

  ASSERT_OK_AND_ASSIGN(Buffer x, device.Allocate(1 << 20, "x"));
  ASSERT_OK_AND_ASSIGN(
      Buffer host, rt_->AllocateHost(1 << 20, HostMemoryKind::kPinned, "h"));
  {
    StreamGate gate(*producer);
    ASSERT_TRUE(gate.ok());
    ASSERT_THAT(producer->Memset(x.All(), 0x5A, "x"), IsOk());
    ASSERT_THAT(producer->Record(*produced), IsOk());
    ASSERT_THAT(consumer->Wait(*produced), IsOk());
    ASSERT_THAT(consumer->Copy(host.All(), x.All(), "x to host"), IsOk());
    // The consumer cannot have copied yet: the producer is held.
    EXPECT_EQ(static_cast<uint8_t*>(host.data())[0], 0);
    gate.Release();
  }
  ASSERT_THAT(consumer->Synchronize(), IsOk());
  EXPECT_EQ(HostBytes(host), std::vector<uint8_t>(1 << 20, 0x5A));
}

TEST_F(CudaBackendTest, TimedEventsNeedTimingAndCompletion) {
  CudaDevice& device = rt_->cuda_device();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> s, device.CreateStream("s"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<runtime::Event> start,
                       device.CreateTimedEvent());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<runtime::Event> end,
                       device.CreateTimedEvent());
  // Never recorded.
  EXPECT_THAT(device.ElapsedNanos(*start, *end),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<runtime::Event> plain,
                       device.CreateEvent());
  ASSERT_THAT(s->Record(*start), IsOk());
  ASSERT_THAT(s->Record(*plain), IsOk());
  ASSERT_THAT(plain->Synchronize(), IsOk());
  EXPECT_THAT(device.ElapsedNanos(*start, *plain),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(CudaBackendTest, OpTimingRecordsEveryOperationInOrder) {
  CudaDevice& device = rt_->cuda_device();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> s, device.CreateStream("s"));
  ASSERT_OK_AND_ASSIGN(Buffer x, device.Allocate(64 << 20, "x"));
  ASSERT_OK_AND_ASSIGN(Buffer y, device.Allocate(64 << 20, "y"));
  ASSERT_OK_AND_ASSIGN(
      Buffer host, rt_->AllocateHost(64 << 20, HostMemoryKind::kPinned, "h"));
  // Not timed: issued before timing starts.
  ASSERT_THAT(s->Memset(x.All(), 0, "before"), IsOk());
  EXPECT_THAT(device.TakeOpTimings(),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  ASSERT_THAT(device.StartOpTiming(), IsOk());
  ASSERT_THAT(s->Memset(x.All(), 1, "fill x"), IsOk());
  ASSERT_THAT(s->Copy(y.All(), x.All(), "x to y"), IsOk());
  ASSERT_THAT(s->Copy(host.All(), y.All(), "y to host"), IsOk());
  ASSERT_OK_AND_ASSIGN(std::vector<runtime::OpTiming> ops,
                       device.TakeOpTimings());
  ASSERT_EQ(ops.size(), 3u);
  const char* labels[] = {"fill x", "x to y", "y to host"};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(ops[i].stream, "s");
    EXPECT_EQ(ops[i].label, labels[i]);
    EXPECT_GE(ops[i].start_ns, 0);
    // Work of 64 MiB takes time, and a stream runs its work in order.
    EXPECT_GT(ops[i].end_ns, ops[i].start_ns) << labels[i];
    if (i > 0) {
      EXPECT_GE(ops[i].start_ns, ops[i - 1].end_ns) << labels[i];
    }
  }
  // 64 MiB over PCIe (at most ~64 GB/s) takes over a millisecond.
  EXPECT_GT(ops[2].end_ns - ops[2].start_ns, 500000);
  ASSERT_OK_AND_ASSIGN(ops, device.TakeOpTimings());
  EXPECT_TRUE(ops.empty());
  // Host tasks come back on the stream "host", timed by the host clock.
  runtime::HostTask task;
  task.label = "sleep";
  task.run = []() -> absl::Status {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return absl::OkStatus();
  };
  ASSERT_THAT(rt_->RunHostTask(task), IsOk());
  ASSERT_OK_AND_ASSIGN(ops, device.TakeOpTimings());
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].stream, "host");
  EXPECT_EQ(ops[0].label, "sleep");
  EXPECT_GE(ops[0].start_ns, 0);
  EXPECT_GE(ops[0].end_ns - ops[0].start_ns, 2000000);
}

TEST_F(CudaBackendTest, LaunchRejectsHostBuffers) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> s,
                       rt_->device().CreateStream("s"));
  ASSERT_OK_AND_ASSIGN(Buffer host,
                       rt_->AllocateHost(64, HostMemoryKind::kPinned, "h"));
  runtime::ops::Fill fill;
  fill.args.n = 16;
  fill.x = TensorRef::Of(host, runtime::DType::kF32, 0, 16);
  EXPECT_THAT(s->Launch(runtime::KernelCall(fill, "fill host")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("touches host buffer")));
}

TEST_F(CudaBackendTest, HostTasks) {
  ASSERT_OK_AND_ASSIGN(Buffer host,
                       rt_->AllocateHost(8, HostMemoryKind::kPageable, "h"));
  const std::thread::id caller = std::this_thread::get_id();
  int runs = 0;
  runtime::HostTask task;
  task.label = "write";
  task.writes = {host.All()};
  task.run = [&]() -> absl::Status {
    ++runs;
    EXPECT_EQ(std::this_thread::get_id(), caller);
    std::memset(host.data(), 3, 8);
    return absl::OkStatus();
  };
  ASSERT_THAT(rt_->RunHostTask(task), IsOk());
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(HostBytes(host), std::vector<uint8_t>(8, 3));
  task.run = [] { return absl::DataLossError("task failed"); };
  EXPECT_THAT(rt_->RunHostTask(task), StatusIs(absl::StatusCode::kDataLoss));
  ASSERT_OK_AND_ASSIGN(Buffer dev, rt_->device().Allocate(8, "d"));
  task.writes = {dev.All()};
  EXPECT_THAT(rt_->RunHostTask(task),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("writes device memory")));
}

// ---------------------------------------------------------------------------
// Collectives: data goes up and down by copies only, so these run without
// the CUDA kernels.

class CollectivesTest
    : public ::testing::TestWithParam<std::tuple<int, kernels::DType>> {};

TEST_P(CollectivesTest, ExactResults) {
  const auto [ranks, dtype] = GetParam();
  if (VisibleCudaDevices() < ranks) {
    GTEST_SKIP() << ranks << " GPUs needed, " << VisibleCudaDevices()
                 << " visible";
  }
  EXPECT_THAT(RunCudaRanksInProcess(ranks, CudaRankOptions(),
                                    [dtype = dtype](runtime::Runtime& rt) {
                                      return CheckCollectivesExactly(rt, dtype);
                                    }),
              IsOk());
}

INSTANTIATE_TEST_SUITE_P(
    RanksAndTypes, CollectivesTest,
    ::testing::Combine(::testing::Values(1, 2, 4),
                       ::testing::Values(kernels::DType::kF32,
                                         kernels::DType::kBF16,
                                         kernels::DType::kF16)),
    [](const ::testing::TestParamInfo<CollectivesTest::ParamType>& info) {
      return absl::StrCat(std::get<0>(info.param), "ranks_",
                          kernels::DTypeName(std::get<1>(info.param)));
    });

TEST(RunCudaRankTest, SingleProcessWithoutLauncher) {
  if (VisibleCudaDevices() == 0) GTEST_SKIP() << "no GPU visible";
  CudaRankOptions options;
  options.env = [](absl::string_view) { return std::nullopt; };
  int calls = 0;
  EXPECT_THAT(RunCudaRank(options,
                          [&](runtime::Runtime& rt) {
                            ++calls;
                            EXPECT_EQ(rt.world_size(), 1);
                            return absl::OkStatus();
                          }),
              IsOk());
  EXPECT_EQ(calls, 1);
  EXPECT_THAT(
      RunCudaRank(options,
                  [](runtime::Runtime&) {
                    return absl::InternalError("the step failed");
                  }),
      StatusIs(absl::StatusCode::kInternal, HasSubstr("the step failed")));
}

TEST(RunCudaRankTest, LocalRankBeyondTheGpus) {
  if (VisibleCudaDevices() == 0) GTEST_SKIP() << "no GPU visible";
  CudaRankOptions options;
  const std::string local = std::to_string(VisibleCudaDevices());
  options.env = [local](absl::string_view name) -> std::optional<std::string> {
    if (name == "RANK") return std::string("0");
    if (name == "WORLD_SIZE") return std::string("1");
    if (name == "LOCAL_RANK") return local;
    return std::nullopt;
  };
  EXPECT_THAT(
      RunCudaRank(options, [](runtime::Runtime&) { return absl::OkStatus(); }),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               HasSubstr("visible on this node")));
}

}  // namespace
}  // namespace cuda
}  // namespace zero3
