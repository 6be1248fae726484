// Copyright 2026 The zero3 Authors.
//
// collective_timing.h: when a collective runs on the fabric. Its duration
// comes from the cost model (payload, group size, whether the group spans
// nodes); it starts once every participant's stream is ready and every
// participant's fabric port (and, where the fabric goes through host memory,
// both host links) is free for the whole duration, filling earlier gaps.
// What it computes is collective_values.h's business.

#ifndef ZERO3_SIM_INTERNAL_COLLECTIVE_TIMING_H_
#define ZERO3_SIM_INTERNAL_COLLECTIVE_TIMING_H_

#include <cstdint>
#include <vector>

#include "core/kernels/dtype.h"
#include "sim/cost_model.h"
#include "sim/internal/calendar.h"

namespace zero3 {
namespace sim {
namespace internal {

// Bytes the cost model charges for a collective: the all-gather's output,
// otherwise the input, counted in elements of the send dtype.
int64_t CollectivePayloadBytes(CollectiveKind kind, int64_t send_elements,
                               int64_t recv_elements, kernels::DType dtype);

// The collective's duration before jitter, over `members` (world ranks,
// ascending).
int64_t CollectiveDuration(const CostModel& cost, CollectiveKind kind,
                           int64_t payload_bytes,
                           const std::vector<int>& members);

// One participant: when its stream is ready and the resources it occupies.
struct CollectivePorts {
  int64_t ready_ns = 0;
  Calendar* fabric = nullptr;
  Calendar* d2h = nullptr;
  Calendar* h2d = nullptr;
};

// Earliest start, at or after every participant is ready, at which all their
// ports are free for `duration` (the host links too if `through_host`).
int64_t EarliestCollectiveStart(const std::vector<CollectivePorts>& ports,
                                bool through_host, int64_t duration);

// Marks one participant's ports busy for [start, start + duration).
void ReserveCollective(const CollectivePorts& ports, bool through_host,
                       int64_t start, int64_t duration);

}  // namespace internal
}  // namespace sim
}  // namespace zero3

#endif  // ZERO3_SIM_INTERNAL_COLLECTIVE_TIMING_H_
