// Copyright 2026 The zero3 Authors.

#include "sim/simulator.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/kernels/reference.h"
#include "core/runtime/argument_checks.h"
#include "core/runtime/reference_executor.h"
#include "core/util/check.h"
#include "core/util/status_macros.h"
#include "sim/internal/calendar.h"
#include "sim/internal/kernel_work.h"

namespace zero3 {
namespace sim {

using internal::Calendar;
using runtime::Buffer;
using runtime::BufferSlice;
using runtime::HostMemoryKind;
using runtime::KernelCall;
using runtime::MemorySpace;
using runtime::TensorRef;

namespace {

// Track ids within a rank's process in the trace.
constexpr int kHostTrack = 0;
constexpr int kComputeTrack = 1000;
constexpr int kD2HTrack = 1001;
constexpr int kH2DTrack = 1002;
constexpr int kFabricTrack = 1003;

// Device bytes start as this pattern: NaN in fp32, bf16 and fp16, so a read
// of memory nobody wrote poisons results visibly.
constexpr uint8_t kPoison = 0xFF;

}  // namespace

class SimRank;
class SimStream;

// ---------------------------------------------------------------------------
// World state shared by the ranks: the scheduler and collective rendezvous.

class SimWorld::Impl {
 public:
  Impl(SimOptions options, CostModel cost)
      : options_(std::move(options)), cost_(std::move(cost)) {}
  ~Impl();

  absl::Status Init();
  absl::Status Run(const runtime::RankFunction& fn);

  const SimOptions& options() const { return options_; }
  const CostModel& cost() const { return cost_; }
  bool data_mode() const { return options_.mode == SimMode::kData; }
  int simulated_ranks() const { return static_cast<int>(ranks_.size()); }
  SimRank& rank(int r) { return *ranks_[r]; }
  const SimRank& rank(int r) const { return *ranks_[r]; }
  Trace& trace() { return trace_; }
  uint64_t NextBufferId() { return ++next_buffer_id_; }

  // Collective rendezvous. Called by the rank's thread; returns once the
  // collective has been completed (by the last arriving rank).
  struct Arrival {
    SimRank* rank = nullptr;
    int position = 0;  // the rank's index in the group
    SimStream* stream = nullptr;
    CollectiveKind kind;
    TensorRef send, recv;
    runtime::ReduceOp op = runtime::ReduceOp::kSum;
    int root = 0;
    std::string label;
    int64_t ready_ns = 0;
    uint64_t queue_seq = 0;  // its entry in the stream's launch queue
  };
  // `group` from GroupOf().
  absl::Status Collective(int group, Arrival arrival);
  // The group of these world ranks (sorted, unique), created on first use.
  int GroupOf(const std::vector<int>& members);
  const std::vector<int>& GroupMembers(int group) const {
    return groups_[group]->members;
  }

  bool record_activity() const { return record_activity_; }
  void set_record_activity(bool on) { record_activity_ = on; }

 private:
  enum class State { kRunnable, kBlocked, kDone };
  struct Pending {
    std::vector<Arrival> arrivals;
    std::string description;
  };
  // Collectives in flight in one communicator group, by sequence number.
  struct Group {
    std::vector<int> members;  // world ranks, ascending
    int simulated = 0;         // members this world simulates
    std::deque<Pending> pending;
    uint64_t base = 0;               // sequence number of pending.front()
    std::vector<uint64_t> next_seq;  // per member position
  };

  // Scheduler (all under mu_).
  void WaitTurn(int r, std::unique_lock<std::mutex>& lock);
  // Picks the next rank to run after `r` stops running; returns -1 if none.
  int PickNext() const;
  void SwitchTo(int next);
  void OnStuck();
  absl::Status Complete(const Group& group, Pending& pending);

  SimOptions options_;
  CostModel cost_;
  std::vector<std::unique_ptr<SimRank>> ranks_;
  Trace trace_;
  std::atomic<uint64_t> next_buffer_id_{0};
  bool record_activity_ = false;

  std::mutex mu_;
  std::vector<std::unique_ptr<std::condition_variable>> cvs_;
  std::condition_variable done_cv_;
  int current_ = -1;
  std::vector<State> state_;
  int done_count_ = 0;
  std::string abort_message_;
  std::vector<std::unique_ptr<Group>> groups_;  // 0 is the world
};

// ---------------------------------------------------------------------------
// Per-rank objects.

class SimEvent final : public runtime::Event {
 public:
  SimEvent(SimRank* rank, bool timed) : rank_(rank), timed_(timed) {}
  absl::Status Synchronize() override;

  SimRank* rank_;
  const bool timed_;
  bool recorded_ = false;
  int64_t time_ns_ = 0;
  VectorClock clock_;
};

class SimStream final : public runtime::Stream {
 public:
  SimStream(SimRank* rank, std::string name, int agent, int track)
      : rank_(rank), name_(std::move(name)), agent_(agent), track_(track) {}
  // Destroying a stream does not cancel its work (as in CUDA): the rank
  // remembers when it ends, for Device::Synchronize.
  ~SimStream() override;

  absl::string_view name() const override { return name_; }
  absl::Status Copy(const BufferSlice& dst, const BufferSlice& src,
                    absl::string_view label) override;
  absl::Status Copy2D(const BufferSlice& dst, int64_t dst_pitch,
                      const BufferSlice& src, int64_t src_pitch,
                      int64_t row_bytes, int64_t rows,
                      absl::string_view label) override;
  absl::Status Memset(const BufferSlice& dst, uint8_t value,
                      absl::string_view label) override;
  absl::Status Launch(const KernelCall& call) override;
  absl::Status Record(runtime::Event& event) override;
  absl::Status Wait(const runtime::Event& event) override;
  absl::Status Synchronize() override;

  // The launch queue (host.stream_queue_depth): before a command is
  // enqueued, blocks the host until the stream holds fewer than the depth.
  // Returning from that wait orders nothing (CUDA promises nothing about
  // it), so the race detector learns nothing from it.
  void AwaitQueueSlot();
  // Notes an enqueued command ending at `end_ns` (kUnresolved for a
  // collective whose peers have not all arrived); returns its number.
  uint64_t Enqueued(int64_t end_ns);
  // Sets the end of collective `seq` once it is matched.
  void Resolve(uint64_t seq, int64_t end_ns);
  static constexpr int64_t kUnresolved = -1;

  SimRank* rank_;
  std::string name_;
  int agent_;
  int track_;
  int64_t tail_ns_ = 0;  // when everything enqueued so far is done
  struct Queued {
    uint64_t seq;
    int64_t end_ns;
  };
  std::deque<Queued> queue_;  // not known done, oldest first
  uint64_t next_seq_ = 0;
};

class SimDevice final : public runtime::Device {
 public:
  explicit SimDevice(SimRank* rank) : rank_(rank) {}
  absl::string_view name() const override;
  int64_t total_memory_bytes() const override;
  absl::StatusOr<Buffer> Allocate(int64_t bytes,
                                  absl::string_view label) override;
  absl::Status Free(const Buffer& buffer) override;
  absl::StatusOr<std::unique_ptr<runtime::Stream>> CreateStream(
      absl::string_view name) override;
  absl::StatusOr<std::unique_ptr<runtime::Event>> CreateEvent() override;
  absl::StatusOr<std::unique_ptr<runtime::Event>> CreateTimedEvent() override;
  absl::StatusOr<int64_t> ElapsedNanos(const runtime::Event& start,
                                       const runtime::Event& end) override;
  absl::Status Synchronize() override;
  runtime::MemoryStats memory_stats() const override { return stats_; }

  SimRank* rank_;
  runtime::MemoryStats stats_;
};

class SimCommunicator final : public runtime::Communicator {
 public:
  SimCommunicator(SimRank* rank, int group, int position, int size)
      : rank_(rank), group_(group), position_(position), size_(size) {}
  int rank() const override { return position_; }
  int size() const override { return size_; }
  absl::Status AllGather(runtime::Stream& stream, const TensorRef& send,
                         const TensorRef& recv,
                         absl::string_view label) override;
  absl::Status ReduceScatter(runtime::Stream& stream, const TensorRef& send,
                             const TensorRef& recv,
                             absl::string_view label) override;
  absl::Status AllReduce(runtime::Stream& stream, const TensorRef& send,
                         const TensorRef& recv, runtime::ReduceOp op,
                         absl::string_view label) override;
  absl::Status Broadcast(runtime::Stream& stream, const TensorRef& buffer,
                         int root, absl::string_view label) override;

 private:
  absl::Status Issue(runtime::Stream& stream, CollectiveKind kind,
                     const TensorRef& send, const TensorRef& recv,
                     runtime::ReduceOp op, int root, absl::string_view label);
  SimRank* rank_;
  int group_;
  int position_;
  int size_;
};

class SimRank final : public runtime::Runtime {
 public:
  SimRank(SimWorld::Impl* world, int rank)
      : world_(world),
        rank_(rank),
        device_(this),
        comm_(this, 0, rank, world->options().world_size),
        races_(rank),
        pinned_(world->options().max_pinned_bytes),
        rng_(world->options().seed * 0x9E3779B97F4A7C15ull + rank + 1) {
    if (world_->options().trace) {
      Trace& t = world_->trace();
      t.NameProcess(rank, absl::StrCat("rank ", rank));
      t.NameTrack(rank, kHostTrack, "host thread");
      t.NameTrack(rank, kComputeTrack, "engine: compute");
      t.NameTrack(rank, kD2HTrack, "engine: D2H link");
      t.NameTrack(rank, kH2DTrack, "engine: H2D link");
      t.NameTrack(rank, kFabricTrack, "engine: fabric");
    }
  }

  // runtime::Runtime
  int rank() const override { return rank_; }
  int world_size() const override { return world_->options().world_size; }
  runtime::Device& device() override { return device_; }
  runtime::Communicator& world() override { return comm_; }
  absl::StatusOr<runtime::Communicator*> Group(
      const std::vector<int>& ranks) override;
  absl::StatusOr<Buffer> AllocateHost(int64_t bytes, HostMemoryKind kind,
                                      absl::string_view label) override;
  absl::Status FreeHost(const Buffer& buffer) override;
  absl::Status RunHostTask(const runtime::HostTask& task) override;
  bool computes_values() const override { return world_->data_mode(); }
  int64_t NowNanos() override { return now_; }
  void MarkSpan(absl::string_view name, int64_t begin_ns,
                int64_t end_ns) override {
    if (world_->options().trace) {
      world_->trace().AddSpan(rank_, kHostTrack, name, begin_ns, end_ns, 0,
                              "phase");
    }
  }
  runtime::PinnedMemoryTracker& pinned_memory() override { return pinned_; }

  // Simulator internals, used by the objects above.
  const CostModel& cost() const { return world_->cost(); }
  bool detect() const { return world_->options().detect_races; }
  bool strict() const { return world_->options().strict; }
  bool data_mode() const { return world_->data_mode(); }

  int64_t Jitter(int64_t ns) {
    const double j = world_->options().jitter;
    if (j <= 0 || ns <= 0) return ns;
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    return std::max<int64_t>(1, std::llround(ns * (1.0 + j * u(rng_))));
  }

  // Host spends `ns` on an API call.
  void HostCost(int64_t ns) { now_ += ns; }
  // Host blocks until `t`; records the wait.
  void BlockUntil(int64_t t, absl::string_view why) {
    if (t > now_) {
      if (world_->options().trace) {
        world_->trace().AddSpan(rank_, kHostTrack,
                                absl::StrCat("blocked: ", why), now_, t, 0,
                                "blocked");
      }
      RecordActivity(ActivityInterval::Kind::kHostBlocked, now_, t);
      blocked_ns_ += t - now_;
      now_ = t;
    }
  }
  void RecordActivity(ActivityInterval::Kind kind, int64_t start, int64_t end) {
    if (world_->record_activity() && end > start) {
      activity_.push_back({kind, start, end});
    }
  }
  void Span(int track, absl::string_view name, int64_t start, int64_t end,
            int64_t bytes, absl::string_view category) {
    if (world_->options().trace) {
      world_->trace().AddSpan(rank_, track, name, start, end, bytes, category);
    }
  }

  // Race-detector bookkeeping for one stream op.
  void StreamAccesses(SimStream& s,
                      const std::vector<runtime::Access>& accesses,
                      absl::string_view label, int64_t start, int64_t end) {
    if (!detect()) return;
    races_.Join(s.agent_, 0);  // enqueue: host → stream
    races_.Tick(s.agent_);
    OpInfo op{std::string(label), s.agent_, start, end};
    for (const runtime::Access& a : accesses) {
      races_.OnAccess(a.slice.buffer().id(), a.slice.offset(), a.slice.bytes(),
                      a.write, op);
    }
  }
  void HostAccesses(const std::vector<runtime::Access>& accesses,
                    absl::string_view label, int64_t start, int64_t end) {
    if (!detect()) return;
    races_.Tick(0);
    OpInfo op{std::string(label), 0, start, end};
    for (const runtime::Access& a : accesses) {
      races_.OnAccess(a.slice.buffer().id(), a.slice.offset(), a.slice.bytes(),
                      a.write, op);
    }
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

  // Drops resource history no future op can land before.
  void PruneCalendars() {
    compute_.Prune(now_);
    d2h_.Prune(now_);
    h2d_.Prune(now_);
    fabric_.Prune(now_);
  }

  SimWorld::Impl* world_;
  const int rank_;
  SimDevice device_;
  SimCommunicator comm_;
  RaceDetector races_;
  runtime::PinnedMemoryTracker pinned_;
  std::mt19937_64 rng_;

  int64_t now_ = 0;
  int64_t blocked_ns_ = 0;
  int64_t ops_ = 0;
  int64_t busy_until_ = 0;
  Calendar compute_, d2h_, h2d_, fabric_;
  std::vector<SimStream*> streams_;
  // Destroyed streams: when their work ends, and their detector agents.
  int64_t retired_tail_ns_ = 0;
  std::vector<int> retired_agents_;
  int next_track_ = 1;
  absl::flat_hash_map<uint64_t, std::unique_ptr<uint8_t[]>> data_;
  absl::flat_hash_map<uint64_t, std::pair<int64_t, HostMemoryKind>> host_;
  absl::flat_hash_map<uint64_t, int64_t> device_bytes_;
  std::vector<ActivityInterval> activity_;
  absl::flat_hash_map<int, std::unique_ptr<SimCommunicator>> groups_;
};

// ---------------------------------------------------------------------------
// SimEvent

absl::Status SimEvent::Synchronize() {
  SimRank* r = rank_;
  r->HostCost(r->cost().event_call_nanos());
  if (recorded_) {
    r->BlockUntil(time_ns_, "event synchronize");
    r->HostJoinClock(clock_);
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// SimStream

SimStream::~SimStream() {
  SimRank* r = rank_;
  r->streams_.erase(std::remove(r->streams_.begin(), r->streams_.end(), this),
                    r->streams_.end());
  r->retired_tail_ns_ = std::max(r->retired_tail_ns_, tail_ns_);
  r->retired_agents_.push_back(agent_);
}

void SimStream::AwaitQueueSlot() {
  SimRank* r = rank_;
  const size_t depth = static_cast<size_t>(r->cost().stream_queue_depth());
  if (depth == 0) return;
  while (!queue_.empty() && queue_.front().end_ns != kUnresolved &&
         queue_.front().end_ns <= r->now_) {
    queue_.pop_front();
  }
  while (queue_.size() >= depth) {
    const Queued oldest = queue_.front();
    queue_.pop_front();
    // A collective still waiting for its peers cannot be waited for here
    // (its end depends on hosts not yet simulated): counted as done.
    if (oldest.end_ns != kUnresolved) {
      r->BlockUntil(oldest.end_ns, absl::StrCat("launch queue full: ", name_));
    }
  }
}

uint64_t SimStream::Enqueued(int64_t end_ns) {
  if (rank_->cost().stream_queue_depth() == 0) return 0;
  queue_.push_back({next_seq_, end_ns});
  return next_seq_++;
}

void SimStream::Resolve(uint64_t seq, int64_t end_ns) {
  for (auto it = queue_.rbegin(); it != queue_.rend(); ++it) {
    if (it->seq == seq) {
      it->end_ns = end_ns;
      return;
    }
    if (it->seq < seq) return;
  }
}

absl::Status SimStream::Copy(const BufferSlice& dst, const BufferSlice& src,
                             absl::string_view label) {
  SimRank* r = rank_;
  if (dst.bytes() != src.bytes()) {
    return absl::InvalidArgumentError(
        absl::StrCat("copy '", label, "': destination has ", dst.bytes(),
                     " bytes, source ", src.bytes()));
  }
  const int64_t bytes = dst.bytes();
  const MemorySpace ds = dst.space(), ss = src.space();
  const bool to_host = runtime::IsHost(ds), from_host = runtime::IsHost(ss);
  AwaitQueueSlot();
  r->HostCost(r->cost().copy_call_nanos());
  ++r->ops_;

  CopyKind kind;
  Calendar* link = nullptr;
  Calendar* other = nullptr;
  int track = kComputeTrack;
  bool blocks_host = false;  // host waits for the copy to finish
  bool staged = false;       // small pageable H2D: source read at the call
  if (!to_host && !from_host) {
    kind = CopyKind::kDeviceToDevice;
    link = &r->compute_;
  } else if (to_host && !from_host) {
    link = &r->d2h_;
    other = &r->h2d_;
    track = kD2HTrack;
    if (ds == MemorySpace::kPinnedHost) {
      kind = CopyKind::kPinnedD2H;
    } else {
      kind = CopyKind::kPageableD2H;
      blocks_host = true;
    }
  } else if (!to_host && from_host) {
    link = &r->h2d_;
    other = &r->d2h_;
    track = kH2DTrack;
    if (ss == MemorySpace::kPinnedHost) {
      kind = CopyKind::kPinnedH2D;
    } else if (bytes <=
               r->cost().profile().host_link().pageable_h2d_async_max_bytes()) {
      // The driver copies the source into a pinned staging buffer and
      // returns; the DMA runs later from there at the pinned rate.
      kind = CopyKind::kPinnedH2D;
      staged = true;
      const int64_t t0 = r->now_;
      r->HostCost(r->cost().StagingNanos(bytes));
      r->Span(kHostTrack, absl::StrCat("staging: ", label), t0, r->now_, bytes,
              "host");
    } else {
      kind = CopyKind::kPageableH2D;
      blocks_host = true;
    }
  } else {
    kind = CopyKind::kHostToHost;
    link = nullptr;
    blocks_host = true;
  }

  int64_t duration = r->Jitter(r->cost().CopyNanos(bytes, kind));
  const int64_t ready = std::max(r->now_, tail_ns_);
  int64_t start = ready;
  if (link != nullptr) {
    start = link->EarliestStart(ready, duration);
    if (other != nullptr) {
      const double eff =
          r->cost().profile().host_link().bidirectional_efficiency();
      if (eff < 1.0 && other->Overlaps(start, start + duration)) {
        duration = std::llround(duration / eff);
        start = link->EarliestStart(ready, duration);
      }
    }
    link->Reserve(start, duration);
  }
  const int64_t end = start + duration;
  tail_ns_ = end;
  Enqueued(end);
  r->busy_until_ = std::max(r->busy_until_, end);
  r->Span(track_, label, start, end, bytes, "copy");
  if (link != nullptr) r->Span(track, label, start, end, bytes, "copy");
  r->RecordActivity(kind == CopyKind::kDeviceToDevice
                        ? ActivityInterval::Kind::kCompute
                        : ActivityInterval::Kind::kCopy,
                    start, end);

  // Ordering and race checks.
  if (r->detect()) {
    if (staged && !r->strict()) {
      r->HostAccesses({{src, false}}, label, r->now_, r->now_);
      r->StreamAccesses(*this, {{dst, true}}, label, start, end);
    } else {
      r->StreamAccesses(*this, {{src, false}, {dst, true}}, label, start, end);
    }
  }
  if (r->data_mode() && bytes > 0) {
    if (src.data() == nullptr || dst.data() == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("copy '", label, "': buffer without data"));
    }
    std::memmove(dst.data(), src.data(), bytes);
  }
  if (blocks_host) {
    r->BlockUntil(end, absl::StrCat(ds == MemorySpace::kPageableHost ||
                                            ss == MemorySpace::kPageableHost
                                        ? "pageable copy "
                                        : "copy ",
                                    label));
    if (!r->strict()) r->HostJoin(agent_);
  }
  return absl::OkStatus();
}

absl::Status SimStream::Copy2D(const BufferSlice& dst, int64_t dst_pitch,
                               const BufferSlice& src, int64_t src_pitch,
                               int64_t row_bytes, int64_t rows,
                               absl::string_view label) {
  SimRank* r = rank_;
  ZR_RETURN_IF_ERROR(runtime::CheckCopy2D(dst, dst_pitch, src, src_pitch,
                                          row_bytes, rows, label));
  AwaitQueueSlot();
  r->HostCost(r->cost().copy_call_nanos());
  ++r->ops_;
  const int64_t bytes = rows * row_bytes;
  const int64_t duration = r->Jitter(r->cost().Copy2DNanos(bytes));
  const int64_t ready = std::max(r->now_, tail_ns_);
  if (r->cost().copy2d_on_copy_engine()) {
    // A copy engine of its own: only this stream waits for it. (Only the
    // gradient reducer's stream issues strided copies.)
    tail_ns_ = ready + duration;
    r->busy_until_ = std::max(r->busy_until_, tail_ns_);
    r->Span(track_, label, ready, tail_ns_, bytes, "copy");
    r->RecordActivity(ActivityInterval::Kind::kCopy, ready, tail_ns_);
  } else {
    const int64_t start = r->compute_.EarliestStart(ready, duration);
    r->compute_.Reserve(start, duration);
    tail_ns_ = start + duration;
    r->busy_until_ = std::max(r->busy_until_, tail_ns_);
    r->Span(track_, label, start, tail_ns_, bytes, "copy");
    r->Span(kComputeTrack, label, start, tail_ns_, bytes, "copy");
    r->RecordActivity(ActivityInterval::Kind::kCompute, start, tail_ns_);
  }
  const int64_t start = tail_ns_ - duration;
  Enqueued(tail_ns_);
  if (r->detect()) {
    std::vector<runtime::Access> accesses;
    accesses.reserve(2 * rows);
    for (int64_t i = 0; i < rows; ++i) {
      accesses.push_back({src.Sub(i * src_pitch, row_bytes), false});
    }
    for (int64_t i = 0; i < rows; ++i) {
      accesses.push_back({dst.Sub(i * dst_pitch, row_bytes), true});
    }
    r->StreamAccesses(*this, accesses, label, start, tail_ns_);
  }
  if (r->data_mode()) {
    for (int64_t i = 0; i < rows; ++i) {
      std::memmove(static_cast<char*>(dst.data()) + i * dst_pitch,
                   static_cast<const char*>(src.data()) + i * src_pitch,
                   row_bytes);
    }
  }
  return absl::OkStatus();
}

absl::Status SimStream::Memset(const BufferSlice& dst, uint8_t value,
                               absl::string_view label) {
  SimRank* r = rank_;
  if (runtime::IsHost(dst.space())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "memset '", label, "': target is host memory; write it in a HostTask"));
  }
  AwaitQueueSlot();
  r->HostCost(r->cost().launch_nanos());
  ++r->ops_;
  KernelWork work;
  work.bytes = dst.bytes();
  const int64_t duration = r->Jitter(r->cost().KernelNanos(work));
  const int64_t ready = std::max(r->now_, tail_ns_);
  const int64_t start = r->compute_.EarliestStart(ready, duration);
  r->compute_.Reserve(start, duration);
  tail_ns_ = start + duration;
  Enqueued(tail_ns_);
  r->busy_until_ = std::max(r->busy_until_, tail_ns_);
  r->Span(track_, label, start, tail_ns_, dst.bytes(), "kernel");
  r->Span(kComputeTrack, label, start, tail_ns_, 0, "kernel");
  r->RecordActivity(ActivityInterval::Kind::kCompute, start, tail_ns_);
  r->StreamAccesses(*this, {{dst, true}}, label, start, tail_ns_);
  if (r->data_mode() && dst.bytes() > 0) {
    std::memset(dst.data(), value, dst.bytes());
  }
  return absl::OkStatus();
}

absl::Status SimStream::Launch(const KernelCall& call) {
  SimRank* r = rank_;
  AwaitQueueSlot();
  r->HostCost(r->cost().launch_nanos());
  ++r->ops_;
  const std::vector<runtime::Access> accesses = call.Accesses();
  for (const runtime::Access& a : accesses) {
    if (runtime::IsHost(a.slice.space())) {
      return absl::InvalidArgumentError(
          absl::StrCat("kernel '", call.label, "' (", call.OpName(),
                       ") touches host buffer; kernels run on device memory"));
    }
  }
  const int64_t duration =
      r->Jitter(r->cost().KernelNanos(internal::WorkOf(call)));
  const int64_t ready = std::max(r->now_, tail_ns_);
  const int64_t start = r->compute_.EarliestStart(ready, duration);
  r->compute_.Reserve(start, duration);
  tail_ns_ = start + duration;
  Enqueued(tail_ns_);
  r->busy_until_ = std::max(r->busy_until_, tail_ns_);
  r->Span(track_, call.label, start, tail_ns_, 0, "kernel");
  r->Span(kComputeTrack, call.label, start, tail_ns_, 0, "kernel");
  r->RecordActivity(ActivityInterval::Kind::kCompute, start, tail_ns_);
  r->StreamAccesses(*this, accesses, call.label, start, tail_ns_);
  if (r->data_mode()) {
    ZR_RETURN_IF_ERROR(runtime::ExecuteReference(call));
  }
  return absl::OkStatus();
}

absl::Status SimStream::Record(runtime::Event& event) {
  SimRank* r = rank_;
  auto* e = dynamic_cast<SimEvent*>(&event);
  if (e == nullptr || e->rank_ != r) {
    return absl::InvalidArgumentError("event belongs to another device");
  }
  AwaitQueueSlot();
  r->HostCost(r->cost().event_call_nanos());
  e->recorded_ = true;
  e->time_ns_ = std::max(tail_ns_, r->now_);
  Enqueued(e->time_ns_);
  if (r->detect()) {
    r->races_.Join(agent_, 0);
    e->clock_ = r->races_.clock(agent_);
  }
  return absl::OkStatus();
}

absl::Status SimStream::Wait(const runtime::Event& event) {
  SimRank* r = rank_;
  const auto* e = dynamic_cast<const SimEvent*>(&event);
  if (e == nullptr || e->rank_ != r) {
    return absl::InvalidArgumentError("event belongs to another device");
  }
  AwaitQueueSlot();
  r->HostCost(r->cost().event_call_nanos());
  if (e->recorded_) {
    tail_ns_ = std::max(tail_ns_, e->time_ns_);
    if (r->detect()) r->races_.JoinClock(agent_, e->clock_);
  }
  Enqueued(std::max(tail_ns_, r->now_));
  return absl::OkStatus();
}

absl::Status SimStream::Synchronize() {
  SimRank* r = rank_;
  r->HostCost(r->cost().event_call_nanos());
  r->BlockUntil(tail_ns_, absl::StrCat("synchronize ", name_));
  r->HostJoin(agent_);
  r->PruneCalendars();
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// SimDevice

absl::string_view SimDevice::name() const {
  return rank_->cost().profile().gpu().name();
}

int64_t SimDevice::total_memory_bytes() const {
  return static_cast<int64_t>(rank_->cost().profile().gpu().memory_gib() *
                              (1ull << 30));
}

absl::StatusOr<Buffer> SimDevice::Allocate(int64_t bytes,
                                           absl::string_view label) {
  SimRank* r = rank_;
  if (bytes < 0) return absl::InvalidArgumentError("negative allocation");
  r->HostCost(r->cost().alloc_call_nanos());
  if (stats_.bytes_in_use + bytes > total_memory_bytes()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "device out of memory allocating ", runtime::FormatBytes(bytes),
        " for ", label, ": ", runtime::FormatBytes(stats_.bytes_in_use), " of ",
        runtime::FormatBytes(total_memory_bytes()), " in use on ", name()));
  }
  const uint64_t id = r->world_->NextBufferId();
  void* data = nullptr;
  if (r->data_mode()) {
    auto storage = std::make_unique<uint8_t[]>(std::max<int64_t>(bytes, 1));
    std::memset(storage.get(), kPoison, bytes);
    data = storage.get();
    r->data_[id] = std::move(storage);
  }
  stats_.bytes_in_use += bytes;
  stats_.peak_bytes_in_use =
      std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  ++stats_.allocations;
  r->device_bytes_[id] = bytes;
  if (r->detect()) {
    r->races_.OnAllocate(id, std::string(label), bytes, /*initialized=*/false);
  }
  return Buffer(id, bytes, MemorySpace::kDevice, data);
}

absl::Status SimDevice::Free(const Buffer& buffer) {
  SimRank* r = rank_;
  auto it = r->device_bytes_.find(buffer.id());
  if (it == r->device_bytes_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("freeing device buffer ", buffer.id(),
                     " that is not live on rank ", r->rank_));
  }
  r->HostCost(r->cost().alloc_call_nanos());
  if (r->detect()) {
    r->races_.Tick(0);
    r->races_.OnFree(buffer.id(), 0, OpInfo{"free", 0, r->now_, r->now_});
  }
  stats_.bytes_in_use -= it->second;
  --stats_.allocations;
  r->device_bytes_.erase(it);
  r->data_.erase(buffer.id());
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<runtime::Stream>> SimDevice::CreateStream(
    absl::string_view name) {
  SimRank* r = rank_;
  const int agent = r->races_.AddAgent(absl::StrCat("stream '", name, "'"));
  const int track = r->next_track_++;
  if (r->world_->options().trace) {
    r->world_->trace().NameTrack(r->rank_, track,
                                 absl::StrCat("stream: ", name));
  }
  auto stream = std::make_unique<SimStream>(r, std::string(name), agent, track);
  stream->tail_ns_ = r->now_;
  r->streams_.push_back(stream.get());
  return std::unique_ptr<runtime::Stream>(std::move(stream));
}

absl::StatusOr<std::unique_ptr<runtime::Event>> SimDevice::CreateEvent() {
  return std::unique_ptr<runtime::Event>(
      std::make_unique<SimEvent>(rank_, /*timed=*/false));
}

absl::StatusOr<std::unique_ptr<runtime::Event>> SimDevice::CreateTimedEvent() {
  return std::unique_ptr<runtime::Event>(
      std::make_unique<SimEvent>(rank_, /*timed=*/true));
}

absl::StatusOr<int64_t> SimDevice::ElapsedNanos(const runtime::Event& start,
                                                const runtime::Event& end) {
  const auto* a = dynamic_cast<const SimEvent*>(&start);
  const auto* b = dynamic_cast<const SimEvent*>(&end);
  if (a == nullptr || b == nullptr || a->rank_ != rank_ || b->rank_ != rank_) {
    return absl::InvalidArgumentError("ElapsedNanos: event of another device");
  }
  if (!a->timed_ || !b->timed_) {
    return absl::InvalidArgumentError(
        "ElapsedNanos needs events from CreateTimedEvent");
  }
  // As on CUDA, the host learns that an event is complete by waiting for it
  // (or past it): an event the host's clock has not reached is not ready.
  for (const SimEvent* e : {a, b}) {
    if (!e->recorded_ || e->time_ns_ > rank_->now_) {
      return absl::FailedPreconditionError(
          "ElapsedNanos: an event is not recorded or not complete");
    }
  }
  return b->time_ns_ - a->time_ns_;
}

absl::Status SimDevice::Synchronize() {
  SimRank* r = rank_;
  r->HostCost(r->cost().event_call_nanos());
  int64_t t = std::max(r->now_, r->retired_tail_ns_);
  for (SimStream* s : r->streams_) t = std::max(t, s->tail_ns_);
  r->BlockUntil(t, "device synchronize");
  if (r->detect()) {
    for (SimStream* s : r->streams_) r->races_.Join(0, s->agent_);
    for (int agent : r->retired_agents_) r->races_.Join(0, agent);
    r->races_.Prune();
  }
  r->PruneCalendars();
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// SimRank host memory and tasks

absl::StatusOr<Buffer> SimRank::AllocateHost(int64_t bytes, HostMemoryKind kind,
                                             absl::string_view label) {
  if (bytes < 0) return absl::InvalidArgumentError("negative allocation");
  const int64_t t0 = now_;
  HostCost(cost().alloc_call_nanos());
  if (kind == HostMemoryKind::kPinned) {
    ZR_RETURN_IF_ERROR(pinned_.Allocate(bytes, label));
    HostCost(cost().PinNanos(bytes));
    Span(kHostTrack, absl::StrCat("pin ", label), t0, now_, bytes, "host");
  }
  const uint64_t id = world_->NextBufferId();
  void* data = nullptr;
  if (data_mode()) {
    auto storage = std::make_unique<uint8_t[]>(std::max<int64_t>(bytes, 1));
    std::memset(storage.get(), 0, bytes);
    data = storage.get();
    data_[id] = std::move(storage);
  }
  host_[id] = {bytes, kind};
  if (detect()) races_.OnAllocate(id, std::string(label), bytes, true);
  return Buffer(id, bytes,
                kind == HostMemoryKind::kPinned ? MemorySpace::kPinnedHost
                                                : MemorySpace::kPageableHost,
                data);
}

absl::StatusOr<runtime::Communicator*> SimRank::Group(
    const std::vector<int>& ranks) {
  int position = -1;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= world_size() ||
        (i > 0 && ranks[i] <= ranks[i - 1])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "group ranks must be ascending world ranks below ", world_size(),
          ", got [", absl::StrJoin(ranks, ","), "]"));
    }
    if (ranks[i] == rank_) position = static_cast<int>(i);
  }
  if (position < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank ", rank_, " is not in group [", absl::StrJoin(ranks, ","), "]"));
  }
  const int id = world_->GroupOf(ranks);
  auto& comm = groups_[id];
  if (comm == nullptr) {
    comm = std::make_unique<SimCommunicator>(this, id, position,
                                             static_cast<int>(ranks.size()));
  }
  return comm.get();
}

absl::Status SimRank::FreeHost(const Buffer& buffer) {
  auto it = host_.find(buffer.id());
  if (it == host_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("freeing host buffer ", buffer.id(),
                     " that is not live on rank ", rank_));
  }
  HostCost(cost().alloc_call_nanos());
  if (detect()) {
    races_.Tick(0);
    races_.OnFree(buffer.id(), 0, OpInfo{"free host", 0, now_, now_});
  }
  if (it->second.second == HostMemoryKind::kPinned) {
    pinned_.Free(it->second.first);
  }
  host_.erase(it);
  data_.erase(buffer.id());
  return absl::OkStatus();
}

absl::Status SimRank::RunHostTask(const runtime::HostTask& task) {
  std::vector<runtime::Access> accesses;
  for (const BufferSlice& s : task.reads) {
    if (!runtime::IsHost(s.space())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "host task '", task.label, "' reads device memory; copy it first"));
    }
    accesses.push_back({s, false});
  }
  for (const BufferSlice& s : task.writes) {
    if (!runtime::IsHost(s.space())) {
      return absl::InvalidArgumentError(
          absl::StrCat("host task '", task.label,
                       "' writes device memory; copy it instead"));
    }
    accesses.push_back({s, true});
  }
  ++ops_;
  const int64_t start = now_;
  const int64_t duration =
      Jitter(cost().HostTaskNanos(task.flops, task.memory_bytes, task.threads));
  now_ += duration;
  Span(kHostTrack, task.label, start, now_, task.memory_bytes, "host task");
  HostAccesses(accesses, task.label, start, now_);
  if (data_mode() && task.run) {
    ZR_RETURN_IF_ERROR(task.run());
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// SimCommunicator

absl::Status SimCommunicator::AllGather(runtime::Stream& stream,
                                        const TensorRef& send,
                                        const TensorRef& recv,
                                        absl::string_view label) {
  ZR_RETURN_IF_ERROR(runtime::CheckAllGather(send, recv, size_, label));
  return Issue(stream, CollectiveKind::kAllGather, send, recv,
               runtime::ReduceOp::kSum, 0, label);
}

absl::Status SimCommunicator::ReduceScatter(runtime::Stream& stream,
                                            const TensorRef& send,
                                            const TensorRef& recv,
                                            absl::string_view label) {
  ZR_RETURN_IF_ERROR(runtime::CheckReduceScatter(send, recv, size_, label));
  return Issue(stream, CollectiveKind::kReduceScatter, send, recv,
               runtime::ReduceOp::kSum, 0, label);
}

absl::Status SimCommunicator::AllReduce(runtime::Stream& stream,
                                        const TensorRef& send,
                                        const TensorRef& recv,
                                        runtime::ReduceOp op,
                                        absl::string_view label) {
  ZR_RETURN_IF_ERROR(runtime::CheckAllReduce(send, recv, label));
  return Issue(stream, CollectiveKind::kAllReduce, send, recv, op, 0, label);
}

absl::Status SimCommunicator::Broadcast(runtime::Stream& stream,
                                        const TensorRef& buffer, int root,
                                        absl::string_view label) {
  ZR_RETURN_IF_ERROR(runtime::CheckBroadcast(root, size_, label));
  return Issue(stream, CollectiveKind::kBroadcast, buffer, buffer,
               runtime::ReduceOp::kSum, root, label);
}

absl::Status SimCommunicator::Issue(runtime::Stream& stream,
                                    CollectiveKind kind, const TensorRef& send,
                                    const TensorRef& recv, runtime::ReduceOp op,
                                    int root, absl::string_view label) {
  auto* s = dynamic_cast<SimStream*>(&stream);
  if (s == nullptr || s->rank_ != rank_) {
    return absl::InvalidArgumentError("stream belongs to another device");
  }
  if (runtime::IsHost(send.slice.space()) ||
      runtime::IsHost(recv.slice.space())) {
    return absl::InvalidArgumentError(absl::StrCat(
        CollectiveKindName(kind), " '", label, "' needs device buffers"));
  }
  SimRank* r = rank_;
  s->AwaitQueueSlot();
  r->HostCost(r->cost().collective_call_nanos());
  ++r->ops_;
  SimWorld::Impl::Arrival a;
  a.rank = r;
  a.position = position_;
  a.stream = s;
  a.kind = kind;
  a.send = send;
  a.recv = recv;
  a.op = op;
  a.root = root;
  a.label = std::string(label);
  a.ready_ns = std::max(r->now_, s->tail_ns_);
  a.queue_seq = s->Enqueued(SimStream::kUnresolved);
  return r->world_->Collective(group_, std::move(a));
}

// ---------------------------------------------------------------------------
// SimWorld::Impl

SimWorld::Impl::~Impl() = default;

absl::Status SimWorld::Impl::Init() {
  if (options_.world_size < 1) {
    return absl::InvalidArgumentError("world_size must be at least 1");
  }
  if (options_.symmetric && options_.mode == SimMode::kData) {
    return absl::InvalidArgumentError(
        "the symmetric shortcut needs timing mode: in data mode every rank "
        "holds different values");
  }
  if (options_.jitter < 0 || options_.jitter >= 1) {
    return absl::InvalidArgumentError("jitter must be in [0, 1)");
  }
  const int n = options_.symmetric ? 1 : options_.world_size;
  for (int r = 0; r < n; ++r) {
    ranks_.push_back(std::make_unique<SimRank>(this, r));
    cvs_.push_back(std::make_unique<std::condition_variable>());
  }
  state_.assign(n, State::kRunnable);
  std::vector<int> all(options_.world_size);
  for (int r = 0; r < options_.world_size; ++r) all[r] = r;
  GroupOf(all);
  return absl::OkStatus();
}

void SimWorld::Impl::WaitTurn(int r, std::unique_lock<std::mutex>& lock) {
  cvs_[r]->wait(lock, [&] { return current_ == r; });
}

int SimWorld::Impl::PickNext() const {
  int best = -1;
  for (int r = 0; r < static_cast<int>(ranks_.size()); ++r) {
    if (state_[r] != State::kRunnable) continue;
    if (best < 0 || ranks_[r]->now_ < ranks_[best]->now_) best = r;
  }
  return best;
}

void SimWorld::Impl::SwitchTo(int next) {
  current_ = next;
  if (next >= 0) cvs_[next]->notify_one();
}

void SimWorld::Impl::OnStuck() {
  // No rank can run: some wait in collectives others will never reach.
  std::vector<std::string> waiting;
  for (const auto& g : groups_) {
    for (const Pending& p : g->pending) {
      if (p.arrivals.empty()) continue;
      std::vector<int> in;
      for (const Arrival& a : p.arrivals) in.push_back(a.rank->rank_);
      waiting.push_back(
          absl::StrCat(p.description, " (ranks ", absl::StrJoin(in, ","),
                       " of ", absl::StrJoin(g->members, ","), " arrived)"));
    }
  }
  std::vector<int> done;
  for (int r = 0; r < static_cast<int>(state_.size()); ++r) {
    if (state_[r] == State::kDone) done.push_back(r);
  }
  abort_message_ = absl::StrCat(
      "simulation deadlock: ranks wait in ", absl::StrJoin(waiting, "; "),
      done.empty() ? std::string()
                   : absl::StrCat("; ranks ", absl::StrJoin(done, ","),
                                  " already finished"));
  for (int r = 0; r < static_cast<int>(state_.size()); ++r) {
    if (state_[r] == State::kBlocked) {
      state_[r] = State::kRunnable;
    }
  }
  // Let the blocked ranks return errors one by one, lowest rank first.
  SwitchTo(PickNext());
}

int SimWorld::Impl::GroupOf(const std::vector<int>& members) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (groups_[g]->members == members) return static_cast<int>(g);
  }
  auto group = std::make_unique<Group>();
  group->members = members;
  for (int m : members) {
    if (m < simulated_ranks()) ++group->simulated;
  }
  group->next_seq.assign(members.size(), 0);
  groups_.push_back(std::move(group));
  return static_cast<int>(groups_.size()) - 1;
}

absl::Status SimWorld::Impl::Collective(int group_id, Arrival arrival) {
  SimRank* self = arrival.rank;
  const int me = self->rank_;
  std::unique_lock<std::mutex> lock(mu_);
  if (!abort_message_.empty()) return absl::AbortedError(abort_message_);
  Group& group = *groups_[group_id];
  const uint64_t seq = group.next_seq[arrival.position]++;
  while (group.base + group.pending.size() <= seq) group.pending.emplace_back();
  Pending& p = group.pending[seq - group.base];
  if (!p.arrivals.empty()) {
    const Arrival& first = p.arrivals.front();
    if (first.kind != arrival.kind ||
        first.send.elements() != arrival.send.elements() ||
        first.send.dtype != arrival.send.dtype || first.root != arrival.root) {
      return absl::InvalidArgumentError(absl::StrCat(
          "collective #", seq, " mismatch: rank ", first.rank->rank_,
          " issued ", CollectiveKindName(first.kind), " '", first.label,
          "' of ", first.send.elements(), " elements, rank ", me, " issued ",
          CollectiveKindName(arrival.kind), " '", arrival.label, "' of ",
          arrival.send.elements()));
    }
  } else {
    p.description = absl::StrCat(CollectiveKindName(arrival.kind), " #", seq,
                                 " '", arrival.label, "'");
  }
  p.arrivals.push_back(std::move(arrival));
  if (static_cast<int>(p.arrivals.size()) == group.simulated) {
    absl::Status s = Complete(group, p);
    p.arrivals.clear();
    p.arrivals.shrink_to_fit();
    uint64_t oldest = group.next_seq.empty() ? 0 : group.next_seq[0];
    for (size_t i = 0; i < group.members.size(); ++i) {
      if (group.members[i] < simulated_ranks()) {
        oldest = std::min(oldest, group.next_seq[i]);
      }
    }
    while (!group.pending.empty() && group.pending.front().arrivals.empty() &&
           group.base < oldest) {
      group.pending.pop_front();
      ++group.base;
    }
    return s;
  }
  // Wait for the others.
  state_[me] = State::kBlocked;
  const int next = PickNext();
  if (next < 0) {
    OnStuck();
  } else {
    SwitchTo(next);
  }
  WaitTurn(me, lock);
  // Woken either because the last rank completed this collective (which
  // clears its arrivals) or because the run is stuck (OnStuck).
  const bool completed =
      seq < group.base || group.pending[seq - group.base].arrivals.empty();
  if (!completed) return absl::AbortedError(abort_message_);
  return absl::OkStatus();
}

absl::Status SimWorld::Impl::Complete(const Group& group, Pending& p) {
  std::vector<Arrival>& arrivals = p.arrivals;
  // Deterministic order: by position in the group.
  std::sort(arrivals.begin(), arrivals.end(),
            [](const Arrival& a, const Arrival& b) {
              return a.position < b.position;
            });
  const Arrival& first = arrivals.front();
  const int n = static_cast<int>(group.members.size());
  const int64_t elem = kernels::DTypeSize(first.send.dtype);
  int64_t total_bytes = 0;
  switch (first.kind) {
    case CollectiveKind::kAllGather:
      total_bytes = first.recv.elements() * elem;
      break;
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kBroadcast:
      total_bytes = first.send.elements() * elem;
      break;
  }
  const int per_node = cost_.profile().fabric().gpus_per_node();
  const bool spans_nodes =
      group.members.front() / per_node != group.members.back() / per_node;
  const bool through_host = cost_.profile().fabric().through_host();
  int64_t duration =
      cost_.CollectiveNanos(first.kind, total_bytes, n, spans_nodes);
  duration = first.rank->Jitter(duration);

  int64_t ready = 0;
  std::vector<const Calendar*> calendars;
  for (const Arrival& a : arrivals) {
    ready = std::max(ready, a.ready_ns);
    calendars.push_back(&a.rank->fabric_);
    if (through_host) {
      calendars.push_back(&a.rank->d2h_);
      calendars.push_back(&a.rank->h2d_);
    }
  }
  const int64_t start =
      internal::EarliestCommonStart(calendars, ready, duration);
  const int64_t end = start + duration;

  // Values, computed once from every rank's inputs before any output is
  // written (recv may alias send).
  if (data_mode()) {
    const int64_t count = first.send.elements();
    std::vector<std::vector<float>> inputs;
    for (const Arrival& a : arrivals) {
      if (a.send.slice.data() == nullptr || a.recv.slice.data() == nullptr) {
        return absl::FailedPreconditionError(
            absl::StrCat(p.description, ": buffer without data"));
      }
      std::vector<float> v(count);
      kernels::CastArgs c;
      c.n = count;
      c.src = a.send.dtype;
      c.dst = kernels::DType::kF32;
      kernels::Cast(c, a.send.slice.data(), v.data());
      inputs.push_back(std::move(v));
    }
    auto store = [](const TensorRef& dst, const float* src, int64_t n_el) {
      kernels::CastArgs c;
      c.n = n_el;
      c.src = kernels::DType::kF32;
      c.dst = dst.dtype;
      kernels::Cast(c, src, dst.slice.data());
    };
    switch (first.kind) {
      case CollectiveKind::kAllGather: {
        std::vector<float> out(count * n);
        for (int r = 0; r < n; ++r) {
          std::copy(inputs[r].begin(), inputs[r].end(),
                    out.begin() + r * count);
        }
        for (const Arrival& a : arrivals) store(a.recv, out.data(), count * n);
        break;
      }
      case CollectiveKind::kReduceScatter: {
        const int64_t chunk = count / n;
        std::vector<float> sum(count, 0.0f);
        for (int r = 0; r < n; ++r) {
          for (int64_t i = 0; i < count; ++i) sum[i] += inputs[r][i];
        }
        for (const Arrival& a : arrivals) {
          store(a.recv, sum.data() + a.position * chunk, chunk);
        }
        break;
      }
      case CollectiveKind::kAllReduce: {
        std::vector<float> acc = inputs[0];
        for (int r = 1; r < n; ++r) {
          for (int64_t i = 0; i < count; ++i) {
            acc[i] = first.op == runtime::ReduceOp::kSum
                         ? acc[i] + inputs[r][i]
                         : std::max(acc[i], inputs[r][i]);
          }
        }
        for (const Arrival& a : arrivals) store(a.recv, acc.data(), count);
        break;
      }
      case CollectiveKind::kBroadcast: {
        for (const Arrival& a : arrivals) {
          if (a.position != first.root) {
            store(a.recv, inputs[first.root].data(), count);
          }
        }
        break;
      }
    }
  }

  for (Arrival& a : arrivals) {
    SimRank* r = a.rank;
    r->fabric_.Reserve(start, duration);
    if (through_host) {
      r->d2h_.Reserve(start, duration);
      r->h2d_.Reserve(start, duration);
    }
    a.stream->tail_ns_ = end;
    a.stream->Resolve(a.queue_seq, end);
    r->busy_until_ = std::max(r->busy_until_, end);
    r->Span(a.stream->track_, a.label, start, end, total_bytes, "collective");
    r->Span(kFabricTrack, a.label, start, end, total_bytes, "collective");
    r->RecordActivity(ActivityInterval::Kind::kCollective, start, end);
    if (r->detect()) {
      std::vector<runtime::Access> acc;
      if (first.kind != CollectiveKind::kBroadcast ||
          a.position == first.root) {
        acc.push_back({a.send.slice, false});
      }
      if (first.kind != CollectiveKind::kBroadcast ||
          a.position != first.root) {
        acc.push_back({a.recv.slice, true});
      }
      r->StreamAccesses(*a.stream, acc, a.label, start, end);
    }
    if (state_[r->rank_] == State::kBlocked) {
      state_[r->rank_] = State::kRunnable;
    }
  }
  return absl::OkStatus();
}

absl::Status SimWorld::Impl::Run(const runtime::RankFunction& fn) {
  const int n = static_cast<int>(ranks_.size());
  std::vector<absl::Status> results(n);
  {
    std::lock_guard<std::mutex> lock(mu_);
    state_.assign(n, State::kRunnable);
    done_count_ = 0;
    abort_message_.clear();
    for (auto& g : groups_) {
      g->pending.clear();
      g->base = 0;
      std::fill(g->next_seq.begin(), g->next_seq.end(), 0);
    }
    current_ = -1;
  }
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([this, r, &fn, &results] {
      {
        std::unique_lock<std::mutex> lock(mu_);
        WaitTurn(r, lock);
      }
      absl::Status s = fn(*ranks_[r]);
      std::unique_lock<std::mutex> lock(mu_);
      results[r] = std::move(s);
      state_[r] = State::kDone;
      ++done_count_;
      if (done_count_ == static_cast<int>(ranks_.size())) {
        current_ = -1;
        done_cv_.notify_all();
        return;
      }
      const int next = PickNext();
      if (next < 0) {
        OnStuck();
      } else {
        SwitchTo(next);
      }
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu_);
    SwitchTo(PickNext());
    done_cv_.wait(lock, [&] { return done_count_ == n; });
  }
  for (std::thread& t : threads) t.join();
  // The root cause first: a rank's own error over another's abort.
  for (bool aborts : {false, true}) {
    for (int r = 0; r < n; ++r) {
      if (!results[r].ok() && aborts == absl::IsAborted(results[r])) {
        return Annotate(results[r], absl::StrCat("rank ", r));
      }
    }
  }
  if (!abort_message_.empty()) return absl::AbortedError(abort_message_);
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// SimWorld

absl::StatusOr<std::unique_ptr<SimWorld>> SimWorld::Create(SimOptions options) {
  ZR_ASSIGN_OR_RETURN(CostModel cost, CostModel::Create(options.profile));
  cost.set_ranks_per_node(
      std::min(options.world_size, options.profile.fabric().gpus_per_node()));
  cost.set_world_size(options.world_size);
  auto impl = std::make_unique<Impl>(std::move(options), std::move(cost));
  ZR_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<SimWorld>(new SimWorld(std::move(impl)));
}

SimWorld::SimWorld(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SimWorld::~SimWorld() = default;

absl::Status SimWorld::Run(const runtime::RankFunction& fn) {
  return impl_->Run(fn);
}
const SimOptions& SimWorld::options() const { return impl_->options(); }
const CostModel& SimWorld::cost_model() const { return impl_->cost(); }
int SimWorld::simulated_ranks() const { return impl_->simulated_ranks(); }
const Trace& SimWorld::trace() const { return impl_->trace(); }

std::vector<RaceReport> SimWorld::races() const {
  std::vector<RaceReport> all;
  for (int r = 0; r < impl_->simulated_ranks(); ++r) {
    const auto& reports = impl_->rank(r).races_.reports();
    all.insert(all.end(), reports.begin(), reports.end());
  }
  return all;
}

RankStats SimWorld::stats(int rank) const {
  const SimRank& r = impl_->rank(rank);
  RankStats s;
  s.host_now_ns = r.now_;
  s.device_busy_until_ns = r.busy_until_;
  s.ops = r.ops_;
  s.host_blocked_ns = r.blocked_ns_;
  s.device_memory = r.device_.memory_stats();
  s.pinned = r.pinned_.stats();
  return s;
}

int64_t SimWorld::total_ops() const {
  int64_t n = 0;
  for (int r = 0; r < impl_->simulated_ranks(); ++r) n += impl_->rank(r).ops_;
  return n;
}

void SimWorld::set_record_activity(bool on) { impl_->set_record_activity(on); }

std::vector<ActivityInterval> SimWorld::TakeActivity(int rank) {
  return std::move(impl_->rank(rank).activity_);
}

}  // namespace sim
}  // namespace zero3
