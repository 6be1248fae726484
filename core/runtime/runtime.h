// Copyright 2026 The zero3 Authors.
//
// runtime.h: THE backend interface. One Runtime per rank.
//
// A Runtime bundles what one rank's host thread uses: its Device, the
// Communicator over all ranks, host memory (pinned or pageable, with pinned
// bytes accounted in one place), host tasks, and a clock. The engine in
// core/ is written against this interface only; backends (the simulator in
// sim/, CUDA in backends/cuda/) implement it, and a tool at the top picks one.
//
// The clock is virtual time on the simulator and steady-clock time on real
// hardware; the engine reports phase times from it either way.
//
// Not thread-safe: each rank's host thread drives its own Runtime.

#ifndef ZERO3_CORE_RUNTIME_RUNTIME_H_
#define ZERO3_CORE_RUNTIME_RUNTIME_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/runtime/buffer.h"
#include "core/runtime/communicator.h"
#include "core/runtime/device.h"
#include "core/runtime/drive_file.h"
#include "core/runtime/host_task.h"
#include "core/runtime/pinned_memory.h"

namespace zero3 {
namespace runtime {

enum class HostMemoryKind { kPinned, kPageable };

// Pinned host memory where `pinned` (a configuration's pin_memory), else
// pageable.
inline HostMemoryKind PinnedIf(bool pinned) {
  return pinned ? HostMemoryKind::kPinned : HostMemoryKind::kPageable;
}

class Runtime {
 public:
  virtual ~Runtime() = default;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  virtual Device& device() = 0;
  // All ranks of the job, in rank order.
  virtual Communicator& world() = 0;

  // A communicator over `ranks` (world ranks, ascending, this rank among
  // them); its rank() is this rank's index in the list. Every member asks
  // for the same list, in the same order relative to its other groups.
  // Owned by the runtime. Backends that cannot form subgroups return
  // Unimplemented for anything but all ranks.
  virtual absl::StatusOr<Communicator*> Group(
      const std::vector<int>& ranks) = 0;

  // Allocates host memory, zero-filled. Pinned allocations go through
  // pinned_memory() and block the host while the pages are pinned (pinning
  // costs time: allocate pinned buffers at start-up, not per step).
  virtual absl::StatusOr<Buffer> AllocateHost(int64_t bytes,
                                              HostMemoryKind kind,
                                              absl::string_view label) = 0;
  virtual absl::Status FreeHost(const Buffer& buffer) = 0;

  // Runs `task` on this host thread and returns when it is done.
  virtual absl::Status RunHostTask(const HostTask& task) = 0;

  // A scratch file on a drive (drive_file.h). The real file unless a
  // backend models drives (the simulator does).
  virtual absl::StatusOr<std::unique_ptr<DriveFile>> OpenDriveFile(
      const DriveFileOptions& options) {
    return OpenRealDriveFile(options);
  }

  // False where buffers hold no bytes and kernels compute nothing (the
  // simulator's timing mode). Host code must then not read buffer contents.
  virtual bool computes_values() const = 0;

  // Host time in nanoseconds (virtual on the simulator).
  virtual int64_t NowNanos() = 0;

  // Marks a span [begin_ns, end_ns) named `name` on this rank's host track
  // of the trace, if the backend keeps one (FWD, BWD, STEP, ...).
  virtual void MarkSpan(absl::string_view name, int64_t begin_ns,
                        int64_t end_ns) {}

  virtual PinnedMemoryTracker& pinned_memory() = 0;
};

// The function each rank runs; a backend's launcher calls it once per rank.
using RankFunction = std::function<absl::Status(Runtime&)>;

}  // namespace runtime
}  // namespace zero3

#endif  // ZERO3_CORE_RUNTIME_RUNTIME_H_
