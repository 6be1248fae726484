// Copyright 2026 The zero3 Authors.
//
// pinned_memory.h: the one accounting point for pinned host memory.
//
// Every pinned allocation of every backend goes through a
// PinnedMemoryTracker: bytes in use, the high-water mark, the number of
// allocations, and an optional limit. Pinned pages cannot be paged out; the
// tracker makes their total visible (the engine prints it at start-up and on
// exit) and refuses allocations over the limit with an error that says which
// allocation failed, how much is pinned, and what to change.
//
// The limit defaults to none: on Linux the CUDA driver's pinning is not
// charged to RLIMIT_MEMLOCK (measured; see docs/config.md), so the real bound
// is host RAM. A user can set one (zero3.max_pinned_bytes) to fail early
// instead of running the host out of memory. MemlockLimitBytes() reports
// RLIMIT_MEMLOCK for messages. Thread-safe.

#ifndef ZERO3_CORE_RUNTIME_PINNED_MEMORY_H_
#define ZERO3_CORE_RUNTIME_PINNED_MEMORY_H_

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace zero3 {
namespace runtime {

struct PinnedMemoryStats {
  int64_t bytes_in_use = 0;
  int64_t peak_bytes = 0;
  int64_t allocations = 0;        // live
  int64_t total_allocations = 0;  // ever
};

class PinnedMemoryTracker {
 public:
  // limit_bytes <= 0 means no limit.
  explicit PinnedMemoryTracker(int64_t limit_bytes = 0)
      : limit_bytes_(limit_bytes) {}

  // Records an allocation of `bytes` named `label`, or returns
  // ResourceExhausted if it would exceed the limit.
  absl::Status Allocate(int64_t bytes, absl::string_view label);
  void Free(int64_t bytes);

  PinnedMemoryStats stats() const;
  int64_t limit_bytes() const { return limit_bytes_; }

  // "pinned host memory: 1.50 GiB in use, peak 2.00 GiB, 12 allocations".
  std::string Summary() const;

 private:
  const int64_t limit_bytes_;
  mutable absl::Mutex mu_;
  PinnedMemoryStats stats_ ABSL_GUARDED_BY(mu_);
};

// RLIMIT_MEMLOCK of this process in bytes, or -1 when unlimited.
int64_t MemlockLimitBytes();

// "1.50 GiB", "12.0 MiB", "512 B".
std::string FormatBytes(int64_t bytes);

}  // namespace runtime
}  // namespace zero3

#endif  // ZERO3_CORE_RUNTIME_PINNED_MEMORY_H_
