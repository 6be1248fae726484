// Copyright 2026 The zero3 Authors.

#include "backends/cuda/caching_allocator.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/runtime/pinned_memory.h"

namespace zero3 {
namespace cuda {
namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;

int64_t RoundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

}  // namespace

int64_t CachingAllocator::SizeClass(int64_t bytes) {
  if (bytes <= 0) return 512;
  if (bytes <= kMiB) return RoundUp(bytes, 512);
  if (bytes <= 64 * kMiB) return RoundUp(bytes, 128 * kKiB);
  return RoundUp(bytes, 2 * kMiB);
}

absl::Status CachingAllocator::Poll() {
  while (!pending_.empty()) {
    const uint64_t fence = pending_.front().fence;
    if (fence > reached_) {
      absl::StatusOr<bool> reached = backend_->FenceReached(fence);
      if (!reached.ok()) return reached.status();
      if (!*reached) break;
      reached_ = fence;
    }
    const Pending p = pending_.front();
    pending_.pop_front();
    free_[p.size_class].push_back(p.ptr);
  }
  return absl::OkStatus();
}

absl::StatusOr<void*> CachingAllocator::Allocate(int64_t bytes,
                                                 absl::string_view label) {
  if (bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("negative allocation for ", label));
  }
  const int64_t size_class = SizeClass(bytes);
  void* ptr = nullptr;
  auto take = [&]() -> bool {
    auto it = free_.find(size_class);
    if (it == free_.end() || it->second.empty()) return false;
    ptr = it->second.back();
    it->second.pop_back();
    stats_.bytes_cached -= size_class;
    ++stats_.cache_hits;
    return true;
  };
  if (!take()) {
    absl::Status polled = Poll();
    if (!polled.ok()) return polled;
    if (!take()) {
      absl::StatusOr<void*> reserved = backend_->Reserve(size_class);
      ++stats_.reserve_calls;
      if (!reserved.ok() && absl::IsResourceExhausted(reserved.status()) &&
          stats_.bytes_cached > 0) {
        // The cache may hold what the request needs, in other classes.
        absl::Status released = ReleaseCache();
        if (!released.ok()) return released;
        reserved = backend_->Reserve(size_class);
        ++stats_.reserve_calls;
      }
      if (!reserved.ok()) {
        if (!absl::IsResourceExhausted(reserved.status())) {
          return reserved.status();
        }
        return absl::ResourceExhaustedError(absl::StrCat(
            "device out of memory allocating ", runtime::FormatBytes(bytes),
            " for ", label, ": ", runtime::FormatBytes(stats_.bytes_in_use),
            " in use by ", stats_.allocations, " allocations (peak ",
            runtime::FormatBytes(stats_.peak_bytes_in_use), "), ",
            runtime::FormatBytes(stats_.bytes_reserved),
            " reserved from the device (", reserved.status().message(), ")"));
      }
      ptr = *reserved;
      stats_.bytes_reserved += size_class;
      stats_.peak_bytes_reserved =
          std::max(stats_.peak_bytes_reserved, stats_.bytes_reserved);
    }
  }
  live_[ptr] = Live{size_class, bytes};
  stats_.bytes_in_use += bytes;
  stats_.peak_bytes_in_use =
      std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  ++stats_.allocations;
  return ptr;
}

absl::Status CachingAllocator::Free(void* ptr) {
  auto it = live_.find(ptr);
  if (it == live_.end()) {
    return absl::InvalidArgumentError(
        "freeing device memory that is not a live allocation of this device "
        "(freed twice?)");
  }
  const Live live = it->second;
  live_.erase(it);
  stats_.bytes_in_use -= live.requested;
  --stats_.allocations;
  stats_.bytes_cached += live.size_class;
  absl::StatusOr<uint64_t> fence = backend_->MakeFence();
  if (!fence.ok()) {
    // Without a fence the block cannot be reused safely; keep it out of the
    // cache until ReleaseAll (which runs on an idle device).
    unfenced_.push_back(Pending{ptr, live.size_class, 0});
    return fence.status();
  }
  if (*fence == 0 || *fence <= reached_) {
    free_[live.size_class].push_back(ptr);
  } else {
    pending_.push_back(Pending{ptr, live.size_class, *fence});
  }
  return absl::OkStatus();
}

absl::Status CachingAllocator::ReleaseFree() {
  for (auto& [size_class, blocks] : free_) {
    for (void* ptr : blocks) {
      absl::Status s = backend_->Release(ptr);
      ++stats_.release_calls;
      stats_.bytes_cached -= size_class;
      stats_.bytes_reserved -= size_class;
      if (!s.ok()) return s;
    }
    blocks.clear();
  }
  free_.clear();
  return absl::OkStatus();
}

absl::Status CachingAllocator::ReleaseCache() {
  if (!pending_.empty()) {
    const uint64_t last = pending_.back().fence;
    if (last > reached_) {
      absl::Status waited = backend_->WaitFence(last);
      if (!waited.ok()) return waited;
      reached_ = last;
    }
    for (const Pending& p : pending_) free_[p.size_class].push_back(p.ptr);
    pending_.clear();
  }
  return ReleaseFree();
}

absl::Status CachingAllocator::ReleaseAll() {
  absl::Status result;
  for (const Pending& p : pending_) free_[p.size_class].push_back(p.ptr);
  for (const Pending& p : unfenced_) free_[p.size_class].push_back(p.ptr);
  pending_.clear();
  unfenced_.clear();
  result.Update(ReleaseFree());
  for (const auto& [ptr, live] : live_) {
    result.Update(backend_->Release(ptr));
    ++stats_.release_calls;
    stats_.bytes_reserved -= live.size_class;
  }
  live_.clear();
  stats_.bytes_in_use = 0;
  stats_.allocations = 0;
  return result;
}

}  // namespace cuda
}  // namespace zero3
