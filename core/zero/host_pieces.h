// Copyright 2026 The zero3 Authors.
//
// host_pieces.h: the host share of the optimizer in pieces, the unit its
// step runs in. The host AdamW updates a piece while the previous piece's
// working copy goes to the device; the speculative step updates a piece as
// soon as the gradient bucket holding its first element is on the host;
// the step under the next forward updates a piece just before the first
// gather that reads it.
//
// Thread-compatible: plain functions over values.

#ifndef ZERO3_CORE_ZERO_HOST_PIECES_H_
#define ZERO3_CORE_ZERO_HOST_PIECES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/zero/shard_layout.h"
#include "core/zero/weight_decay.h"

namespace zero3 {
namespace zero {

struct HostPiece {
  int64_t offset = 0, elements = 0;  // in the flat layout
  std::string name;                  // "sub-group 3" or "sub-group 3 part 1"
  std::vector<DecayRun> runs;        // its runs of equal weight decay
  // The last bucket (GradReducer::buckets order, from the end of the
  // layout) holding its gradients: it is on the host once that bucket is.
  int ready_bucket = 0;
};

// The pieces of the sub-groups at or after `host_begin` (the host share),
// each cut into pieces of at most `piece_elements` (at least 1), in layout
// order; `decay_runs[g]` are sub-group g's runs, `buckets` the reducer's.
std::vector<HostPiece> PlanHostPieces(
    const std::vector<ParamRange>& sub_groups,
    const std::vector<std::vector<DecayRun>>& decay_runs, int64_t host_begin,
    int64_t piece_elements, const std::vector<ParamRange>& buckets);

}  // namespace zero
}  // namespace zero3

#endif  // ZERO3_CORE_ZERO_HOST_PIECES_H_
