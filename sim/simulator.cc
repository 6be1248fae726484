// Copyright 2026 The zero3 Authors.
//
// The world: its settings and ranks, the scheduler that takes their turns
// and the rendezvous where they meet. The pieces live in sim/internal/:
// rank_state (a rank's clocks and bookkeeping), streams (streams and
// events), sim_runtime (runtime and device), communicator, collectives (the
// rendezvous), collective_timing and collective_values, scheduler.

#include "sim/simulator.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "sim/internal/collectives.h"
#include "sim/internal/rank_state.h"
#include "sim/internal/scheduler.h"
#include "sim/internal/sim_runtime.h"

namespace zero3 {
namespace sim {

using internal::CollectiveRendezvous;
using internal::RankState;
using internal::Scheduler;
using internal::SimRuntime;
using internal::WorldContext;

class SimWorld::Impl {
 public:
  Impl(SimOptions options, CostModel cost);

  const SimOptions& options() const { return options_; }
  const CostModel& cost() const { return context_.cost; }
  const Trace& trace() const { return context_.trace; }
  int simulated_ranks() const { return static_cast<int>(ranks_.size()); }
  SimRuntime& rank(int r) { return *ranks_[r]; }
  const SimRuntime& rank(int r) const { return *ranks_[r]; }
  void set_record_activity(bool on) { context_.record_activity = on; }
  void set_op_timing(bool on) { context_.op_timing = on; }

  absl::Status Run(const runtime::RankFunction& fn);

 private:
  const SimOptions options_;
  WorldContext context_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<CollectiveRendezvous> collectives_;
  std::vector<std::unique_ptr<SimRuntime>> ranks_;
};

namespace {

absl::Status CheckOptions(const SimOptions& options) {
  if (options.world_size < 1) {
    return absl::InvalidArgumentError("world_size must be at least 1");
  }
  const int simulated = options.symmetric ? 1 : options.world_size;
  if (simulated > kMaxSimulatedRanks) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot simulate ", options.world_size,
        " ranks: the simulator runs "
        "at most ",
        kMaxSimulatedRanks,
        " ranks in one process (each holds "
        "its engine, buffers and a stack); use fewer ranks, or, in timing "
        "mode, the symmetric shortcut (train --symmetric; whatif without "
        "--full), which simulates rank 0 alone for any number of ranks"));
  }
  if (options.symmetric && options.mode == SimMode::kData) {
    return absl::InvalidArgumentError(
        "the symmetric shortcut needs timing mode: in data mode every rank "
        "holds different values");
  }
  if (options.jitter < 0 || options.jitter >= 1) {
    return absl::InvalidArgumentError("jitter must be in [0, 1)");
  }
  return absl::OkStatus();
}

}  // namespace

SimWorld::Impl::Impl(SimOptions options, CostModel cost)
    : options_(std::move(options)), context_(std::move(cost)) {
  context_.world_size = options_.world_size;
  context_.data_mode = options_.mode == SimMode::kData;
  context_.detect_races = options_.detect_races;
  context_.strict = options_.strict;
  context_.tracing = options_.trace;
  context_.jitter = options_.jitter;
  context_.seed = options_.seed;
  context_.max_pinned_bytes = options_.max_pinned_bytes;
  context_.pinned_fallback = options_.pinned_fallback;
  context_.op_timing = options_.op_timing;

  const int n = options_.symmetric ? 1 : options_.world_size;
  scheduler_ = std::make_unique<Scheduler>(
      [this] { return collectives_->DescribeWaiting(); });
  collectives_ =
      std::make_unique<CollectiveRendezvous>(&context_, scheduler_.get(), n);
  for (int r = 0; r < n; ++r) {
    ranks_.push_back(
        std::make_unique<SimRuntime>(&context_, collectives_.get(), r));
    scheduler_->AddRank(&ranks_.back()->state());
  }
}

absl::Status SimWorld::Impl::Run(const runtime::RankFunction& fn) {
  collectives_->Reset();
  return scheduler_->Run([this, &fn](int r) { return fn(*ranks_[r]); });
}

// ---------------------------------------------------------------------------
// SimWorld

absl::StatusOr<std::unique_ptr<SimWorld>> SimWorld::Create(SimOptions options) {
  ZR_ASSIGN_OR_RETURN(CostModel cost, CostModel::Create(options.profile));
  cost.set_ranks_per_node(
      std::min(options.world_size, options.profile.fabric().gpus_per_node()));
  cost.set_world_size(options.world_size);
  ZR_RETURN_IF_ERROR(CheckOptions(options));
  auto impl = std::make_unique<Impl>(std::move(options), std::move(cost));
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
    const auto& reports = impl_->rank(r).state().races().reports();
    all.insert(all.end(), reports.begin(), reports.end());
  }
  return all;
}

RankStats SimWorld::stats(int rank) const {
  const SimRuntime& rt = impl_->rank(rank);
  const RankState& r = rt.state();
  RankStats s;
  s.host_now_ns = r.now();
  s.device_busy_until_ns = r.busy_until();
  s.ops = r.ops();
  s.host_blocked_ns = r.blocked_ns();
  s.device_memory = rt.device_memory();
  s.pinned = rt.pinned_stats();
  return s;
}

int64_t SimWorld::total_ops() const {
  int64_t n = 0;
  for (int r = 0; r < impl_->simulated_ranks(); ++r) {
    n += impl_->rank(r).state().ops();
  }
  return n;
}

void SimWorld::set_record_activity(bool on) { impl_->set_record_activity(on); }

std::vector<ActivityInterval> SimWorld::TakeActivity(int rank) {
  return impl_->rank(rank).state().TakeActivity();
}

void SimWorld::set_op_timing(bool on) { impl_->set_op_timing(on); }

std::vector<runtime::OpTiming> SimWorld::TakeOpTimings(int rank) {
  return impl_->rank(rank).state().TakeOpTimings();
}

}  // namespace sim
}  // namespace zero3
