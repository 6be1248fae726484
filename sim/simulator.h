// Copyright 2026 The zero3 Authors.
//
// simulator.h: the simulated device backend.
//
// A SimWorld simulates `world_size` ranks, each with a host thread, a GPU
// (streams, one compute engine, one copy link per direction), pinned and
// pageable host memory, and a fabric for collectives, in virtual time
// (integer nanoseconds). Run() calls the engine's per-rank function once per
// rank, each on its own fiber (a cooperative thread on the calling thread);
// exactly one runs at a time.
//
// Timing. Every runtime call costs host time (the host profile's API costs);
// the work it enqueues starts when its stream, the events it waits on, and
// its resource (compute engine, the copy direction's link, the fabric) allow,
// filling earlier gaps of the resource when it fits. Blocking calls
// (synchronize, event synchronize, pageable copies as measured on CUDA) move
// the host clock to the completion time. Costs come from a CostModel over a
// HardwareProfile.
//
// Ranks. Ranks interact only through collectives. A rank runs until it issues
// a collective that not every rank of the group has reached; the scheduler
// then runs the runnable rank with the lowest virtual time (ties by rank id).
// The last rank to arrive completes the collective for all. Results are
// therefore independent of thread timing: the same inputs give
// byte-identical traces. A rank that finishes while others wait in a
// collective fails the run, naming the collective.
//
// Modes. Data mode holds real bytes (device buffers start as NaN bit
// patterns, host buffers as zeros) and runs every kernel's CPU reference when
// it is enqueued; since enqueue order respects every happens-before edge, a
// race-free program computes exactly what it would on a GPU. Timing mode
// holds no bytes and computes nothing, so models far larger than this
// machine's memory are cheap.
//
// Symmetric shortcut (timing mode only). When every rank of the data-parallel
// group issues the same work (ZeRO-3 pads every shard to the same size, so
// its ranks are symmetric), simulating rank 0 alone gives every rank's times:
// a collective then starts when rank 0 reaches it, which is when all ranks
// do. `symmetric` enables this; tests check it against the full simulation.
//
// Race detection: see race_detector.h. Strict mode additionally treats
// pageable copies as not synchronizing the host (as CUDA documents they
// "might" not), so code cannot rely on their accidental synchronization.
//
// Thread-safety: SimWorld is driven from one thread; Run() blocks until all
// ranks finish. Runtimes handed to the rank function are for that rank's
// thread only.

#ifndef ZERO3_SIM_SIMULATOR_H_
#define ZERO3_SIM_SIMULATOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/runtime/op_timing.h"
#include "core/runtime/runtime.h"
#include "sim/activity.h"
#include "sim/cost_model.h"
#include "sim/profile.pb.h"
#include "sim/race_detector.h"
#include "sim/trace.h"

namespace zero3 {
namespace sim {

enum class SimMode { kData, kTiming };

// The most ranks one world simulates (every rank, or 1 with the symmetric
// shortcut, whose world_size is not limited). Each simulated rank runs on a
// fiber with a stack of its own and holds its engine's state: about 0.4 MB
// for Qwen2.5-7B in timing mode, so the limit keeps a full world within a
// few GB and within the kernel's default count of memory maps.
inline constexpr int kMaxSimulatedRanks = 16384;

struct SimOptions {
  HardwareProfile profile;
  int world_size = 1;
  SimMode mode = SimMode::kData;
  bool detect_races = true;
  bool strict = false;
  // Each operation's cost is multiplied by 1 + jitter * u, u uniform in
  // [-1, 1) from a generator seeded by (seed, rank).
  double jitter = 0.0;
  uint64_t seed = 0;
  bool trace = false;
  bool symmetric = false;
  // Per-rank limit on pinned host memory; 0 for none.
  int64_t max_pinned_bytes = 0;
  // A refused pinned allocation becomes pageable (zero3.pinned_fallback).
  bool pinned_fallback = false;
  // Times every copy, memset and kernel as the CUDA backend's op timing
  // does (Launcher::StartOpTiming): between two events recorded on its
  // stream around it, which the host pays for and which occupy the launch
  // queue. An operation's time runs from when its stream reached the first
  // event to when it reached the second: where the host issues slower than
  // the device runs, that includes the operation's own launch. Read with
  // SimWorld::TakeOpTimings.
  bool op_timing = false;
};

// ActivityInterval, a rank's busy time by kind of work: sim/activity.h.

struct RankStats {
  int64_t host_now_ns = 0;
  int64_t device_busy_until_ns = 0;
  int64_t ops = 0;
  int64_t host_blocked_ns = 0;
  runtime::MemoryStats device_memory;
  runtime::PinnedMemoryStats pinned;
};

class SimWorld {
 public:
  static absl::StatusOr<std::unique_ptr<SimWorld>> Create(SimOptions options);
  ~SimWorld();

  // Runs `fn` once per simulated rank. Returns the first error by rank order,
  // or a deadlock error naming the stuck collective. May be called again: the
  // ranks keep their clocks, buffers and history.
  absl::Status Run(const runtime::RankFunction& fn);

  const SimOptions& options() const;
  const CostModel& cost_model() const;
  // Ranks actually simulated: 1 with the symmetric shortcut, else world_size.
  int simulated_ranks() const;

  const Trace& trace() const;
  // Every report of every rank, in rank order.
  std::vector<RaceReport> races() const;
  RankStats stats(int rank) const;
  int64_t total_ops() const;

  // Records busy intervals of each rank from now on (for exposure figures);
  // TakeActivity returns and clears them.
  void set_record_activity(bool on);
  std::vector<ActivityInterval> TakeActivity(int rank);
  // Times operations from now on (SimOptions::op_timing), or no more.
  void set_op_timing(bool on);
  // With SimOptions::op_timing: the copies, memsets and kernels `rank` has
  // issued since the last call, each timed between its events.
  std::vector<runtime::OpTiming> TakeOpTimings(int rank);

  class Impl;

 private:
  explicit SimWorld(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sim
}  // namespace zero3

#endif  // ZERO3_SIM_SIMULATOR_H_
