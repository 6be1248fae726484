// Copyright 2026 The zero3 Authors.
//
// buffer.h: handles to device and host memory, and typed views into them.
//
// A Buffer is a value-type handle (id, size, memory space, base pointer) to an
// allocation owned by a Device (device memory) or a Runtime (host memory). It
// does not own the memory; copying a Buffer copies the handle. Code that
// allocates holds an OwnedBuffer (owned_buffer.h), which frees through the
// allocator that returned it.
//
// Every access the engine makes to memory names a byte range of a buffer (a
// BufferSlice). The simulator orders and checks accesses by these ranges (its
// race detector), the CUDA backend turns them into pointers.
//
// data() is the base address of the bytes: host memory for host buffers;
// for device buffers a device address on real GPUs (for kernels, never to
// dereference on the host) and host memory in the simulator's data mode. It
// is null where the backend holds no bytes (the simulator's timing mode).
// Thread-compatible.

#ifndef ZERO3_CORE_RUNTIME_BUFFER_H_
#define ZERO3_CORE_RUNTIME_BUFFER_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "core/kernels/dtype.h"
#include "core/util/check.h"

namespace zero3 {
namespace runtime {

using kernels::DType;

// Where a buffer lives. Pinned host memory can be the target of asynchronous,
// full-bandwidth copies; pageable memory is staged by the driver and copies
// into or out of it block the issuing host thread.
enum class MemorySpace { kDevice, kPinnedHost, kPageableHost };

absl::string_view MemorySpaceName(MemorySpace space);
inline bool IsHost(MemorySpace space) { return space != MemorySpace::kDevice; }

class BufferSlice;

class Buffer {
 public:
  Buffer() = default;
  Buffer(uint64_t id, int64_t bytes, MemorySpace space, void* data)
      : id_(id), bytes_(bytes), space_(space), data_(data) {}

  // Unique per backend instance for the life of the process; 0 is "none".
  uint64_t id() const { return id_; }
  int64_t bytes() const { return bytes_; }
  MemorySpace space() const { return space_; }
  void* data() const { return data_; }
  bool valid() const { return id_ != 0; }

  BufferSlice Slice(int64_t offset, int64_t bytes) const;
  BufferSlice All() const;

  friend bool operator==(const Buffer& a, const Buffer& b) {
    return a.id_ == b.id_;
  }

 private:
  uint64_t id_ = 0;
  int64_t bytes_ = 0;
  MemorySpace space_ = MemorySpace::kDevice;
  void* data_ = nullptr;
};

// A byte range [offset, offset + bytes) of a buffer.
class BufferSlice {
 public:
  BufferSlice() = default;
  BufferSlice(const Buffer& buffer, int64_t offset, int64_t bytes)
      : buffer_(buffer), offset_(offset), bytes_(bytes) {
    ZR_CHECK(offset >= 0 && bytes >= 0 && offset + bytes <= buffer.bytes())
        << "slice [" << offset << ", " << offset + bytes
        << ") outside buffer of " << buffer.bytes() << " bytes";
  }

  const Buffer& buffer() const { return buffer_; }
  int64_t offset() const { return offset_; }
  int64_t bytes() const { return bytes_; }
  MemorySpace space() const { return buffer_.space(); }
  bool empty() const { return bytes_ == 0; }

  // See the file comment: a device address for device buffers on GPUs; null
  // where the backend holds no bytes.
  void* data() const {
    return buffer_.data() == nullptr
               ? nullptr
               : static_cast<char*>(buffer_.data()) + offset_;
  }
  template <typename T>
  T* As() const {
    return static_cast<T*>(data());
  }

  // A sub-range relative to this slice.
  BufferSlice Sub(int64_t offset, int64_t bytes) const {
    ZR_CHECK(offset >= 0 && bytes >= 0 && offset + bytes <= bytes_)
        << "sub-slice [" << offset << ", " << offset + bytes
        << ") outside slice of " << bytes_ << " bytes";
    return BufferSlice(buffer_, offset_ + offset, bytes);
  }

  bool Overlaps(const BufferSlice& other) const {
    return buffer_.id() == other.buffer_.id() &&
           offset_ < other.offset_ + other.bytes_ &&
           other.offset_ < offset_ + bytes_;
  }

 private:
  Buffer buffer_;
  int64_t offset_ = 0;
  int64_t bytes_ = 0;
};

inline BufferSlice Buffer::Slice(int64_t offset, int64_t bytes) const {
  return BufferSlice(*this, offset, bytes);
}
inline BufferSlice Buffer::All() const { return BufferSlice(*this, 0, bytes_); }

// A slice holding `elements` values of `dtype`, densely packed.
struct TensorRef {
  TensorRef() = default;
  TensorRef(BufferSlice slice, DType dtype) : slice(slice), dtype(dtype) {
    ZR_CHECK_EQ(slice.bytes() % kernels::DTypeSize(dtype), 0)
        << "slice is not a whole number of " << kernels::DTypeName(dtype);
  }
  // Elements [first, first + elements) of a buffer seen as an array of
  // `dtype`.
  static TensorRef Of(const Buffer& buffer, DType dtype, int64_t first,
                      int64_t elements) {
    const int64_t size = kernels::DTypeSize(dtype);
    return TensorRef(buffer.Slice(first * size, elements * size), dtype);
  }

  int64_t elements() const { return slice.bytes() / kernels::DTypeSize(dtype); }
  // Elements [first, first + count) of this tensor.
  TensorRef Elements(int64_t first, int64_t count) const {
    const int64_t size = kernels::DTypeSize(dtype);
    return TensorRef(slice.Sub(first * size, count * size), dtype);
  }

  BufferSlice slice;
  DType dtype = DType::kF32;
};

}  // namespace runtime
}  // namespace zero3

#endif  // ZERO3_CORE_RUNTIME_BUFFER_H_
