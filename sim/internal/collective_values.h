// Copyright 2026 The zero3 Authors.
//
// collective_values.h: what a collective computes, in data mode: every
// rank's send buffer is read (converted to fp32), the result is reduced or
// gathered in fp32 in group-position order, and each rank's part is stored
// into its receive buffer in that buffer's dtype. When it runs on the fabric
// is collective_timing.h's business.

#ifndef ZERO3_SIM_INTERNAL_COLLECTIVE_VALUES_H_
#define ZERO3_SIM_INTERNAL_COLLECTIVE_VALUES_H_

#include <cstdint>
#include <vector>

#include "core/kernels/dtype.h"
#include "core/runtime/communicator.h"
#include "sim/cost_model.h"

namespace zero3 {
namespace sim {
namespace internal {

// One rank's buffers in a collective. `recv` may alias `send`.
struct CollectiveOperands {
  const void* send = nullptr;
  kernels::DType send_dtype = kernels::DType::kF32;
  void* recv = nullptr;
  kernels::DType recv_dtype = kernels::DType::kF32;
};

struct CollectiveValueArgs {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  runtime::ReduceOp op = runtime::ReduceOp::kSum;  // all-reduce only
  int root = 0;                                    // broadcast only
  int64_t count = 0;  // elements of each rank's send buffer
};

// Computes the collective over `ranks` (indexed by group position; every
// member present, buffers non-null and sized as the collective needs: an
// all-gather receives count * ranks elements, a reduce-scatter count / ranks).
// All inputs are read before any output is written. Broadcast leaves the
// root's buffer untouched.
void ComputeCollectiveValues(const CollectiveValueArgs& args,
                             const std::vector<CollectiveOperands>& ranks);

}  // namespace internal
}  // namespace sim
}  // namespace zero3

#endif  // ZERO3_SIM_INTERNAL_COLLECTIVE_VALUES_H_
