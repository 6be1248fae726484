// Copyright 2026 The zero3 Authors.
//
// stream.h: in-order device work queues and the events that order them.
//
// A Stream executes the work enqueued on it in order: copies, kernels, event
// records and event waits. Work on different streams of one device runs
// concurrently unless ordered by events. Enqueueing returns to the host
// without waiting for the work, with two exceptions that mirror CUDA: a copy
// into pageable host memory (device-to-host), and a copy from pageable host
// memory above a small size (host-to-device), block the calling thread until
// the copy and everything queued before it on the stream are done.
//
// Nothing orders host reads of a host buffer after an asynchronous copy into
// it except Synchronize() on the stream, or Event::Synchronize() (or an
// Event::Query() that returned true) on an event recorded after the copy. The
// simulator's race detector reports any host access that is not so ordered.
//
// A Stream and an Event belong to one Device and one host thread; they are
// not thread-safe.

#ifndef ZERO3_CORE_RUNTIME_STREAM_H_
#define ZERO3_CORE_RUNTIME_STREAM_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/runtime/buffer.h"
#include "core/runtime/kernel_call.h"

namespace zero3 {
namespace runtime {

class Event {
 public:
  virtual ~Event() = default;

  // Blocks the host until the work captured by the last Stream::Record of
  // this event is done. An event never recorded is complete.
  virtual absl::Status Synchronize() = 0;

  // Does not block: true when the work captured by the last Stream::Record
  // of this event is done (an event never recorded is complete), false
  // while it is not. A true answer orders the host after that work as
  // Synchronize() does; a false one orders nothing.
  virtual absl::StatusOr<bool> Query() = 0;
};

class Stream {
 public:
  virtual ~Stream() = default;

  virtual absl::string_view name() const = 0;

  // Copies src into dst (equal sizes, any pair of memory spaces). Blocks the
  // host in the pageable cases described in the file comment.
  virtual absl::Status Copy(const BufferSlice& dst, const BufferSlice& src,
                            absl::string_view label) = 0;

  // Copies `rows` rows of `row_bytes` bytes: row i goes from byte
  // i * src_pitch of src to byte i * dst_pitch of dst (cudaMemcpy2DAsync).
  // Both slices must cover their last row. Device-to-device only.
  virtual absl::Status Copy2D(const BufferSlice& dst, int64_t dst_pitch,
                              const BufferSlice& src, int64_t src_pitch,
                              int64_t row_bytes, int64_t rows,
                              absl::string_view label) = 0;

  // Sets every byte of dst to `value`.
  virtual absl::Status Memset(const BufferSlice& dst, uint8_t value,
                              absl::string_view label) = 0;

  // Runs a kernel (see kernel_call.h).
  virtual absl::Status Launch(const KernelCall& call) = 0;

  // Captures the work enqueued so far; a later Wait or Synchronize on the
  // event waits for exactly that work. Re-recording replaces the capture.
  virtual absl::Status Record(Event& event) = 0;

  // Makes work enqueued after this call wait for the event's captured work.
  // Does not block the host.
  virtual absl::Status Wait(const Event& event) = 0;

  // Blocks the host until all work enqueued so far is done.
  virtual absl::Status Synchronize() = 0;
};

}  // namespace runtime
}  // namespace zero3

#endif  // ZERO3_CORE_RUNTIME_STREAM_H_
