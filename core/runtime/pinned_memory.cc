// Copyright 2026 The zero3 Authors.

#include "core/runtime/pinned_memory.h"

#include <sys/resource.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/check.h"

namespace zero3 {
namespace runtime {

absl::Status PinnedMemoryTracker::Allocate(int64_t bytes,
                                           absl::string_view label) {
  ZR_CHECK_GE(bytes, 0);
  absl::MutexLock lock(&mu_);
  if (limit_bytes_ > 0 && stats_.bytes_in_use + bytes > limit_bytes_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "pinning ", FormatBytes(bytes), " for ", label, " would exceed the ",
        FormatBytes(limit_bytes_), " pinned-memory limit (",
        FormatBytes(stats_.bytes_in_use),
        " already pinned); raise zero3.max_pinned_bytes "
        "(--max-pinned-bytes), set zero3.pinned_fallback: pageable, or set "
        "pin_memory: false in zero_optimization.offload_optimizer / "
        "offload_param to use pageable memory (slower, blocking copies)"));
  }
  stats_.bytes_in_use += bytes;
  stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.bytes_in_use);
  ++stats_.allocations;
  ++stats_.total_allocations;
  return absl::OkStatus();
}

void PinnedMemoryTracker::Free(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  ZR_CHECK_GE(stats_.bytes_in_use, bytes) << "pinned memory freed twice";
  ZR_CHECK_GT(stats_.allocations, 0);
  stats_.bytes_in_use -= bytes;
  --stats_.allocations;
}

void PinnedMemoryTracker::RecordFallback(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  ++stats_.fallback_allocations;
  stats_.fallback_bytes += bytes;
}

PinnedMemoryStats PinnedMemoryTracker::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

std::string PinnedMemoryTracker::Summary() const {
  const PinnedMemoryStats s = stats();
  std::string summary = absl::StrCat(
      "pinned host memory: ", FormatBytes(s.bytes_in_use), " in use, peak ",
      FormatBytes(s.peak_bytes), ", ", s.allocations, " allocations");
  if (s.fallback_allocations > 0) {
    absl::StrAppend(&summary, " (", FormatBytes(s.fallback_bytes),
                    " pageable instead)");
  }
  return summary;
}

int64_t MemlockLimitBytes() {
  struct rlimit limit;
  if (getrlimit(RLIMIT_MEMLOCK, &limit) != 0) return -1;
  if (limit.rlim_cur == RLIM_INFINITY) return -1;
  return static_cast<int64_t>(limit.rlim_cur);
}

std::string FormatBytes(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes >= (int64_t{1} << 30))
    return absl::StrFormat("%.2f GiB", b / (1 << 30));
  if (bytes >= (int64_t{1} << 20))
    return absl::StrFormat("%.1f MiB", b / (1 << 20));
  if (bytes >= (int64_t{1} << 10))
    return absl::StrFormat("%.1f KiB", b / (1 << 10));
  return absl::StrCat(bytes, " B");
}

}  // namespace runtime
}  // namespace zero3
