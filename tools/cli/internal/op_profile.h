// Copyright 2026 The zero3 Authors.
//
// op_profile.h: device time per kind of operation, measured beside
// predicted (`zero3 train --backend cuda --profile-ops --predict`).
//
// Operations are grouped by their label with every number replaced by '#'
// ("layer 3 attention bwd" and "layer 17 attention bwd" are both "layer #
// attention bwd"), per stream. A group's time is the sum of its
// operations' device durations per step; operations on different streams
// overlap, so groups do not add up to a phase's wall time.
//
// Thread-compatible: functions over values.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_OP_PROFILE_H_
#define ZERO3_TOOLS_CLI_INTERNAL_OP_PROFILE_H_

#include <string>
#include <vector>

#include "core/runtime/op_timing.h"

namespace zero3 {
namespace cli {
namespace internal {

struct OpGroup {
  std::string stream;
  std::string key;   // the label with numbers as '#'
  double count = 0;  // operations per step
  double ms = 0;     // device time per step
};

// "layer 3 q_proj fwd" -> "layer # q_proj fwd".
std::string OpKey(const std::string& label);

// Groups `ops`, which span `steps` steps, into per-step figures, largest
// time first.
std::vector<OpGroup> GroupOps(const std::vector<runtime::OpTiming>& ops,
                              int steps);

// A table of the `top` largest measured groups with the predicted figures
// beside them, and a last line for everything else.
std::string FormatOpComparison(const std::vector<OpGroup>& measured,
                               const std::vector<OpGroup>& predicted, int top);

}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_OP_PROFILE_H_
