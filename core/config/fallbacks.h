// Copyright 2026 The zero3 Authors.
//
// fallbacks.h: the loader's notices about what zero3 reads differently from
// DeepSpeed, and its fallbacks where a DeepSpeed value is not implemented.
//
// NoticeExplicitSettings runs before defaults are filled in (it needs to see
// what was given): NVMe-only keys, a missing stage, optimizer type spelling,
// adam_w_mode with AdamW. ApplyFallbacks runs after: NVMe offload becomes
// host offload, partial offload becomes full offload, each with a notice.
//
// Thread-compatible: plain functions. Internal to the loader
// (config_loader.h).

#ifndef ZERO3_CORE_CONFIG_FALLBACKS_H_
#define ZERO3_CORE_CONFIG_FALLBACKS_H_

#include "core/config/config.pb.h"
#include "core/config/diagnostics.h"

namespace zero3 {
namespace config {

// Notices that depend on what was given explicitly, before defaults hide
// it; spells the optimizer type canonically ("adamw" -> "AdamW") and reads
// adam_w_mode false with type AdamW as true.
void NoticeExplicitSettings(Config* config, Diagnostics* diag);

// Where a DeepSpeed value names something zero3 does not implement, uses
// the nearest thing it does, and says so. `config` has every default.
void ApplyFallbacks(Config* config, Diagnostics* diag);

}  // namespace config
}  // namespace zero3

#endif  // ZERO3_CORE_CONFIG_FALLBACKS_H_
