// Copyright 2026 The zero3 Authors.

#include "tools/whatif/checkpoint_cost.h"

#include <algorithm>
#include <cmath>

namespace zero3 {
namespace whatif {
namespace {

// A rank's host memory bandwidth, GB/s: its own figure, at most its share
// of the node's.
double RankMemoryGbps(const sim::HostProfile& h, int ranks_per_node) {
  double gbps = h.memory_bandwidth_gbps_per_rank();
  if (h.memory_bandwidth_gbps_per_node() > 0) {
    gbps = std::min(
        gbps, h.memory_bandwidth_gbps_per_node() / std::max(1, ranks_per_node));
  }
  return std::max(gbps, 1e-3);
}

// Milliseconds to move `bytes` at `gbps` (GB/s, 1e9 bytes).
double Ms(double bytes, double gbps) { return bytes / (gbps * 1e6); }

}  // namespace

CheckpointCost EstimateCheckpointCost(const CheckpointCostInput& in) {
  const sim::HostProfile& host = in.profile.host();
  const double bytes = static_cast<double>(in.bytes_per_rank);
  const double memory = RankMemoryGbps(host, in.ranks_per_node);
  CheckpointCost c;
  // A host copy reads and writes each byte.
  c.snapshot_ms = Ms(2 * bytes, memory);
  if (!in.offload) {
    c.snapshot_ms +=
        Ms(bytes, std::max(in.profile.host_link().pinned_d2h_gbps(), 1e-3));
  }
  const double storage = std::max(host.storage_write_gbps_per_node(), 1e-3) /
                         std::max(1, in.ranks_per_node);
  c.write_ms = Ms(bytes, storage);
  const int interval = std::max(1, in.interval);
  c.interval = interval;
  if (!in.async) {
    c.stall_ms = c.snapshot_ms + c.write_ms;
  } else {
    // The write's memory traffic takes its share of the bandwidth the host
    // optimizer step needs, during the steps it overlaps.
    const double traffic = std::min(3 * storage, 0.9 * memory);
    const double overlapped =
        in.step_ms > 0
            ? std::min<double>(interval, std::ceil(c.write_ms / in.step_ms))
            : 0;
    c.slowdown_ms =
        overlapped * in.host_optimizer_ms * traffic / (memory - traffic);
    // The next save waits for a write that outlasts the interval.
    const double window = interval * in.step_ms + c.slowdown_ms;
    c.stall_ms = c.snapshot_ms + std::max(0.0, c.write_ms - window);
  }
  c.per_step_ms = (c.stall_ms + c.slowdown_ms) / interval;
  c.overhead = in.step_ms > 0 ? c.per_step_ms / in.step_ms : 0;
  return c;
}

}  // namespace whatif
}  // namespace zero3
