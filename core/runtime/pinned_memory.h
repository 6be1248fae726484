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
// The limit defaults to none here: on Linux the CUDA driver's pinning is not
// charged to RLIMIT_MEMLOCK (measured; see docs/config.md), so the real bound
// is host RAM, and the tools set one (zero3.max_pinned_bytes, by default a
// share of the node's RAM) to fail early instead of running the host out of
// memory. With the pageable fallback (zero3.pinned_fallback: pageable) a
// refused pinned allocation becomes a pageable one (runtime::AllocateHost
// does it, and counts it here). MemlockLimitBytes() reports RLIMIT_MEMLOCK
// for messages. Thread-safe.

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
  // Pinned allocations that were refused and made pageable instead.
  int64_t fallback_allocations = 0;
  int64_t fallback_bytes = 0;
};

class PinnedMemoryTracker {
 public:
  // limit_bytes <= 0 means no limit. With fallback_to_pageable, callers
  // that are refused pinned memory allocate pageable memory instead.
  explicit PinnedMemoryTracker(int64_t limit_bytes = 0,
                               bool fallback_to_pageable = false)
      : limit_bytes_(limit_bytes),
        fallback_to_pageable_(fallback_to_pageable) {}

  // Records an allocation of `bytes` named `label`, or returns
  // ResourceExhausted if it would exceed the limit.
  absl::Status Allocate(int64_t bytes, absl::string_view label);
  void Free(int64_t bytes);
  // Records that `bytes` meant to be pinned were allocated pageable.
  void RecordFallback(int64_t bytes);

  PinnedMemoryStats stats() const;
  int64_t limit_bytes() const { return limit_bytes_; }
  bool fallback_to_pageable() const { return fallback_to_pageable_; }

  // "pinned host memory: 1.50 GiB in use, peak 2.00 GiB, 12 allocations".
  std::string Summary() const;

 private:
  const int64_t limit_bytes_;
  const bool fallback_to_pageable_;
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
