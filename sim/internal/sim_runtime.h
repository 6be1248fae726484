// Copyright 2026 The zero3 Authors.
//
// sim_runtime.h: one simulated rank as the engine sees it. SimRuntime is the
// rank's runtime::Runtime (host memory, pinned or pageable; host tasks;
// communicators); SimDevice its GPU (device memory, streams and events,
// device synchronize). In data mode buffers hold real bytes: device memory
// starts as a NaN pattern so reads of unwritten memory show, host memory as
// zeros. Used by the rank's thread only (see simulator.h).

#ifndef ZERO3_SIM_INTERNAL_SIM_RUNTIME_H_
#define ZERO3_SIM_INTERNAL_SIM_RUNTIME_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/runtime/runtime.h"
#include "sim/internal/collectives.h"
#include "sim/internal/communicator.h"
#include "sim/internal/rank_state.h"

namespace zero3 {
namespace sim {
namespace internal {

class SimDevice final : public runtime::Device {
 public:
  explicit SimDevice(RankState* rank) : rank_(rank) {}

  // runtime::Device
  absl::string_view name() const override;
  int64_t total_memory_bytes() const override;
  absl::StatusOr<runtime::Buffer> Allocate(int64_t bytes,
                                           absl::string_view label) override;
  absl::Status Free(const runtime::Buffer& buffer) override;
  absl::StatusOr<std::unique_ptr<runtime::Stream>> CreateStream(
      absl::string_view name) override;
  absl::StatusOr<std::unique_ptr<runtime::Event>> CreateEvent() override;
  absl::StatusOr<std::unique_ptr<runtime::Event>> CreateTimedEvent() override;
  absl::StatusOr<int64_t> ElapsedNanos(const runtime::Event& start,
                                       const runtime::Event& end) override;
  absl::Status Synchronize() override;
  runtime::MemoryStats memory_stats() const override { return stats_; }

 private:
  struct Allocation {
    int64_t bytes;
    std::unique_ptr<uint8_t[]> data;  // data mode only
  };

  RankState* rank_;
  runtime::MemoryStats stats_;
  absl::flat_hash_map<uint64_t, Allocation> live_;
};

class SimRuntime final : public runtime::Runtime {
 public:
  // Rank `rank` of `world`, meeting its peers in `collectives`.
  SimRuntime(WorldContext* world, CollectiveRendezvous* collectives, int rank);

  // runtime::Runtime
  int rank() const override { return state_.rank(); }
  int world_size() const override { return world_->world_size; }
  runtime::Device& device() override { return device_; }
  runtime::Communicator& world() override { return world_comm_; }
  absl::StatusOr<runtime::Communicator*> Group(
      const std::vector<int>& ranks) override;
  absl::StatusOr<runtime::Buffer> AllocateHost(
      int64_t bytes, runtime::HostMemoryKind kind,
      absl::string_view label) override;
  absl::Status FreeHost(const runtime::Buffer& buffer) override;
  absl::StatusOr<std::unique_ptr<runtime::DriveFile>> OpenDriveFile(
      const runtime::DriveFileOptions& options) override;
  absl::Status RunHostTask(const runtime::HostTask& task) override;
  bool computes_values() const override { return world_->data_mode; }
  int64_t NowNanos() override { return state_.now(); }
  void MarkSpan(absl::string_view name, int64_t begin_ns,
                int64_t end_ns) override {
    state_.Span(kHostTrack, name, begin_ns, end_ns, 0, "phase");
  }
  runtime::PinnedMemoryTracker& pinned_memory() override { return pinned_; }

  // For SimWorld's statistics.
  RankState& state() { return state_; }
  const RankState& state() const { return state_; }
  runtime::MemoryStats device_memory() const { return device_.memory_stats(); }
  runtime::PinnedMemoryStats pinned_stats() const { return pinned_.stats(); }

 private:
  struct HostAllocation {
    int64_t bytes;
    runtime::HostMemoryKind kind;
    std::unique_ptr<uint8_t[]> data;  // data mode only
  };

  WorldContext* world_;
  CollectiveRendezvous* collectives_;
  RankState state_;
  SimDevice device_;
  SimCommunicator world_comm_;
  runtime::PinnedMemoryTracker pinned_;
  absl::flat_hash_map<uint64_t, HostAllocation> host_;
  // Communicators of the groups this rank joined, by group id.
  absl::flat_hash_map<int, std::unique_ptr<SimCommunicator>> group_comms_;
};

}  // namespace internal
}  // namespace sim
}  // namespace zero3

#endif  // ZERO3_SIM_INTERNAL_SIM_RUNTIME_H_
