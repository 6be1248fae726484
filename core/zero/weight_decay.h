// Copyright 2026 The zero3 Authors.
//
// weight_decay.h: which parameters weight decay applies to, and the ranges
// of a rank's flat shard that share one decay.
//
// DeepSpeed decays every parameter (one parameter group); the Hugging Face
// Trainer puts biases and norm weights in a group without decay. With
// per-parameter decays, the optimizer steps each sub-group as runs of
// consecutive parameters with equal decay: one run when all are equal, so
// the default costs nothing. Pure functions; thread-safe.

#ifndef ZERO3_CORE_ZERO_WEIGHT_DECAY_H_
#define ZERO3_CORE_ZERO_WEIGHT_DECAY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/zero/shard_layout.h"

namespace zero3 {
namespace zero {

// Whether the Hugging Face Trainer's grouping (Trainer.
// get_decay_parameter_names) decays the parameter named `name`: not when its
// lowercased name contains "bias", "layernorm" or "rmsnorm", has a
// dot-separated component "norm", or a component ending in "_norm".
// (The Trainer also exempts parameters of nn.LayerNorm modules; zero3's
// models have RMSNorm only, whose weights the names above catch.)
bool TrainerDecays(absl::string_view name);

// The decay of each parameter: `weight_decay` for all, or with
// `exclude_bias_and_norm` 0 where TrainerDecays is false.
std::vector<float> ParamWeightDecays(const std::vector<std::string>& names,
                                     float weight_decay,
                                     bool exclude_bias_and_norm);

// A range of the flat shard (elements) whose parameters share one decay.
struct DecayRun {
  int64_t offset = 0;
  int64_t elements = 0;
  float weight_decay = 0;
};

// `range` (of `layout`) split at every change of `decays` (one per
// parameter), in order; runs of no elements are left out.
std::vector<DecayRun> DecayRuns(const ShardLayout& layout,
                                const std::vector<float>& decays,
                                const ParamRange& range);

// `runs` clipped to the elements [offset, offset + elements).
std::vector<DecayRun> ClipRuns(const std::vector<DecayRun>& runs,
                               int64_t offset, int64_t elements);

}  // namespace zero
}  // namespace zero3

#endif  // ZERO3_CORE_ZERO_WEIGHT_DECAY_H_
