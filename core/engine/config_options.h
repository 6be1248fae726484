// Copyright 2026 The zero3 Authors.
//
// config_options.h: the engine options a resolved configuration asks for.
//
// The configuration (core/config) speaks DeepSpeed's keys; the engine takes
// plain options (core/zero/options.h). This is the one place that maps one
// to the other.

#ifndef ZERO3_CORE_ENGINE_CONFIG_OPTIONS_H_
#define ZERO3_CORE_ENGINE_CONFIG_OPTIONS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/config/config.pb.h"
#include "core/zero/options.h"

namespace zero3 {
namespace engine {

// `seq`: tokens per sequence (not a DeepSpeed key). The configuration must
// be resolved and validated (config_loader.h).
absl::StatusOr<zero::ZeroOptions> OptionsFromConfig(
    const config::Config& config, int64_t seq, uint64_t seed);

}  // namespace engine
}  // namespace zero3

#endif  // ZERO3_CORE_ENGINE_CONFIG_OPTIONS_H_
