// Copyright 2026 The zero3 Authors.

#include "backends/cuda/caching_allocator.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace cuda {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::zero3::testing::IsOk;
using ::zero3::testing::StatusIs;

// A device with `capacity` bytes, whose fences complete when the test says.
class FakeBackend : public CachingAllocator::Backend {
 public:
  explicit FakeBackend(int64_t capacity) : capacity_(capacity) {}

  absl::StatusOr<void*> Reserve(int64_t bytes) override {
    if (used_ + bytes > capacity_) {
      return absl::ResourceExhaustedError("fake device full");
    }
    used_ += bytes;
    void* ptr = reinterpret_cast<void*>(next_);
    next_ += bytes + 4096;
    blocks_[ptr] = bytes;
    return ptr;
  }
  absl::Status Release(void* ptr) override {
    auto it = blocks_.find(ptr);
    if (it == blocks_.end()) return absl::InternalError("unknown block");
    used_ -= it->second;
    blocks_.erase(it);
    return absl::OkStatus();
  }
  absl::StatusOr<uint64_t> MakeFence() override {
    if (!work_) return uint64_t{0};
    return ++fence_;
  }
  absl::StatusOr<bool> FenceReached(uint64_t fence) override {
    ++queries_;
    return fence <= done_;
  }
  absl::Status WaitFence(uint64_t fence) override {
    ++waits_;
    done_ = std::max(done_, fence);
    return absl::OkStatus();
  }

  // The device has queued work from now on (fences are real).
  void StartWork() { work_ = true; }
  // Work up to fence `f` is done.
  void Complete(uint64_t f) { done_ = std::max(done_, f); }
  uint64_t last_fence() const { return fence_; }

  int64_t used_ = 0;
  int64_t queries_ = 0;
  int64_t waits_ = 0;
  std::map<void*, int64_t> blocks_;

 private:
  const int64_t capacity_;
  uintptr_t next_ = 0x10000;
  bool work_ = false;
  uint64_t fence_ = 0;
  uint64_t done_ = 0;
};

TEST(CachingAllocatorTest, SizeClasses) {
  EXPECT_EQ(CachingAllocator::SizeClass(0), 512);
  EXPECT_EQ(CachingAllocator::SizeClass(1), 512);
  EXPECT_EQ(CachingAllocator::SizeClass(512), 512);
  EXPECT_EQ(CachingAllocator::SizeClass(513), 1024);
  EXPECT_EQ(CachingAllocator::SizeClass(1 << 20), 1 << 20);
  EXPECT_EQ(CachingAllocator::SizeClass((1 << 20) + 1), (1 << 20) + (1 << 17));
  EXPECT_EQ(CachingAllocator::SizeClass(64 << 20), 64 << 20);
  EXPECT_EQ(CachingAllocator::SizeClass((64 << 20) + 1), 66 << 20);
  const int64_t big = int64_t{6} << 30;
  EXPECT_EQ(CachingAllocator::SizeClass(big + 3), big + (2 << 20));
  // Waste stays small above 1 MiB.
  for (int64_t b = (1 << 20) + 1; b < (int64_t{1} << 34); b = b * 3 / 2) {
    const int64_t c = CachingAllocator::SizeClass(b);
    EXPECT_GE(c, b);
    EXPECT_LE(static_cast<double>(c - b) / b, 0.125) << b;
  }
}

TEST(CachingAllocatorTest, ReusesFreedBlocksWithoutReserving) {
  FakeBackend backend(1 << 30);
  CachingAllocator allocator(&backend);
  ASSERT_OK_AND_ASSIGN(void* a, allocator.Allocate(1000, "a"));
  ASSERT_OK_AND_ASSIGN(void* b, allocator.Allocate(5 << 20, "b"));
  EXPECT_NE(a, b);
  EXPECT_EQ(allocator.stats().reserve_calls, 2);
  EXPECT_EQ(allocator.stats().bytes_in_use, 1000 + (5 << 20));
  EXPECT_EQ(allocator.stats().allocations, 2);
  ASSERT_THAT(allocator.Free(a), IsOk());
  ASSERT_THAT(allocator.Free(b), IsOk());
  EXPECT_EQ(allocator.stats().bytes_in_use, 0);
  EXPECT_EQ(allocator.stats().allocations, 0);
  EXPECT_EQ(allocator.stats().peak_bytes_in_use, 1000 + (5 << 20));
  EXPECT_EQ(allocator.stats().bytes_cached, 1024 + (5 << 20));

  // Same classes again: the same blocks, no new reservations. A "step"
  // repeated many times reserves nothing more.
  for (int step = 0; step < 10; ++step) {
    ASSERT_OK_AND_ASSIGN(void* a2, allocator.Allocate(900, "a"));
    ASSERT_OK_AND_ASSIGN(void* b2, allocator.Allocate((5 << 20) - 7, "b"));
    EXPECT_EQ(a2, a);
    EXPECT_EQ(b2, b);
    ASSERT_THAT(allocator.Free(b2), IsOk());
    ASSERT_THAT(allocator.Free(a2), IsOk());
  }
  EXPECT_EQ(allocator.stats().reserve_calls, 2);
  EXPECT_EQ(allocator.stats().cache_hits, 20);
  EXPECT_EQ(allocator.stats().bytes_reserved, 1024 + (5 << 20));
  ASSERT_THAT(allocator.ReleaseAll(), IsOk());
  EXPECT_EQ(backend.used_, 0);
}

TEST(CachingAllocatorTest, BlockIsNotReusedBeforeItsFence) {
  FakeBackend backend(1 << 30);
  CachingAllocator allocator(&backend);
  backend.StartWork();
  ASSERT_OK_AND_ASSIGN(void* a, allocator.Allocate(4096, "a"));
  ASSERT_THAT(allocator.Free(a), IsOk());
  const uint64_t fence = backend.last_fence();
  EXPECT_GT(fence, 0u);
  // Work queued before the Free may still use `a`: a new block.
  ASSERT_OK_AND_ASSIGN(void* b, allocator.Allocate(4096, "b"));
  EXPECT_NE(a, b);
  EXPECT_EQ(allocator.stats().reserve_calls, 2);
  // Once the work is done, `a` comes back.
  backend.Complete(fence);
  ASSERT_OK_AND_ASSIGN(void* c, allocator.Allocate(4096, "c"));
  EXPECT_EQ(c, a);
  EXPECT_EQ(allocator.stats().reserve_calls, 2);
  EXPECT_EQ(backend.waits_, 0);  // never blocked
  ASSERT_THAT(allocator.ReleaseAll(), IsOk());
}

TEST(CachingAllocatorTest, OutOfMemoryReleasesTheCacheAndRetries) {
  FakeBackend backend(10 << 20);
  CachingAllocator allocator(&backend);
  backend.StartWork();
  ASSERT_OK_AND_ASSIGN(void* a, allocator.Allocate(4 << 20, "a"));
  ASSERT_OK_AND_ASSIGN(void* b, allocator.Allocate(4 << 20, "b"));
  ASSERT_THAT(allocator.Free(a), IsOk());
  ASSERT_THAT(allocator.Free(b), IsOk());  // both pending: fence not reached
  // 6 MiB is another class; the device holds 8 MiB of cached blocks.
  ASSERT_OK_AND_ASSIGN(void* c, allocator.Allocate(6 << 20, "c"));
  EXPECT_NE(c, nullptr);
  EXPECT_EQ(backend.waits_, 1);  // waited for the pending frees
  EXPECT_EQ(allocator.stats().release_calls, 2);
  EXPECT_EQ(allocator.stats().bytes_cached, 0);
  EXPECT_EQ(allocator.stats().bytes_reserved, 6 << 20);
  ASSERT_THAT(allocator.ReleaseAll(), IsOk());
}

TEST(CachingAllocatorTest, OutOfMemoryNamesTheRequestAndTheUse) {
  FakeBackend backend(10 << 20);
  CachingAllocator allocator(&backend);
  ASSERT_OK_AND_ASSIGN(void* a, allocator.Allocate(8 << 20, "activations"));
  EXPECT_THAT(
      allocator.Allocate(3 << 20, "gathered parameter"),
      StatusIs(absl::StatusCode::kResourceExhausted,
               AllOf(HasSubstr("allocating 3.0 MiB for gathered parameter"),
                     HasSubstr("8.0 MiB in use by 1 allocations"),
                     HasSubstr("fake device full"))));
  // A failed allocation changes nothing.
  EXPECT_EQ(allocator.stats().bytes_in_use, 8 << 20);
  EXPECT_EQ(allocator.stats().allocations, 1);
  ASSERT_THAT(allocator.Free(a), IsOk());
  ASSERT_THAT(allocator.ReleaseAll(), IsOk());
}

TEST(CachingAllocatorTest, FreeOfUnknownPointer) {
  FakeBackend backend(1 << 20);
  CachingAllocator allocator(&backend);
  ASSERT_OK_AND_ASSIGN(void* a, allocator.Allocate(10, "a"));
  ASSERT_THAT(allocator.Free(a), IsOk());
  EXPECT_THAT(allocator.Free(a), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("freed twice")));
  EXPECT_THAT(allocator.Free(reinterpret_cast<void*>(0x1)),
              StatusIs(absl::StatusCode::kInvalidArgument));
  ASSERT_THAT(allocator.ReleaseAll(), IsOk());
}

TEST(CachingAllocatorTest, ReleaseCacheKeepsLiveBlocks) {
  FakeBackend backend(1 << 30);
  CachingAllocator allocator(&backend);
  backend.StartWork();
  ASSERT_OK_AND_ASSIGN(void* live, allocator.Allocate(1 << 20, "live"));
  ASSERT_OK_AND_ASSIGN(void* dead, allocator.Allocate(2 << 20, "dead"));
  ASSERT_THAT(allocator.Free(dead), IsOk());
  ASSERT_THAT(allocator.ReleaseCache(), IsOk());
  EXPECT_EQ(backend.blocks_.size(), 1u);
  EXPECT_EQ(backend.blocks_.count(live), 1u);
  EXPECT_EQ(allocator.stats().bytes_reserved, 1 << 20);
  ASSERT_THAT(allocator.ReleaseAll(), IsOk());
  EXPECT_TRUE(backend.blocks_.empty());
  EXPECT_EQ(allocator.stats().bytes_reserved, 0);
}

// Many frees in flight: blocks come back in fence order as work completes.
TEST(CachingAllocatorTest, PendingBlocksReturnInFenceOrder) {
  FakeBackend backend(1 << 30);
  CachingAllocator allocator(&backend);
  backend.StartWork();
  std::vector<void*> blocks;
  std::vector<uint64_t> fences;
  for (int i = 0; i < 4; ++i) {
    ASSERT_OK_AND_ASSIGN(void* p, allocator.Allocate(8192, "x"));
    blocks.push_back(p);
  }
  for (void* p : blocks) {
    ASSERT_THAT(allocator.Free(p), IsOk());
    fences.push_back(backend.last_fence());
  }
  backend.Complete(fences[1]);  // the first two frees are safe
  std::set<void*> got;
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK_AND_ASSIGN(void* p, allocator.Allocate(8192, "y"));
    got.insert(p);
  }
  EXPECT_EQ(got, (std::set<void*>{blocks[0], blocks[1]}));
  EXPECT_EQ(allocator.stats().reserve_calls, 4);
  ASSERT_OK_AND_ASSIGN(void* fresh, allocator.Allocate(8192, "z"));
  EXPECT_EQ(std::count(blocks.begin(), blocks.end(), fresh), 0);
  EXPECT_EQ(allocator.stats().reserve_calls, 5);
  ASSERT_THAT(allocator.ReleaseAll(), IsOk());
  EXPECT_TRUE(backend.blocks_.empty());
}

}  // namespace
}  // namespace cuda
}  // namespace zero3
