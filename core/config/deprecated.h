// Copyright 2026 The zero3 Authors.
//
// deprecated.h: the loader's second stage, DeepSpeed's deprecated keys
// translated to their replacements.
//
// cpu_offload, cpu_offload_param(s), cpu_offload_use_pin_memory and
// stage3_gather_fp16_weights_on_model_save set the fields that replaced
// them, with a notice saying what to write instead. A deprecated key that
// repeats its replacement gets a notice; one that contradicts it (or
// another deprecated key) is an error.
//
// Thread-compatible: a plain function. Internal to the loader
// (config_loader.h).

#ifndef ZERO3_CORE_CONFIG_DEPRECATED_H_
#define ZERO3_CORE_CONFIG_DEPRECATED_H_

#include "absl/types/span.h"
#include "core/config/config.pb.h"
#include "core/config/diagnostics.h"
#include "core/config/json_to_config.h"

namespace zero3 {
namespace config {

// Applies `uses` (from ConvertSettings) to `config`, which holds the fields
// given explicitly.
void ApplyDeprecated(absl::Span<const DeprecatedUse> uses, Config* config,
                     Diagnostics* diag);

}  // namespace config
}  // namespace zero3

#endif  // ZERO3_CORE_CONFIG_DEPRECATED_H_
