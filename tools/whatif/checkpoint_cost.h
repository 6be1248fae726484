// Copyright 2026 The zero3 Authors.
//
// checkpoint_cost.h: what saving a checkpoint every N steps costs a
// training run (`zero3 whatif --save-interval N`; docs/checkpoints.md), as
// zero3 train --save does it (core/engine/checkpoint.h), from a simulated
// step and the hardware profile:
//
//   snapshot  the step that saves stops while each rank copies its master
//             and Adam moments (12 bytes per element of its partition) to
//             host memory: a device-to-host copy at the pinned D2H rate
//             then a host copy, or, with the optimizer offloaded, a host
//             copy alone (read and write at the rank's memory bandwidth).
//   write     the shard goes to storage at the rank's share of the node's
//             storage_write_gbps_per_node.
//   blocking  the step waits for the write too.
//   async     a host thread writes while training goes on; the write's
//             memory traffic (the snapshot read, the page-cache copy and
//             the device's read of it: 3 bytes moved per byte written)
//             slows the memory-bound host optimizer step of the steps it
//             overlaps; a write longer than the interval delays the next
//             save (which waits for it).
//
// A plain function of its inputs; thread-safe.

#ifndef ZERO3_TOOLS_WHATIF_CHECKPOINT_COST_H_
#define ZERO3_TOOLS_WHATIF_CHECKPOINT_COST_H_

#include <cstdint>

#include "sim/profile.pb.h"

namespace zero3 {
namespace whatif {

struct CheckpointCostInput {
  sim::HardwareProfile profile;
  int64_t bytes_per_rank = 0;  // a rank's shard: 12 x partition elements
  int ranks_per_node = 1;
  bool offload = true;           // the master and moments live in host memory
  bool async = true;             // zero3.checkpoint_write
  int interval = 1;              // steps between saves
  double step_ms = 0;            // a step without saving
  double host_optimizer_ms = 0;  // of which the host optimizer step
};

struct CheckpointCost {
  int interval = 1;        // the input's
  double snapshot_ms = 0;  // the copies to host memory (the step stops)
  double write_ms = 0;     // the shard to storage
  double stall_ms = 0;     // per save: the time the training loop waits
  double slowdown_ms = 0;  // per save: longer steps while the write runs
  double per_step_ms = 0;  // (stall + slowdown) / interval
  double overhead = 0;     // per_step_ms / step_ms
};

CheckpointCost EstimateCheckpointCost(const CheckpointCostInput& in);

}  // namespace whatif
}  // namespace zero3

#endif  // ZERO3_TOOLS_WHATIF_CHECKPOINT_COST_H_
