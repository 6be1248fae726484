// Copyright 2026 The zero3 Authors.
//
// activation_checkpointing.h: what zero3 does with DeepSpeed's
// activation_checkpointing section and its own recompute policy.
//
// In DeepSpeed the section configures deepspeed.checkpointing, which the
// model calls for each checkpointed block; it turns nothing on by itself.
// zero3 recomputes decoder layers when zero3.activation_checkpoint_interval
// is set (zero3 train --gradient-checkpointing sets it to 1), and reads each
// key of the section for one model-parallel group: a notice on what it does,
// or an error where DeepSpeed itself rejects the combination.

#ifndef ZERO3_CORE_CONFIG_ACTIVATION_CHECKPOINTING_H_
#define ZERO3_CORE_CONFIG_ACTIVATION_CHECKPOINTING_H_

#include "core/config/config.pb.h"
#include "core/config/diagnostics.h"

namespace zero3 {
namespace config {

// Notices and errors for the section's keys given in `config`.
void CheckActivationCheckpointing(const Config& config, Diagnostics* diag);

}  // namespace config
}  // namespace zero3

#endif  // ZERO3_CORE_CONFIG_ACTIVATION_CHECKPOINTING_H_
