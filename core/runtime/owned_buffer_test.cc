// Copyright 2026 The zero3 Authors.

#include "core/runtime/owned_buffer.h"

#include <cstdlib>
#include <set>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::zero3::testing::IsOk;
using ::zero3::testing::StatusIs;

// Allocations and frees, by buffer id, of a device and its host runtime.
struct Ledger {
  uint64_t next_id = 0;
  std::set<uint64_t> live;
  std::vector<uint64_t> device_frees, host_frees;
};

class FakeDevice : public Device {
 public:
  explicit FakeDevice(Ledger* ledger) : ledger_(ledger) {}
  absl::string_view name() const override { return "fake"; }
  int64_t total_memory_bytes() const override { return 1 << 20; }
  absl::StatusOr<Buffer> Allocate(int64_t bytes, absl::string_view) override {
    if (bytes > total_memory_bytes()) {
      return absl::ResourceExhaustedError("device full");
    }
    ledger_->live.insert(++ledger_->next_id);
    return Buffer(ledger_->next_id, bytes, MemorySpace::kDevice, nullptr);
  }
  absl::Status Free(const Buffer& buffer) override {
    if (ledger_->live.erase(buffer.id()) == 0) {
      return absl::InvalidArgumentError("not live");
    }
    ledger_->device_frees.push_back(buffer.id());
    return absl::OkStatus();
  }
  absl::StatusOr<std::unique_ptr<Stream>> CreateStream(
      absl::string_view) override {
    return absl::UnimplementedError("fake");
  }
  absl::StatusOr<std::unique_ptr<Event>> CreateEvent() override {
    return absl::UnimplementedError("fake");
  }
  absl::StatusOr<std::unique_ptr<Event>> CreateTimedEvent() override {
    return absl::UnimplementedError("fake");
  }
  absl::StatusOr<int64_t> ElapsedNanos(const Event&, const Event&) override {
    return absl::UnimplementedError("fake");
  }
  absl::Status Synchronize() override { return absl::OkStatus(); }
  MemoryStats memory_stats() const override { return {}; }

 private:
  Ledger* ledger_;
};

class FakeRuntime : public Runtime {
 public:
  explicit FakeRuntime(Ledger* ledger) : ledger_(ledger), device_(ledger) {}
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  Device& device() override { return device_; }
  Communicator& world() override { std::abort(); }  // never called
  absl::StatusOr<Communicator*> Group(const std::vector<int>&) override {
    return absl::UnimplementedError("fake");
  }
  absl::StatusOr<Buffer> AllocateHost(int64_t bytes, HostMemoryKind kind,
                                      absl::string_view) override {
    ledger_->live.insert(++ledger_->next_id);
    return Buffer(ledger_->next_id, bytes,
                  kind == HostMemoryKind::kPinned ? MemorySpace::kPinnedHost
                                                  : MemorySpace::kPageableHost,
                  nullptr);
  }
  absl::Status FreeHost(const Buffer& buffer) override {
    if (ledger_->live.erase(buffer.id()) == 0) {
      return absl::InvalidArgumentError("not live");
    }
    ledger_->host_frees.push_back(buffer.id());
    return absl::OkStatus();
  }
  absl::Status RunHostTask(const HostTask&) override {
    return absl::OkStatus();
  }
  bool computes_values() const override { return false; }
  int64_t NowNanos() override { return 0; }
  PinnedMemoryTracker& pinned_memory() override { return pinned_; }

 private:
  Ledger* ledger_;
  FakeDevice device_;
  PinnedMemoryTracker pinned_;
};

TEST(OwnedBufferTest, FreesThroughItsAllocatorWhenDestroyed) {
  Ledger ledger;
  FakeRuntime rt(&ledger);
  {
    absl::StatusOr<OwnedBuffer> d = AllocateDevice(rt.device(), 64, "d");
    absl::StatusOr<OwnedBuffer> h =
        AllocateHost(rt, 32, HostMemoryKind::kPinned, "h");
    ASSERT_THAT(d.status(), IsOk());
    ASSERT_THAT(h.status(), IsOk());
    EXPECT_EQ(d->space(), MemorySpace::kDevice);
    EXPECT_EQ(h->space(), MemorySpace::kPinnedHost);
    EXPECT_EQ(d->All().bytes(), 64);
    const Buffer& handle = *h;
    EXPECT_EQ(handle.id(), h->get().id());
    EXPECT_EQ(ledger.live.size(), 2u);
  }
  EXPECT_THAT(ledger.live, IsEmpty());
  EXPECT_THAT(ledger.device_frees, ElementsAre(1));
  EXPECT_THAT(ledger.host_frees, ElementsAre(2));
}

TEST(OwnedBufferTest, MoveTransfersOwnership) {
  Ledger ledger;
  FakeRuntime rt(&ledger);
  OwnedBuffer a = AllocateDevice(rt.device(), 8, "a").value();
  OwnedBuffer b = std::move(a);
  EXPECT_FALSE(a.valid());  // NOLINT: moved-from is empty by contract
  EXPECT_TRUE(b.valid());
  OwnedBuffer c = AllocateHost(rt, 8, HostMemoryKind::kPageable, "c").value();
  c = std::move(b);  // frees c's host buffer, takes b's device buffer
  EXPECT_THAT(ledger.host_frees, ElementsAre(2));
  EXPECT_EQ(c.id(), 1u);
  EXPECT_THAT(ledger.device_frees, IsEmpty());
}

TEST(OwnedBufferTest, FreeReportsTheStatusAndEmpties) {
  Ledger ledger;
  FakeRuntime rt(&ledger);
  OwnedBuffer a = AllocateDevice(rt.device(), 8, "a").value();
  EXPECT_THAT(a.Free(), IsOk());
  EXPECT_FALSE(a.valid());
  EXPECT_THAT(a.Free(), IsOk());  // nothing held
  EXPECT_THAT(ledger.device_frees, ElementsAre(1));

  OwnedBuffer b = AllocateDevice(rt.device(), 8, "b").value();
  ASSERT_THAT(rt.device().Free(b), IsOk());  // freed behind its back
  EXPECT_THAT(b.Free(), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_FALSE(b.valid());
}

TEST(OwnedBufferTest, ReleaseGivesUpOwnership) {
  Ledger ledger;
  FakeRuntime rt(&ledger);
  Buffer raw;
  {
    OwnedBuffer a = AllocateDevice(rt.device(), 8, "a").value();
    raw = a.Release();
  }
  EXPECT_THAT(ledger.device_frees, IsEmpty());
  EXPECT_THAT(rt.device().Free(raw), IsOk());
}

TEST(OwnedBufferTest, AllocationErrorsPassThrough) {
  Ledger ledger;
  FakeRuntime rt(&ledger);
  EXPECT_THAT(AllocateDevice(rt.device(), 1 << 30, "big").status(),
              StatusIs(absl::StatusCode::kResourceExhausted));
}

}  // namespace
}  // namespace runtime
}  // namespace zero3
