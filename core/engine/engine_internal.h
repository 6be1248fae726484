// Copyright 2026 The zero3 Authors.
//
// engine_internal.h: small helpers shared by the engine's source files
// (engine.cc, engine_setup.cc, engine_update.cc, engine_state.cc); not part
// of the engine's interface.

#ifndef ZERO3_CORE_ENGINE_ENGINE_INTERNAL_H_
#define ZERO3_CORE_ENGINE_ENGINE_INTERNAL_H_

#include "core/runtime/runtime.h"
#include "core/zero/options.h"

namespace zero3 {
namespace engine {
namespace internal {

// The threads a host task of the optimizer declares: the configured count,
// or all of the rank's cores (the simulator caps this at the rank's share of
// the node).
inline int HostTaskThreads(const zero::ZeroOptions& options) {
  return options.optimizer_threads > 0 ? options.optimizer_threads : 1 << 16;
}

// Pinned host memory where `pinned`, else pageable.
inline runtime::HostMemoryKind PinnedIf(bool pinned) {
  return pinned ? runtime::HostMemoryKind::kPinned
                : runtime::HostMemoryKind::kPageable;
}

}  // namespace internal
}  // namespace engine
}  // namespace zero3

#endif  // ZERO3_CORE_ENGINE_ENGINE_INTERNAL_H_
