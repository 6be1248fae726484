// Copyright 2026 The zero3 Authors.

#include "tools/preflight/counting_runtime.h"

#include <algorithm>

namespace zero3 {
namespace preflight {

absl::StatusOr<runtime::Buffer> CountingRuntime::AllocateHost(
    int64_t bytes, runtime::HostMemoryKind kind, absl::string_view label) {
  absl::StatusOr<runtime::Buffer> buffer =
      inner_.AllocateHost(bytes, kind, label);
  if (buffer.ok() && buffer->space() == runtime::MemorySpace::kPageableHost) {
    pageable_[buffer->id()] = bytes;
    pageable_in_use_ += bytes;
    pageable_peak_ = std::max(pageable_peak_, pageable_in_use_);
  }
  return buffer;
}

absl::Status CountingRuntime::FreeHost(const runtime::Buffer& buffer) {
  const absl::Status status = inner_.FreeHost(buffer);
  auto it = pageable_.find(buffer.id());
  if (status.ok() && it != pageable_.end()) {
    pageable_in_use_ -= it->second;
    pageable_.erase(it);
  }
  return status;
}

}  // namespace preflight
}  // namespace zero3
