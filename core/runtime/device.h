// Copyright 2026 The zero3 Authors.
//
// device.h: one accelerator as seen by one rank's host thread.
//
// The Device allocates device memory and creates streams and events. It owns
// the memory it allocates until Free; it owns nothing the caller holds
// (streams and events are returned as unique_ptrs the caller owns and must
// destroy before the Device). Not thread-safe: one host thread drives it.

#ifndef ZERO3_CORE_RUNTIME_DEVICE_H_
#define ZERO3_CORE_RUNTIME_DEVICE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/runtime/buffer.h"
#include "core/runtime/stream.h"

namespace zero3 {
namespace runtime {

struct MemoryStats {
  int64_t bytes_in_use = 0;
  int64_t peak_bytes_in_use = 0;
  int64_t allocations = 0;  // live allocations
};

class Device {
 public:
  virtual ~Device() = default;

  virtual absl::string_view name() const = 0;
  virtual int64_t total_memory_bytes() const = 0;

  // Allocates uninitialized device memory. ResourceExhausted when the device
  // is full; the message says how much is in use.
  virtual absl::StatusOr<Buffer> Allocate(int64_t bytes,
                                          absl::string_view label) = 0;

  // Returns memory to the device. Freeing a buffer that queued work still
  // uses is a bug the simulator reports (use after free); the CUDA backend
  // defers the reuse until that work is done.
  virtual absl::Status Free(const Buffer& buffer) = 0;

  virtual absl::StatusOr<std::unique_ptr<Stream>> CreateStream(
      absl::string_view name) = 0;
  virtual absl::StatusOr<std::unique_ptr<Event>> CreateEvent() = 0;
  // An event that also notes when the device reached it, for ElapsedNanos
  // (on CUDA a timed event, which costs a little more to record).
  virtual absl::StatusOr<std::unique_ptr<Event>> CreateTimedEvent() = 0;
  // Device time from `start` to `end`, two timed events of this device
  // that have been recorded and are complete (FailedPrecondition
  // otherwise; wait for `end` first). Does not block.
  virtual absl::StatusOr<int64_t> ElapsedNanos(const Event& start,
                                               const Event& end) = 0;

  // Blocks the host until all work on all streams is done.
  virtual absl::Status Synchronize() = 0;

  virtual MemoryStats memory_stats() const = 0;

  // Device memory a new allocation can still get, as the backend sees it
  // (on GPUs the driver's free memory, which the CUDA context and other
  // processes have already reduced); by default total less in use.
  virtual int64_t free_memory_bytes() const {
    return total_memory_bytes() - memory_stats().bytes_in_use;
  }
};

}  // namespace runtime
}  // namespace zero3

#endif  // ZERO3_CORE_RUNTIME_DEVICE_H_
