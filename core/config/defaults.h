// Copyright 2026 The zero3 Authors.
//
// defaults.h: the loader's default-filling stage.
//
// Thread-compatible: a plain function. Internal to the loader
// (config_loader.h).

#ifndef ZERO3_CORE_CONFIG_DEFAULTS_H_
#define ZERO3_CORE_CONFIG_DEFAULTS_H_

#include "core/config/config.pb.h"
#include "google/protobuf/message.h"

namespace zero3 {
namespace config {

// Sets every unset field of `msg` (a Config or one of its sections) to its
// config.proto default, recursively; betas to [0.9, 0.999]. Leaves the batch
// sizes (derived by ResolveBatch) and strings without a default (nvme_path)
// unset.
void FillDefaults(google::protobuf::Message* msg);

// The defaults that depend on other keys, before FillDefaults:
// zero3.host_step_overlap is "forward" where
// offload_optimizer.super_offload is on and the host step can move (the
// speculation's pieces not reached when the gradient norm is known then run
// under the next forward: the same bits, and faster), else "none".
void FillDependentDefaults(Config* config);

}  // namespace config
}  // namespace zero3

#endif  // ZERO3_CORE_CONFIG_DEFAULTS_H_
