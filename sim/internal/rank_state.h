// Copyright 2026 The zero3 Authors.
//
// rank_state.h: what the pieces of one simulated rank share (its host clock,
// the calendars of its engines, its race detector, the trace spans and
// activity it writes, its live streams) and the world-wide settings they
// read (WorldContext). The runtime, device, streams, events and collectives
// of a rank all act through its RankState. Not thread-safe: a rank's state
// is touched only by the thread whose turn it is.

#ifndef ZERO3_SIM_INTERNAL_RANK_STATE_H_
#define ZERO3_SIM_INTERNAL_RANK_STATE_H_

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/runtime/kernel_call.h"
#include "core/runtime/op_timing.h"
#include "sim/activity.h"
#include "sim/cost_model.h"
#include "sim/internal/calendar.h"
#include "sim/race_detector.h"
#include "sim/trace.h"

namespace zero3 {
namespace sim {
namespace internal {

// Track ids within a rank's process in the trace; streams take 1, 2, ...
constexpr int kHostTrack = 0;
constexpr int kComputeTrack = 1000;
constexpr int kD2HTrack = 1001;
constexpr int kH2DTrack = 1002;
constexpr int kFabricTrack = 1003;

// What every rank of a world reads or shares. Owned by the world, it
// outlives the ranks. The settings (cost model to max_pinned_bytes) are
// fixed at creation; the trace, the buffer ids and the activity switch
// change as the world runs.
struct WorldContext {
  explicit WorldContext(CostModel cost_model) : cost(std::move(cost_model)) {}

  CostModel cost;
  int world_size = 1;
  bool data_mode = true;  // buffers hold bytes and kernels compute
  bool detect_races = true;
  bool strict = false;
  bool tracing = false;
  double jitter = 0.0;
  uint64_t seed = 0;
  int64_t max_pinned_bytes = 0;
  bool pinned_fallback = false;
  bool op_timing = false;  // SimOptions::op_timing

  Trace trace;
  std::atomic<uint64_t> next_buffer_id{0};
  bool record_activity = false;
};

class SimStream;

class RankState {
 public:
  // Names the rank's process and engine tracks in the trace.
  RankState(WorldContext* world, int rank);
  RankState(const RankState&) = delete;
  RankState& operator=(const RankState&) = delete;

  int rank() const { return rank_; }
  WorldContext& world() const { return *world_; }
  const CostModel& cost() const { return world_->cost; }
  bool detect() const { return world_->detect_races; }
  bool strict() const { return world_->strict; }
  bool data_mode() const { return world_->data_mode; }
  // A buffer id unique in the world.
  uint64_t NextBufferId() { return ++world_->next_buffer_id; }

  // The host thread's clock, in virtual nanoseconds.
  int64_t now() const { return now_; }
  // Host spends `ns` on an API call (or a host task).
  void HostCost(int64_t ns) { now_ += ns; }
  // Host blocks until `t`; records the wait (trace, activity, blocked time).
  void BlockUntil(int64_t t, absl::string_view why);
  // `ns` scaled by this rank's next jitter draw (see SimOptions::jitter).
  int64_t Jitter(int64_t ns) {
    const double j = world_->jitter;
    if (j <= 0 || ns <= 0) return ns;
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    return std::max<int64_t>(1, std::llround(ns * (1.0 + j * u(rng_))));
  }

  // Counters behind RankStats.
  void CountOp() { ++ops_; }
  int64_t ops() const { return ops_; }
  // Notes device work ending at `end_ns`.
  void ExtendBusy(int64_t end_ns) {
    busy_until_ = std::max(busy_until_, end_ns);
  }
  int64_t busy_until() const { return busy_until_; }
  int64_t blocked_ns() const { return blocked_ns_; }

  // The rank's serial resources.
  Calendar& compute() { return compute_; }
  Calendar& d2h() { return d2h_; }
  Calendar& h2d() { return h2d_; }
  Calendar& fabric() { return fabric_; }
  // Drops resource history no future op can land before.
  void PruneCalendars() {
    compute_.Prune(now_);
    d2h_.Prune(now_);
    h2d_.Prune(now_);
    fabric_.Prune(now_);
  }

  // A span on one of the rank's tracks, when tracing.
  void Span(int track, absl::string_view name, int64_t start, int64_t end,
            int64_t bytes, absl::string_view category,
            absl::string_view kind = "") {
    if (world_->tracing) {
      world_->trace.AddSpan(rank_, track, name, start, end, bytes, category,
                            kind);
    }
  }
  // A new trace track for a stream called `name`.
  int NewStreamTrack(absl::string_view name);
  // Busy interval, when the world records activity.
  void RecordActivity(ActivityInterval::Kind kind, int64_t start, int64_t end) {
    if (world_->record_activity && end > start) {
      activity_.push_back({kind, start, end});
    }
  }
  std::vector<ActivityInterval> TakeActivity() { return std::move(activity_); }

  // SimOptions::op_timing: whether operations are timed between events,
  // and those timed so far.
  bool op_timing() const { return world_->op_timing; }
  void AddOpTiming(runtime::OpTiming op) {
    op_timings_.push_back(std::move(op));
  }
  std::vector<runtime::OpTiming> TakeOpTimings() {
    return std::move(op_timings_);
  }

  // Race-detector bookkeeping. The host is agent 0, each stream one more.
  RaceDetector& races() { return races_; }
  const RaceDetector& races() const { return races_; }
  // One op of the stream `agent`, enqueued by the host.
  void StreamAccesses(int agent, const std::vector<runtime::Access>& accesses,
                      absl::string_view label, int64_t start, int64_t end) {
    if (!detect()) return;
    races_.Join(agent, 0);  // enqueue: host → stream
    OnAccesses(agent, accesses, label, start, end);
  }
  // One op of the host thread itself.
  void HostAccesses(const std::vector<runtime::Access>& accesses,
                    absl::string_view label, int64_t start, int64_t end) {
    if (detect()) OnAccesses(0, accesses, label, start, end);
  }
  // Host learns everything `agent` has done (synchronize).
  void HostJoin(int agent) {
    if (!detect()) return;
    races_.Join(0, agent);
    races_.Prune();
  }
  void HostJoinClock(const VectorClock& clock) {
    if (!detect()) return;
    races_.JoinClock(0, clock);
    races_.Prune();
  }

  // Live streams, and what destroyed ones leave for a device synchronize:
  // when their work ends and their detector agents.
  void AddStream(SimStream* stream) { streams_.push_back(stream); }
  void RetireStream(SimStream* stream, int64_t tail_ns, int agent);
  const std::vector<SimStream*>& streams() const { return streams_; }
  int64_t retired_tail_ns() const { return retired_tail_ns_; }
  // When the rank's share of the node's drives is free again, per
  // direction: its drive files (the optimizer state's, the parameters')
  // queue behind each other.
  int64_t& drive_tail_ns(bool write) {
    return write ? drive_write_tail_ns_ : drive_read_tail_ns_;
  }
  const std::vector<int>& retired_agents() const { return retired_agents_; }

 private:
  // Ticks `agent` and checks its accesses as one op.
  void OnAccesses(int agent, const std::vector<runtime::Access>& accesses,
                  absl::string_view label, int64_t start, int64_t end) {
    races_.Tick(agent);
    OpInfo op{std::string(label), agent, start, end};
    for (const runtime::Access& a : accesses) {
      races_.OnAccess(a.slice.buffer().id(), a.slice.offset(), a.slice.bytes(),
                      a.write, op);
    }
  }

  WorldContext* world_;
  const int rank_;
  RaceDetector races_;
  std::mt19937_64 rng_;

  int64_t now_ = 0;
  int64_t blocked_ns_ = 0;
  int64_t ops_ = 0;
  int64_t busy_until_ = 0;
  Calendar compute_, d2h_, h2d_, fabric_;
  std::vector<SimStream*> streams_;
  int64_t retired_tail_ns_ = 0;
  int64_t drive_read_tail_ns_ = 0, drive_write_tail_ns_ = 0;
  std::vector<int> retired_agents_;
  int next_track_ = 1;
  std::vector<ActivityInterval> activity_;
  std::vector<runtime::OpTiming> op_timings_;
};

}  // namespace internal
}  // namespace sim
}  // namespace zero3

#endif  // ZERO3_SIM_INTERNAL_RANK_STATE_H_
