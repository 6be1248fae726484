// Copyright 2026 The zero3 Authors.

#include "sim/internal/rank_state.h"

#include "absl/strings/str_cat.h"

namespace zero3 {
namespace sim {
namespace internal {

RankState::RankState(WorldContext* world, int rank)
    : world_(world),
      rank_(rank),
      races_(rank),
      rng_(world->seed * 0x9E3779B97F4A7C15ull + rank + 1) {
  if (world_->tracing) {
    Trace& t = world_->trace;
    t.NameProcess(rank, absl::StrCat("rank ", rank));
    t.NameTrack(rank, kHostTrack, "host thread");
    t.NameTrack(rank, kComputeTrack, "engine: compute");
    t.NameTrack(rank, kD2HTrack, "engine: D2H link");
    t.NameTrack(rank, kH2DTrack, "engine: H2D link");
    t.NameTrack(rank, kFabricTrack, "engine: fabric");
  }
}

void RankState::BlockUntil(int64_t t, absl::string_view why) {
  if (t <= now_) return;
  if (world_->tracing) {
    world_->trace.AddSpan(rank_, kHostTrack, absl::StrCat("blocked: ", why),
                          now_, t, 0, "blocked");
  }
  RecordActivity(ActivityInterval::Kind::kHostBlocked, now_, t);
  blocked_ns_ += t - now_;
  now_ = t;
}

int RankState::NewStreamTrack(absl::string_view name) {
  const int track = next_track_++;
  if (world_->tracing) {
    world_->trace.NameTrack(rank_, track, absl::StrCat("stream: ", name));
  }
  return track;
}

void RankState::RetireStream(SimStream* stream, int64_t tail_ns, int agent) {
  streams_.erase(std::remove(streams_.begin(), streams_.end(), stream),
                 streams_.end());
  retired_tail_ns_ = std::max(retired_tail_ns_, tail_ns);
  retired_agents_.push_back(agent);
}

}  // namespace internal
}  // namespace sim
}  // namespace zero3
