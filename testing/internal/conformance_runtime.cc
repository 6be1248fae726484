// Copyright 2026 The zero3 Authors.
//
// Conformance cases for memory, copies, streams, events, synchronization,
// host tasks and the clock (see testing/backend_conformance.h).

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/runtime/runtime.h"
#include "core/util/status_macros.h"
#include "gtest/gtest.h"
#include "testing/internal/conformance.h"

namespace zero3 {
namespace testing {
namespace conformance_internal {
namespace {

using runtime::Buffer;
using runtime::HostMemoryKind;
using runtime::KernelCall;
using runtime::MemorySpace;
using runtime::MemoryStats;
using runtime::Runtime;
using runtime::Stream;
using runtime::TensorRef;

absl::string_view KindName(HostMemoryKind kind) {
  return kind == HostMemoryKind::kPinned ? "pinned" : "pageable";
}

MemorySpace SpaceOf(HostMemoryKind kind) {
  return kind == HostMemoryKind::kPinned ? MemorySpace::kPinnedHost
                                         : MemorySpace::kPageableHost;
}

KernelCall FillCall(const TensorRef& x, float value) {
  runtime::ops::Fill fill;
  fill.args.n = x.elements();
  fill.args.value = value;
  fill.x = x;
  return KernelCall(fill, "fill");
}

KernelCall ScaleCall(const TensorRef& x, float alpha) {
  runtime::ops::Scale scale;
  scale.args.n = x.elements();
  scale.args.alpha = alpha;
  scale.x = x;
  return KernelCall(scale, "scale");
}

// y += x.
KernelCall AccumulateCall(const TensorRef& x, const TensorRef& y) {
  runtime::ops::Accumulate acc;
  acc.args.n = x.elements();
  acc.x = x;
  acc.y = y;
  return KernelCall(acc, "accumulate");
}

absl::StatusOr<TensorRef> Floats(DeviceArena& arena, int64_t n,
                                 absl::string_view label) {
  ZR_ASSIGN_OR_RETURN(Buffer buffer, arena.Allocate(n * 4, label));
  return TensorRef::Of(buffer, DType::kF32, 0, n);
}

// EXPECTs that a host buffer holds `n` copies of `value` (fp32).
absl::Status ExpectHostFloats(Runtime& rt, const Buffer& host, float value,
                              absl::string_view what) {
  ZR_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadHost(rt, host.All()));
  const std::vector<float> values = Decode(bytes, DType::kF32);
  ExpectEqualValues(what, values, std::vector<float>(values.size(), value));
  return absl::OkStatus();
}

// EXPECTs equal byte vectors, reporting the first difference (not the
// whole vector, which may be megabytes).
void ExpectEqualBytes(absl::string_view what, const std::vector<uint8_t>& got,
                      const std::vector<uint8_t>& want) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      ADD_FAILURE() << what << ": byte " << i << " is " << int{got[i]}
                    << ", expected " << int{want[i]};
      return;
    }
  }
}

// ---------------------------------------------------------------------------
// Device memory

absl::Status DeviceAllocateAndFree(Runtime& rt) {
  runtime::Device& device = rt.device();
  EXPECT_FALSE(device.name().empty());
  EXPECT_GT(device.total_memory_bytes(), 0);
  const MemoryStats before = device.memory_stats();
  const std::vector<int64_t> sizes = {1, 4096, (1 << 20) + 3};
  std::vector<Buffer> buffers;
  int64_t total = 0;
  for (int64_t size : sizes) {
    ZR_ASSIGN_OR_RETURN(Buffer buffer, device.Allocate(size, "conformance"));
    EXPECT_TRUE(buffer.valid());
    EXPECT_EQ(buffer.bytes(), size);
    EXPECT_EQ(buffer.space(), MemorySpace::kDevice);
    for (const Buffer& other : buffers) EXPECT_NE(buffer.id(), other.id());
    buffers.push_back(buffer);
    total += size;
  }
  // memory_stats counts the bytes requested, live allocations and the peak.
  const MemoryStats during = device.memory_stats();
  EXPECT_EQ(during.bytes_in_use, before.bytes_in_use + total);
  EXPECT_EQ(during.allocations, before.allocations + 3);
  EXPECT_GE(during.peak_bytes_in_use, during.bytes_in_use);

  ZR_RETURN_IF_ERROR(device.Free(buffers[1]));
  const MemoryStats after_one = device.memory_stats();
  EXPECT_EQ(after_one.bytes_in_use, during.bytes_in_use - sizes[1]);
  EXPECT_EQ(after_one.allocations, during.allocations - 1);

  ZR_RETURN_IF_ERROR(device.Free(buffers[0]));
  ZR_RETURN_IF_ERROR(device.Free(buffers[2]));
  const MemoryStats after = device.memory_stats();
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_EQ(after.allocations, before.allocations);
  EXPECT_GE(after.peak_bytes_in_use, before.bytes_in_use + total);
  return absl::OkStatus();
}

absl::Status AllocationBeyondCapacityIsResourceExhausted(Runtime& rt) {
  runtime::Device& device = rt.device();
  const MemoryStats before = device.memory_stats();
  const absl::StatusOr<Buffer> buffer =
      device.Allocate(device.total_memory_bytes() + 1, "too large");
  EXPECT_EQ(buffer.status().code(), absl::StatusCode::kResourceExhausted)
      << buffer.status();
  if (buffer.ok()) ZR_RETURN_IF_ERROR(device.Free(*buffer));
  EXPECT_EQ(device.memory_stats().bytes_in_use, before.bytes_in_use);
  EXPECT_EQ(device.memory_stats().allocations, before.allocations);
  return absl::OkStatus();
}

absl::Status CreateStreamKeepsItsName(Runtime& rt) {
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<Stream> stream,
                      rt.device().CreateStream("conformance stream"));
  EXPECT_EQ(stream->name(), "conformance stream");
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Host memory

absl::Status HostAllocationIsZeroFilled(Runtime& rt, HostMemoryKind kind) {
  for (int64_t size : {int64_t{1}, int64_t{5000}, int64_t{(3 << 20) + 1}}) {
    ZR_ASSIGN_OR_RETURN(Buffer buffer,
                        rt.AllocateHost(size, kind, "conformance"));
    EXPECT_TRUE(buffer.valid());
    EXPECT_EQ(buffer.bytes(), size);
    EXPECT_EQ(buffer.space(), SpaceOf(kind));
    EXPECT_NE(buffer.data(), nullptr);
    ZR_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadHost(rt, buffer.All()));
    ExpectEqualBytes(absl::StrCat(KindName(kind), " buffer of ", size), bytes,
                     std::vector<uint8_t>(size, 0));
    ZR_RETURN_IF_ERROR(rt.FreeHost(buffer));
  }
  return absl::OkStatus();
}

absl::Status PinnedMemoryIsAccounted(Runtime& rt) {
  const runtime::PinnedMemoryStats before = rt.pinned_memory().stats();
  ZR_ASSIGN_OR_RETURN(Buffer pinned,
                      rt.AllocateHost(10000, HostMemoryKind::kPinned, "p"));
  runtime::PinnedMemoryStats now = rt.pinned_memory().stats();
  EXPECT_EQ(now.bytes_in_use, before.bytes_in_use + 10000);
  EXPECT_EQ(now.allocations, before.allocations + 1);
  EXPECT_EQ(now.total_allocations, before.total_allocations + 1);
  EXPECT_GE(now.peak_bytes, now.bytes_in_use);

  // Pageable memory is not pinned memory.
  ZR_ASSIGN_OR_RETURN(Buffer pageable,
                      rt.AllocateHost(20000, HostMemoryKind::kPageable, "q"));
  EXPECT_EQ(rt.pinned_memory().stats().bytes_in_use, now.bytes_in_use);

  ZR_RETURN_IF_ERROR(rt.FreeHost(pinned));
  now = rt.pinned_memory().stats();
  EXPECT_EQ(now.bytes_in_use, before.bytes_in_use);
  EXPECT_EQ(now.allocations, before.allocations);
  EXPECT_EQ(now.total_allocations, before.total_allocations + 1);
  EXPECT_GE(now.peak_bytes, before.bytes_in_use + 10000);
  ZR_RETURN_IF_ERROR(rt.FreeHost(pageable));
  EXPECT_EQ(rt.pinned_memory().stats().bytes_in_use, before.bytes_in_use);
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Copies and memset

// Host (kind) -> device -> device -> host (kind) -> host (the other kind),
// each a sub-slice at its own offset, for sizes around the pageable
// staging threshold of CUDA drivers (2-4 MiB).
absl::Status CopyRoundTrip(Runtime& rt, HostMemoryKind kind) {
  const HostMemoryKind other = kind == HostMemoryKind::kPinned
                                   ? HostMemoryKind::kPageable
                                   : HostMemoryKind::kPinned;
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<Stream> stream,
                      rt.device().CreateStream("copies"));
  DeviceArena arena(rt, *stream);
  uint32_t seed = 1;
  for (int64_t size : {int64_t{1}, int64_t{777}, int64_t{(3 << 20) + 5}}) {
    const std::vector<uint8_t> pattern = RandomBytes(size + 32, seed++);
    ZR_ASSIGN_OR_RETURN(Buffer src, rt.AllocateHost(size + 32, kind, "src"));
    ZR_RETURN_IF_ERROR(WriteHost(rt, src.All(), pattern));
    ZR_ASSIGN_OR_RETURN(Buffer dev1, arena.Allocate(size + 64, "dev1"));
    ZR_ASSIGN_OR_RETURN(Buffer dev2, arena.Allocate(size + 128, "dev2"));
    ZR_ASSIGN_OR_RETURN(Buffer dst, rt.AllocateHost(size + 16, kind, "dst"));
    ZR_ASSIGN_OR_RETURN(Buffer dst2, rt.AllocateHost(size + 8, other, "dst2"));

    ZR_RETURN_IF_ERROR(
        stream->Copy(dev1.Slice(13, size), src.Slice(7, size), "h2d"));
    ZR_RETURN_IF_ERROR(
        stream->Copy(dev2.Slice(101, size), dev1.Slice(13, size), "d2d"));
    ZR_RETURN_IF_ERROR(
        stream->Copy(dst.Slice(5, size), dev2.Slice(101, size), "d2h"));
    ZR_RETURN_IF_ERROR(
        stream->Copy(dst2.Slice(3, size), dst.Slice(5, size), "h2h"));
    ZR_RETURN_IF_ERROR(stream->Synchronize());

    // Only the destination ranges change; the rest stays zero.
    std::vector<uint8_t> want(size + 16, 0);
    std::copy(pattern.begin() + 7, pattern.begin() + 7 + size,
              want.begin() + 5);
    ZR_ASSIGN_OR_RETURN(std::vector<uint8_t> got, ReadHost(rt, dst.All()));
    ExpectEqualBytes(absl::StrCat(KindName(kind), " D2H of ", size), got, want);
    std::vector<uint8_t> want2(size + 8, 0);
    std::copy(pattern.begin() + 7, pattern.begin() + 7 + size,
              want2.begin() + 3);
    ZR_ASSIGN_OR_RETURN(std::vector<uint8_t> got2, ReadHost(rt, dst2.All()));
    ExpectEqualBytes(
        absl::StrCat(KindName(kind), " to ", KindName(other), " H2H of ", size),
        got2, want2);
    for (const Buffer& host : {src, dst, dst2}) {
      ZR_RETURN_IF_ERROR(rt.FreeHost(host));
    }
  }
  return absl::OkStatus();
}

absl::Status CopyRejectsUnequalSizes(Runtime& rt) {
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<Stream> stream,
                      rt.device().CreateStream("copies"));
  DeviceArena arena(rt, *stream);
  ZR_ASSIGN_OR_RETURN(Buffer a, arena.Allocate(16, "a"));
  ZR_ASSIGN_OR_RETURN(Buffer b, arena.Allocate(12, "b"));
  ZR_RETURN_IF_ERROR(stream->Memset(b.All(), 0, "init"));
  EXPECT_EQ(stream->Copy(a.All(), b.All(), "mismatch").code(),
            absl::StatusCode::kInvalidArgument);
  return absl::OkStatus();
}

absl::Status MemsetSetsBytes(Runtime& rt) {
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<Stream> stream,
                      rt.device().CreateStream("memset"));
  DeviceArena arena(rt, *stream);
  ZR_ASSIGN_OR_RETURN(Buffer buffer, arena.Allocate(1000, "buffer"));
  ZR_RETURN_IF_ERROR(stream->Memset(buffer.All(), 0xAB, "all"));
  ZR_RETURN_IF_ERROR(stream->Memset(buffer.Slice(100, 200), 0x00, "middle"));
  ZR_RETURN_IF_ERROR(stream->Memset(buffer.Slice(999, 1), 0x7F, "last"));
  std::vector<uint8_t> want(1000, 0xAB);
  std::fill(want.begin() + 100, want.begin() + 300, 0x00);
  want[999] = 0x7F;
  ZR_ASSIGN_OR_RETURN(std::vector<uint8_t> got, arena.ReadBytes(buffer.All()));
  ExpectEqualBytes("memset", got, want);
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Streams, events and synchronization

constexpr int64_t kBig = int64_t{1} << 22;  // floats: 16 MiB

absl::Status StreamRunsWorkInOrder(Runtime& rt) {
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<Stream> stream,
                      rt.device().CreateStream("in order"));
  DeviceArena arena(rt, *stream);
  ZR_ASSIGN_OR_RETURN(TensorRef x, Floats(arena, kBig, "x"));
  ZR_ASSIGN_OR_RETURN(TensorRef y, Floats(arena, kBig, "y"));
  ZR_ASSIGN_OR_RETURN(
      Buffer host, rt.AllocateHost(kBig * 4, HostMemoryKind::kPinned, "host"));
  // Each kernel reads the previous one's result; the copy reads the last.
  ZR_RETURN_IF_ERROR(stream->Launch(FillCall(x, 1.5f)));
  ZR_RETURN_IF_ERROR(stream->Launch(ScaleCall(x, 2.0f)));
  ZR_RETURN_IF_ERROR(stream->Launch(FillCall(y, 1.0f)));
  ZR_RETURN_IF_ERROR(stream->Launch(AccumulateCall(x, y)));
  ZR_RETURN_IF_ERROR(stream->Copy(host.All(), y.slice, "d2h"));
  ZR_RETURN_IF_ERROR(stream->Synchronize());
  ZR_RETURN_IF_ERROR(ExpectHostFloats(rt, host, 4.0f, "y = 1.5 * 2 + 1"));
  return rt.FreeHost(host);
}

absl::Status EventOrdersWorkAcrossStreams(Runtime& rt) {
  runtime::Device& device = rt.device();
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<Stream> producer,
                      device.CreateStream("producer"));
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<Stream> consumer,
                      device.CreateStream("consumer"));
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Event> produced,
                      device.CreateEvent());
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Event> consumed,
                      device.CreateEvent());
  DeviceArena arena(rt, *consumer);
  ZR_ASSIGN_OR_RETURN(TensorRef x, Floats(arena, kBig, "x"));
  ZR_ASSIGN_OR_RETURN(TensorRef y, Floats(arena, kBig, "y"));
  ZR_ASSIGN_OR_RETURN(
      Buffer host_x,
      rt.AllocateHost(kBig * 4, HostMemoryKind::kPinned, "host x"));
  ZR_ASSIGN_OR_RETURN(
      Buffer host_y,
      rt.AllocateHost(kBig * 4, HostMemoryKind::kPinned, "host y"));

  ZR_RETURN_IF_ERROR(producer->Launch(FillCall(x, 2.0f)));
  ZR_RETURN_IF_ERROR(producer->Launch(ScaleCall(x, 3.0f)));  // x = 6
  ZR_RETURN_IF_ERROR(producer->Record(*produced));
  ZR_RETURN_IF_ERROR(consumer->Launch(FillCall(y, 1.0f)));
  ZR_RETURN_IF_ERROR(consumer->Wait(*produced));
  ZR_RETURN_IF_ERROR(consumer->Launch(AccumulateCall(x, y)));  // y = 7
  ZR_RETURN_IF_ERROR(consumer->Copy(host_y.All(), y.slice, "y to host"));
  ZR_RETURN_IF_ERROR(consumer->Record(*consumed));

  // The other way, and a re-recorded event: the producer overwrites x only
  // after the consumer has read it, and the consumer's second wait on
  // `produced` waits for the new capture.
  ZR_RETURN_IF_ERROR(producer->Wait(*consumed));
  ZR_RETURN_IF_ERROR(producer->Launch(ScaleCall(x, 0.5f)));  // x = 3
  ZR_RETURN_IF_ERROR(producer->Record(*produced));
  ZR_RETURN_IF_ERROR(consumer->Wait(*produced));
  ZR_RETURN_IF_ERROR(consumer->Copy(host_x.All(), x.slice, "x to host"));
  ZR_RETURN_IF_ERROR(consumer->Synchronize());

  ZR_RETURN_IF_ERROR(ExpectHostFloats(rt, host_y, 7.0f, "y after the wait"));
  ZR_RETURN_IF_ERROR(
      ExpectHostFloats(rt, host_x, 3.0f, "x after the second wait"));
  ZR_RETURN_IF_ERROR(rt.FreeHost(host_x));
  return rt.FreeHost(host_y);
}

absl::Status UnrecordedEventIsComplete(Runtime& rt) {
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<Stream> stream,
                      rt.device().CreateStream("s"));
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Event> event,
                      rt.device().CreateEvent());
  DeviceArena arena(rt, *stream);
  ZR_RETURN_IF_ERROR(event->Synchronize());
  ZR_RETURN_IF_ERROR(stream->Wait(*event));
  ZR_ASSIGN_OR_RETURN(TensorRef x, Floats(arena, 100, "x"));
  ZR_RETURN_IF_ERROR(stream->Launch(FillCall(x, 1.0f)));
  ZR_ASSIGN_OR_RETURN(std::vector<float> values, arena.Read(x));
  ExpectEqualValues("x", values, std::vector<float>(100, 1.0f));
  return absl::OkStatus();
}

absl::Status TimedEventsMeasureDeviceTime(Runtime& rt) {
  runtime::Device& device = rt.device();
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<Stream> stream,
                      device.CreateStream("timed"));
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Event> a,
                      device.CreateTimedEvent());
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Event> b,
                      device.CreateTimedEvent());
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Event> c,
                      device.CreateTimedEvent());
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Event> plain,
                      device.CreateEvent());
  EXPECT_EQ(device.ElapsedNanos(*a, *b).status().code(),
            absl::StatusCode::kFailedPrecondition)
      << "events never recorded";
  DeviceArena arena(rt, *stream);
  ZR_ASSIGN_OR_RETURN(TensorRef x, Floats(arena, kBig, "x"));
  ZR_RETURN_IF_ERROR(stream->Record(*a));
  ZR_RETURN_IF_ERROR(stream->Launch(FillCall(x, 1.0f)));
  ZR_RETURN_IF_ERROR(stream->Record(*b));
  ZR_RETURN_IF_ERROR(stream->Launch(ScaleCall(x, 2.0f)));
  ZR_RETURN_IF_ERROR(stream->Record(*c));
  ZR_RETURN_IF_ERROR(stream->Record(*plain));
  ZR_RETURN_IF_ERROR(c->Synchronize());
  ZR_ASSIGN_OR_RETURN(int64_t ab, device.ElapsedNanos(*a, *b));
  ZR_ASSIGN_OR_RETURN(int64_t bc, device.ElapsedNanos(*b, *c));
  ZR_ASSIGN_OR_RETURN(int64_t ac, device.ElapsedNanos(*a, *c));
  // Each interval holds a kernel over kBig floats; intervals add up (CUDA
  // events resolve about half a microsecond).
  EXPECT_GT(ab, 0);
  EXPECT_GT(bc, 0);
  EXPECT_NEAR(static_cast<double>(ab + bc), static_cast<double>(ac), 2000.0);
  EXPECT_EQ(device.ElapsedNanos(*a, *plain).status().code(),
            absl::StatusCode::kInvalidArgument)
      << "an event without timing";
  return absl::OkStatus();
}

// How the host learns that a device-to-host copy has finished.
// kQuery polls Event::Query until it returns true.
enum class HostWait { kStream, kEvent, kQuery, kDevice };

absl::Status SynchronizeMakesCopiesVisible(Runtime& rt, HostWait wait) {
  runtime::Device& device = rt.device();
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<Stream> s1, device.CreateStream("s1"));
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<Stream> s2, device.CreateStream("s2"));
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Event> event,
                      device.CreateEvent());
  DeviceArena arena(rt, *s1);
  ZR_ASSIGN_OR_RETURN(TensorRef a, Floats(arena, kBig, "a"));
  ZR_ASSIGN_OR_RETURN(
      Buffer host_a,
      rt.AllocateHost(kBig * 4, HostMemoryKind::kPinned, "host a"));
  ZR_RETURN_IF_ERROR(s1->Launch(FillCall(a, 5.0f)));
  ZR_RETURN_IF_ERROR(s1->Copy(host_a.All(), a.slice, "a to host"));
  switch (wait) {
    case HostWait::kStream:
      ZR_RETURN_IF_ERROR(s1->Synchronize());
      break;
    case HostWait::kEvent:
      ZR_RETURN_IF_ERROR(s1->Record(*event));
      ZR_RETURN_IF_ERROR(event->Synchronize());
      break;
    case HostWait::kQuery: {
      ZR_ASSIGN_OR_RETURN(const bool never_recorded_done, event->Query());
      EXPECT_TRUE(never_recorded_done) << "an event never recorded";
      ZR_RETURN_IF_ERROR(s1->Record(*event));
      bool done = false;
      while (!done) {
        ZR_ASSIGN_OR_RETURN(done, event->Query());
      }
      ZR_ASSIGN_OR_RETURN(const bool still_done, event->Query());
      EXPECT_TRUE(still_done) << "a completed event stays complete";
      break;
    }
    case HostWait::kDevice: {
      // Two streams; one device-wide synchronize covers both.
      ZR_ASSIGN_OR_RETURN(TensorRef b, Floats(arena, kBig, "b"));
      ZR_ASSIGN_OR_RETURN(
          Buffer host_b,
          rt.AllocateHost(kBig * 4, HostMemoryKind::kPinned, "host b"));
      ZR_RETURN_IF_ERROR(s2->Launch(FillCall(b, 6.0f)));
      ZR_RETURN_IF_ERROR(s2->Copy(host_b.All(), b.slice, "b to host"));
      ZR_RETURN_IF_ERROR(device.Synchronize());
      ZR_RETURN_IF_ERROR(ExpectHostFloats(rt, host_b, 6.0f, "b"));
      ZR_RETURN_IF_ERROR(rt.FreeHost(host_b));
      break;
    }
  }
  ZR_RETURN_IF_ERROR(ExpectHostFloats(rt, host_a, 5.0f, "a"));
  return rt.FreeHost(host_a);
}

// ---------------------------------------------------------------------------
// Host tasks and the clock

absl::Status HostTaskRunsOnTheCallingThread(Runtime& rt) {
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<Stream> stream,
                      rt.device().CreateStream("s"));
  DeviceArena arena(rt, *stream);
  constexpr int64_t kN = 1000;
  ZR_ASSIGN_OR_RETURN(TensorRef x, Floats(arena, kN, "x"));
  ZR_ASSIGN_OR_RETURN(TensorRef y, Floats(arena, kN, "y"));
  ZR_ASSIGN_OR_RETURN(Buffer in,
                      rt.AllocateHost(kN * 4, HostMemoryKind::kPinned, "in"));
  ZR_ASSIGN_OR_RETURN(Buffer out,
                      rt.AllocateHost(kN * 4, HostMemoryKind::kPinned, "out"));
  ZR_RETURN_IF_ERROR(stream->Launch(FillCall(x, 9.0f)));
  ZR_RETURN_IF_ERROR(stream->Copy(in.All(), x.slice, "x to host"));
  ZR_RETURN_IF_ERROR(stream->Synchronize());

  // The task sees the synchronized copy and doubles it into `out`.
  int calls = 0;
  std::thread::id thread;
  std::vector<float> seen;
  runtime::HostTask task;
  task.label = "double";
  task.reads = {in.All()};
  task.writes = {out.All()};
  task.flops = kN;
  task.memory_bytes = 2 * kN * 4;
  task.run = [&]() -> absl::Status {
    ++calls;
    thread = std::this_thread::get_id();
    const float* src = in.All().As<float>();
    float* dst = out.All().As<float>();
    seen.assign(src, src + kN);
    for (int64_t i = 0; i < kN; ++i) dst[i] = 2 * src[i];
    return absl::OkStatus();
  };
  ZR_RETURN_IF_ERROR(rt.RunHostTask(task));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(thread, std::this_thread::get_id());
  ExpectEqualValues("what the task read", seen, std::vector<float>(kN, 9.0f));

  // What the task wrote reaches the device.
  ZR_RETURN_IF_ERROR(stream->Copy(y.slice, out.All(), "out to device"));
  ZR_ASSIGN_OR_RETURN(std::vector<float> values, arena.Read(y));
  ExpectEqualValues("what the task wrote", values,
                    std::vector<float>(kN, 18.0f));
  ZR_RETURN_IF_ERROR(rt.FreeHost(in));
  return rt.FreeHost(out);
}

absl::Status HostTaskErrorIsReturned(Runtime& rt) {
  runtime::HostTask task;
  task.label = "failing";
  task.run = [] { return absl::DataLossError("conformance: task failed"); };
  EXPECT_EQ(rt.RunHostTask(task).code(), absl::StatusCode::kDataLoss);
  return absl::OkStatus();
}

// A task's fixed work takes at least that much of the host's clock, with or
// without a function to run.
absl::Status HostTaskFixedWorkTakesItsTime(Runtime& rt) {
  constexpr int64_t kFixedNs = 200000;
  runtime::HostTask task;
  task.label = "fixed work";
  task.fixed_nanos = kFixedNs;
  const int64_t t0 = rt.NowNanos();
  ZR_RETURN_IF_ERROR(rt.RunHostTask(task));
  const int64_t t1 = rt.NowNanos();
  EXPECT_GE(t1 - t0, kFixedNs);
  int calls = 0;
  task.run = [&calls] {
    ++calls;
    return absl::OkStatus();
  };
  ZR_RETURN_IF_ERROR(rt.RunHostTask(task));
  EXPECT_GE(rt.NowNanos() - t1, kFixedNs);
  EXPECT_EQ(calls, rt.computes_values() ? 1 : 0);
  return absl::OkStatus();
}

absl::Status ClockIsMonotonic(Runtime& rt) {
  const int64_t t0 = rt.NowNanos();
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<Stream> stream,
                      rt.device().CreateStream("s"));
  DeviceArena arena(rt, *stream);
  ZR_ASSIGN_OR_RETURN(TensorRef x, Floats(arena, kBig, "x"));
  const int64_t t1 = rt.NowNanos();
  ZR_RETURN_IF_ERROR(stream->Launch(FillCall(x, 1.0f)));
  ZR_RETURN_IF_ERROR(stream->Synchronize());
  const int64_t t2 = rt.NowNanos();
  EXPECT_LE(t0, t1);
  EXPECT_LE(t1, t2);
  return absl::OkStatus();
}

}  // namespace

std::vector<ConformanceCase> RuntimeCases() {
  using K = HostMemoryKind;
  std::vector<ConformanceCase> cases = {
      {"Runtime", "DeviceAllocateAndFree", 1, DeviceAllocateAndFree, __FILE__,
       __LINE__},
      {"Runtime", "AllocationBeyondCapacityIsResourceExhausted", 1,
       AllocationBeyondCapacityIsResourceExhausted, __FILE__, __LINE__},
      {"Runtime", "CreateStreamKeepsItsName", 1, CreateStreamKeepsItsName,
       __FILE__, __LINE__},
      {"Runtime", "PinnedMemoryIsAccounted", 1, PinnedMemoryIsAccounted,
       __FILE__, __LINE__},
      {"Runtime", "CopyRejectsUnequalSizes", 1, CopyRejectsUnequalSizes,
       __FILE__, __LINE__},
      {"Runtime", "MemsetSetsBytes", 1, MemsetSetsBytes, __FILE__, __LINE__},
      {"Runtime", "StreamRunsWorkInOrder", 1, StreamRunsWorkInOrder, __FILE__,
       __LINE__},
      {"Runtime", "EventOrdersWorkAcrossStreams", 1,
       EventOrdersWorkAcrossStreams, __FILE__, __LINE__},
      {"Runtime", "UnrecordedEventIsComplete", 1, UnrecordedEventIsComplete,
       __FILE__, __LINE__},
      {"Runtime", "TimedEventsMeasureDeviceTime", 1,
       TimedEventsMeasureDeviceTime, __FILE__, __LINE__},
      {"Runtime", "HostTaskRunsOnTheCallingThread", 1,
       HostTaskRunsOnTheCallingThread, __FILE__, __LINE__},
      {"Runtime", "HostTaskErrorIsReturned", 1, HostTaskErrorIsReturned,
       __FILE__, __LINE__},
      {"Runtime", "HostTaskFixedWorkTakesItsTime", 1,
       HostTaskFixedWorkTakesItsTime, __FILE__, __LINE__},
      {"Runtime", "ClockIsMonotonic", 1, ClockIsMonotonic, __FILE__, __LINE__},
  };
  for (K kind : {K::kPinned, K::kPageable}) {
    const std::string suffix(KindName(kind));
    cases.push_back(
        {"Runtime", "HostAllocationIsZeroFilled/" + suffix, 1,
         [kind](Runtime& rt) { return HostAllocationIsZeroFilled(rt, kind); },
         __FILE__, __LINE__});
    cases.push_back({"Runtime", "CopyRoundTrip/" + suffix, 1,
                     [kind](Runtime& rt) { return CopyRoundTrip(rt, kind); },
                     __FILE__, __LINE__});
  }
  const std::pair<HostWait, const char*> waits[] = {
      {HostWait::kStream, "Stream"},
      {HostWait::kEvent, "Event"},
      {HostWait::kQuery, "EventQuery"},
      {HostWait::kDevice, "Device"}};
  for (const auto& [wait, name] : waits) {
    cases.push_back({"Runtime",
                     absl::StrCat(name, "SynchronizeMakesCopiesVisible"), 1,
                     [wait = wait](Runtime& rt) {
                       return SynchronizeMakesCopiesVisible(rt, wait);
                     },
                     __FILE__, __LINE__});
  }
  return cases;
}

}  // namespace conformance_internal
}  // namespace testing
}  // namespace zero3
