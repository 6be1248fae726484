// Copyright 2026 The zero3 Authors.

#include "core/runtime/buffer.h"

namespace zero3 {
namespace runtime {

absl::string_view MemorySpaceName(MemorySpace space) {
  switch (space) {
    case MemorySpace::kDevice:
      return "device";
    case MemorySpace::kPinnedHost:
      return "pinned host";
    case MemorySpace::kPageableHost:
      return "pageable host";
  }
  return "?";
}

}  // namespace runtime
}  // namespace zero3
