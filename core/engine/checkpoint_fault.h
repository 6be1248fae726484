// Copyright 2026 The zero3 Authors.
//
// checkpoint_fault.h: a test-only hook that kills the process (SIGKILL) at
// a named point of a checkpoint save, so that a test can check what a
// crash there leaves behind, or makes the write there fail as the system
// would (no space left, permission denied, no such directory). Inert
// unless the environment variable ZERO3_CHECKPOINT_FAULT is set to
// POINT[:K[:ERRNO]]: the K-th time POINT is reached in this process
// (counting from 1; default 1) it raises SIGKILL, or, with ERRNO (ENOSPC,
// EACCES or ENOENT), fails with that error. The points are listed in
// tools/cli/checkpoint_fault_binary_test.sh. Thread-safe.

#ifndef ZERO3_CORE_ENGINE_CHECKPOINT_FAULT_H_
#define ZERO3_CORE_ENGINE_CHECKPOINT_FAULT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace zero3 {
namespace engine {

// When ZERO3_CHECKPOINT_FAULT names `point` and this is its chosen
// occurrence: raises SIGKILL, or returns the error chosen, as writing
// `path` would (naming it and the system's reason). Otherwise OK.
absl::Status CheckpointFaultPoint(absl::string_view point,
                                  const std::string& path);

}  // namespace engine
}  // namespace zero3

#endif  // ZERO3_CORE_ENGINE_CHECKPOINT_FAULT_H_
