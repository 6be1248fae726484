// Copyright 2026 The zero3 Authors.
//
// streams.h: the simulated streams and events of one rank. A stream places
// each command on its resource (the compute engine, a copy direction's link)
// after the stream's previous command, records it in the trace and the race
// detector, and in data mode performs it at once; an event carries a
// stream's time and vector clock to the host or another stream. Collectives
// are enqueued here too but placed by the collective rendezvous
// (collectives.h). Not thread-safe: used by the rank's thread only.

#ifndef ZERO3_SIM_INTERNAL_STREAMS_H_
#define ZERO3_SIM_INTERNAL_STREAMS_H_

#include <algorithm>
#include <cstdint>
#include <deque>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/runtime/runtime.h"
#include "sim/cost_model.h"
#include "sim/internal/rank_state.h"
#include "sim/race_detector.h"

namespace zero3 {
namespace sim {
namespace internal {

class SimEvent final : public runtime::Event {
 public:
  // `timed` events can be measured with Device::ElapsedNanos.
  SimEvent(RankState* rank, bool timed) : rank_(rank), timed_(timed) {}
  absl::Status Synchronize() override;
  // At the host's simulated time now.
  absl::StatusOr<bool> Query() override;

  RankState* rank() const { return rank_; }
  bool timed() const { return timed_; }
  bool recorded() const { return recorded_; }
  // When the recorded work is done.
  int64_t time_ns() const { return time_ns_; }
  // What the recording stream had seen (with race detection).
  const VectorClock& clock() const { return clock_; }

 private:
  friend class SimStream;  // Record sets the fields below.

  RankState* rank_;
  const bool timed_;
  bool recorded_ = false;
  int64_t time_ns_ = 0;
  VectorClock clock_;
};

class SimStream final : public runtime::Stream {
 public:
  // A stream of `rank` whose commands start no earlier than the host's
  // clock now. `agent` is its race-detector agent, `track` its trace track.
  SimStream(RankState* rank, std::string name, int agent, int track);
  // Destroying a stream does not cancel its work (as in CUDA): the rank
  // remembers when it ends, for Device::Synchronize.
  ~SimStream() override;

  // runtime::Stream
  absl::string_view name() const override { return name_; }
  absl::Status Copy(const runtime::BufferSlice& dst,
                    const runtime::BufferSlice& src,
                    absl::string_view label) override;
  absl::Status Copy2D(const runtime::BufferSlice& dst, int64_t dst_pitch,
                      const runtime::BufferSlice& src, int64_t src_pitch,
                      int64_t row_bytes, int64_t rows,
                      absl::string_view label) override;
  absl::Status Memset(const runtime::BufferSlice& dst, uint8_t value,
                      absl::string_view label) override;
  absl::Status Launch(const runtime::KernelCall& call) override;
  absl::Status Record(runtime::Event& event) override;
  absl::Status Wait(const runtime::Event& event) override;
  absl::Status Synchronize() override;

  RankState* rank() const { return rank_; }
  int agent() const { return agent_; }
  int track() const { return track_; }
  // When everything enqueued so far is done.
  int64_t tail_ns() const { return tail_ns_; }
  // When a command enqueued now may start: after the host's call and the
  // stream's previous command.
  int64_t ready_ns() const { return std::max(rank_->now(), tail_ns_); }

  // The launch queue (host.stream_queue_depth): before a command taking
  // `milli` thousandths of a unit of room (CostModel::queue_*_milli) is
  // enqueued, blocks the host until the stream holds no more than the depth
  // less that room (the oldest commands done). Returning from that wait
  // orders nothing (CUDA promises nothing about it), so the race detector
  // learns nothing from it.
  void AwaitQueueSlot(int64_t milli);
  // Notes an enqueued command ending at `end_ns` (kUnresolved for a
  // collective whose peers have not all arrived), of the room given to the
  // last AwaitQueueSlot; returns its number.
  uint64_t Enqueued(int64_t end_ns);
  // Ends the stream's work with collective `seq` (from Enqueued), matched
  // to end at `end_ns`.
  void EndCollective(uint64_t seq, int64_t end_ns);
  static constexpr int64_t kUnresolved = -1;

 private:
  // With SimOptions::op_timing, times one operation as the CUDA backend's
  // op timing does: an event recorded on the stream before it (here) and
  // one after (when destroyed); the operation's time runs from when the
  // stream reached the first to when it reached the second.
  class TimedOp {
   public:
    TimedOp(SimStream* stream, absl::string_view label,
            absl::string_view kind = "");
    TimedOp(const TimedOp&) = delete;
    TimedOp& operator=(const TimedOp&) = delete;
    ~TimedOp();

   private:
    SimStream* stream_;
    absl::string_view label_, kind_;
    int64_t start_ = -1;
  };
  // An event recorded for op timing: the host's call and a place in the
  // launch queue, as Record; returns when the stream reaches it.
  int64_t TimingEvent();

  // Where a copy runs and how it treats the host (see Copy).
  struct CopyRoute {
    CopyKind kind = CopyKind::kDeviceToDevice;
    Calendar* link = nullptr;   // none for host-to-host
    Calendar* other = nullptr;  // the opposite direction's link
    int track = kComputeTrack;  // the engine track
    bool blocks_host = false;   // host waits for the copy to finish
    bool staged = false;        // small pageable H2D: source read at the call
  };
  CopyRoute RouteCopy(runtime::MemorySpace dst, runtime::MemorySpace src,
                      int64_t bytes);
  // Host copies a small pageable source into pinned staging memory.
  void Stage(int64_t bytes, absl::string_view label);
  // Start of a copy on its link, lengthening `duration` when the opposite
  // direction is busy and the link loses bandwidth to it.
  int64_t PlaceCopy(const CopyRoute& route, int64_t& duration);
  // Race-detector bookkeeping of a copy placed at [start, end).
  void CopyAccesses(const CopyRoute& route, const runtime::BufferSlice& dst,
                    const runtime::BufferSlice& src, absl::string_view label,
                    int64_t start, int64_t end);
  // Runs `duration` of work on the compute engine after the stream's
  // previous command; traces it (with a kernel's kind) and returns its start.
  int64_t RunOnCompute(int64_t duration, absl::string_view label,
                       int64_t stream_bytes, int64_t engine_bytes,
                       absl::string_view category, absl::string_view kind = "");
  // Sets the stream's tail to `end_ns` and notes the work for the launch
  // queue and the rank's busy time.
  void EndAt(int64_t end_ns);

  RankState* rank_;
  std::string name_;
  int agent_;
  int track_;
  int64_t tail_ns_;
  // The room a launched op takes: its launches (or one) times its kind's.
  int64_t QueueMilliOf(const runtime::KernelCall& call) const;
  // Drops the oldest command from the queue.
  void PopQueued();

  struct Queued {
    uint64_t seq;
    int64_t end_ns;
    int64_t milli;  // room taken
  };
  std::deque<Queued> queue_;  // not known done, oldest first
  int64_t held_milli_ = 0;    // room the queue's commands take
  int64_t next_milli_ = 0;    // room of the command about to be enqueued
  uint64_t next_seq_ = 0;
};

}  // namespace internal
}  // namespace sim
}  // namespace zero3

#endif  // ZERO3_SIM_INTERNAL_STREAMS_H_
