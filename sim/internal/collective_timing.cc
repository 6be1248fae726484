// Copyright 2026 The zero3 Authors.

#include "sim/internal/collective_timing.h"

#include <algorithm>

namespace zero3 {
namespace sim {
namespace internal {

int64_t CollectivePayloadBytes(CollectiveKind kind, int64_t send_elements,
                               int64_t recv_elements, kernels::DType dtype) {
  const int64_t elem = kernels::DTypeSize(dtype);
  switch (kind) {
    case CollectiveKind::kAllGather:
      return recv_elements * elem;
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kBroadcast:
      return send_elements * elem;
  }
  return 0;
}

int64_t CollectiveDuration(const CostModel& cost, CollectiveKind kind,
                           int64_t payload_bytes,
                           const std::vector<int>& members) {
  const int per_node = cost.profile().fabric().gpus_per_node();
  const bool spans_nodes =
      members.front() / per_node != members.back() / per_node;
  return cost.CollectiveNanos(kind, payload_bytes,
                              static_cast<int>(members.size()), spans_nodes);
}

int64_t EarliestCollectiveStart(const std::vector<CollectivePorts>& ports,
                                bool through_host, int64_t duration) {
  int64_t ready = 0;
  std::vector<const Calendar*> calendars;
  for (const CollectivePorts& p : ports) {
    ready = std::max(ready, p.ready_ns);
    calendars.push_back(p.fabric);
    if (through_host) {
      calendars.push_back(p.d2h);
      calendars.push_back(p.h2d);
    }
  }
  return EarliestCommonStart(calendars, ready, duration);
}

void ReserveCollective(const CollectivePorts& ports, bool through_host,
                       int64_t start, int64_t duration) {
  ports.fabric->Reserve(start, duration);
  if (through_host) {
    ports.d2h->Reserve(start, duration);
    ports.h2d->Reserve(start, duration);
  }
}

}  // namespace internal
}  // namespace sim
}  // namespace zero3
