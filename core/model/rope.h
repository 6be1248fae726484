// Copyright 2026 The zero3 Authors.
//
// rope.h: RoPE's inverse frequencies and attention scaling, as transformers'
// modeling_rope_utils computes them for each rope_type (default, linear,
// dynamic, yarn, longrope, llama3) and partial_rotary_factor.
//
// The kernels take the result as plain data (kernels::RotaryArgs); this is
// the one place the formulas live. Values are computed in double and stored
// as float, as the kernels read them; transformers computes in float32, so
// the two agree to float rounding (rope_test checks against its values).

#ifndef ZERO3_CORE_MODEL_ROPE_H_
#define ZERO3_CORE_MODEL_ROPE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/kernels/op_args.h"
#include "core/model/model_spec.pb.h"

namespace zero3 {
namespace model {

struct RopeFrequencies {
  // Dimensions of each head that rotate: head_dim * partial_rotary_factor.
  int64_t rotary_dim = 0;
  // Pair i's inverse frequency, i < rotary_dim / 2.
  std::vector<double> inv_freq;
  // cos and sin are multiplied by this (yarn, longrope; else 1).
  double attention_scaling = 1.0;
  // The default rotation at rope_theta over the whole head: the kernels
  // compute it themselves (no table).
  bool is_default = true;
};

// The checks of spec.rope_scaling and partial_rotary_factor: the keys each
// type needs, positive factors, a rotary dimension that is even and has at
// most kernels::kMaxRotaryPairs pairs. Errors name the key.
absl::Status ValidateRope(const ModelSpec& spec);

// The frequencies of `spec` for sequences of `seq` tokens (dynamic and
// longrope depend on the longest position, as transformers' update at each
// forward does). spec must pass ValidateRope.
RopeFrequencies ComputeRope(const ModelSpec& spec, int64_t seq);

// `rope` written into the rotary kernels' arguments (theta, rotary_dim,
// attention_scaling and, unless default, the table).
void SetRotaryFrequencies(const ModelSpec& spec, const RopeFrequencies& rope,
                          kernels::RotaryArgs* args);

}  // namespace model
}  // namespace zero3

#endif  // ZERO3_CORE_MODEL_ROPE_H_
