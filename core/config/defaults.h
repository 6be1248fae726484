// Copyright 2026 The zero3 Authors.
//
// defaults.h: the loader's default-filling stage.
//
// Thread-compatible: a plain function. Internal to the loader
// (config_loader.h).

#ifndef ZERO3_CORE_CONFIG_DEFAULTS_H_
#define ZERO3_CORE_CONFIG_DEFAULTS_H_

#include "google/protobuf/message.h"

namespace zero3 {
namespace config {

// Sets every unset field of `msg` (a Config or one of its sections) to its
// config.proto default, recursively; betas to [0.9, 0.999]. Leaves the batch
// sizes (derived by ResolveBatch) and strings without a default (nvme_path)
// unset.
void FillDefaults(google::protobuf::Message* msg);

}  // namespace config
}  // namespace zero3

#endif  // ZERO3_CORE_CONFIG_DEFAULTS_H_
