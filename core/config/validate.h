// Copyright 2026 The zero3 Authors.
//
// validate.h: the loader's last stage, every rule on a resolved
// configuration.
//
// Simple ranges are (bounds) options beside their fields in config.proto,
// checked by CheckFieldBounds; the rules here relate fields to each other or
// name the values zero3 implements. Errors come in the order of the fields
// they are about.
//
// Thread-compatible: a plain function. Internal to the loader
// (config_loader.h).

#ifndef ZERO3_CORE_CONFIG_VALIDATE_H_
#define ZERO3_CORE_CONFIG_VALIDATE_H_

#include <cstdint>

#include "core/config/config.pb.h"
#include "core/config/diagnostics.h"

namespace zero3 {
namespace config {

// Checks `config` (every field set, or its default read) for data-parallel
// size `world_size`. Paths poisoned in `diag` are not checked again.
void Validate(const Config& config, int64_t world_size, Diagnostics* diag);

// Why the host share's update cannot move out of the end of the step in
// `config` (PlanHostStep's cannot_move), or nullptr where it can.
const char* HostStepCannotMove(const Config& config);

}  // namespace config
}  // namespace zero3

#endif  // ZERO3_CORE_CONFIG_VALIDATE_H_
