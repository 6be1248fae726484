// Copyright 2026 The zero3 Authors.

#include "core/runtime/owned_buffer.h"

#include <iostream>
#include <mutex>  // NOLINT: std::call_once
#include <utility>

#include "core/util/status_macros.h"

namespace zero3 {
namespace runtime {

OwnedBuffer& OwnedBuffer::operator=(OwnedBuffer&& other) noexcept {
  if (this != &other) {
    Free().IgnoreError();
    buffer_ = other.buffer_;
    device_ = other.device_;
    runtime_ = other.runtime_;
    other.Release();
  }
  return *this;
}

absl::Status OwnedBuffer::Free() {
  if (!buffer_.valid()) return absl::OkStatus();
  Device* device = device_;
  Runtime* rt = runtime_;
  const Buffer buffer = Release();
  return device != nullptr ? device->Free(buffer) : rt->FreeHost(buffer);
}

Buffer OwnedBuffer::Release() {
  const Buffer buffer = buffer_;
  buffer_ = Buffer();
  device_ = nullptr;
  runtime_ = nullptr;
  return buffer;
}

namespace {

// One line per process, whichever rank is refused first.
void WarnPinnedFallbackOnce(const absl::Status& refused) {
  static std::once_flag once;
  std::call_once(once, [&] {
    std::cerr << "warning: pinned host memory refused, allocating pageable "
                 "memory instead (zero3.pinned_fallback: pageable; copies "
                 "from it are slower): "
              << refused.message() << "\n";
  });
}

}  // namespace

absl::StatusOr<OwnedBuffer> AllocateDevice(Device& device, int64_t bytes,
                                           absl::string_view label) {
  ZR_ASSIGN_OR_RETURN(const Buffer buffer, device.Allocate(bytes, label));
  return OwnedBuffer(device, buffer);
}

absl::StatusOr<OwnedBuffer> AllocateHost(Runtime& rt, int64_t bytes,
                                         HostMemoryKind kind,
                                         absl::string_view label) {
  absl::StatusOr<Buffer> buffer = rt.AllocateHost(bytes, kind, label);
  PinnedMemoryTracker& pinned = rt.pinned_memory();
  if (!buffer.ok() && kind == HostMemoryKind::kPinned &&
      pinned.fallback_to_pageable()) {
    WarnPinnedFallbackOnce(buffer.status());
    buffer = rt.AllocateHost(bytes, HostMemoryKind::kPageable, label);
    if (buffer.ok()) pinned.RecordFallback(bytes);
  }
  if (!buffer.ok()) return buffer.status();
  return OwnedBuffer(rt, *buffer);
}

}  // namespace runtime
}  // namespace zero3
