// Copyright 2026 The zero3 Authors.
//
// owned_buffer.h: a Buffer that frees itself, through whoever allocated it.
//
// Buffer (buffer.h) is a plain handle; OwnedBuffer holds one and returns it
// to its allocator when destroyed: Device::Free for device memory,
// Runtime::FreeHost for pinned and pageable host memory. It is move-only,
// like a unique_ptr, and reads as the Buffer it holds (get(), an implicit
// conversion, and the Buffer accessors), so slices and TensorRefs are made
// from it as from a Buffer.
//
// Freeing memory that queued work still uses is a bug (see Device::Free):
// whoever owns OwnedBuffers and the streams that use them makes sure the
// device is idle (synchronizes) before they are destroyed. The destructor
// drops a failed free's status; callers that want it call Free().
//
// AllocateDevice and AllocateHost are the allocation entry points; the
// backend interface (Device::Allocate/Free, Runtime::AllocateHost/FreeHost)
// stays the primitive they call. Thread-compatible.

#ifndef ZERO3_CORE_RUNTIME_OWNED_BUFFER_H_
#define ZERO3_CORE_RUNTIME_OWNED_BUFFER_H_

#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/runtime/buffer.h"
#include "core/runtime/device.h"
#include "core/runtime/runtime.h"

namespace zero3 {
namespace runtime {

class OwnedBuffer {
 public:
  // Holds nothing.
  OwnedBuffer() = default;
  // Takes `buffer`, device memory that `device` allocated.
  OwnedBuffer(Device& device, const Buffer& buffer)
      : buffer_(buffer), device_(&device) {}
  // Takes `buffer`, host memory that `rt` allocated.
  OwnedBuffer(Runtime& rt, const Buffer& buffer)
      : buffer_(buffer), runtime_(&rt) {}

  OwnedBuffer(OwnedBuffer&& other) noexcept { *this = std::move(other); }
  OwnedBuffer& operator=(OwnedBuffer&& other) noexcept;
  OwnedBuffer(const OwnedBuffer&) = delete;
  OwnedBuffer& operator=(const OwnedBuffer&) = delete;

  ~OwnedBuffer() { Free().IgnoreError(); }

  // Frees the memory now (OK when nothing is held); holds nothing after,
  // whatever the status.
  absl::Status Free();
  // Gives the memory up without freeing it: the caller frees the handle.
  Buffer Release();

  // The handle (invalid when nothing is held).
  const Buffer& get() const { return buffer_; }
  operator const Buffer&() const { return buffer_; }  // NOLINT: a view

  uint64_t id() const { return buffer_.id(); }
  int64_t bytes() const { return buffer_.bytes(); }
  MemorySpace space() const { return buffer_.space(); }
  void* data() const { return buffer_.data(); }
  bool valid() const { return buffer_.valid(); }
  BufferSlice Slice(int64_t offset, int64_t bytes) const {
    return buffer_.Slice(offset, bytes);
  }
  BufferSlice All() const { return buffer_.All(); }

 private:
  Buffer buffer_;
  Device* device_ = nullptr;    // set for device memory
  Runtime* runtime_ = nullptr;  // set for host memory
};

// Device memory of `bytes`, uninitialized, as Device::Allocate.
absl::StatusOr<OwnedBuffer> AllocateDevice(Device& device, int64_t bytes,
                                           absl::string_view label);

// Host memory of `bytes`, zero-filled, as Runtime::AllocateHost. Where a
// pinned allocation fails and rt's PinnedMemoryTracker allows the pageable
// fallback, the memory is pageable instead (the buffer's space says so); the
// first such fallback of the process writes one warning line to stderr.
absl::StatusOr<OwnedBuffer> AllocateHost(Runtime& rt, int64_t bytes,
                                         HostMemoryKind kind,
                                         absl::string_view label);

}  // namespace runtime
}  // namespace zero3

#endif  // ZERO3_CORE_RUNTIME_OWNED_BUFFER_H_
