// Copyright 2026 The zero3 Authors.
//
// field_bounds.h: checks the (bounds) range of every annotated field of a
// configuration (config.proto), in one walk.
//
// The walk visits every field in declaration order, depth first, and after
// each field (for a section: after everything in it) calls back with its
// dotted path, so that rules relating fields to each other run in the same
// order as the range checks:
//
//   CheckFieldBounds(config, &diag, [&](const std::string& path) {
//     if (path == "fp16.enabled") CheckPrecision(config, &diag);
//   });
//
// Thread-compatible: a plain function. Internal to the loader
// (config_loader.h).

#ifndef ZERO3_CORE_CONFIG_FIELD_BOUNDS_H_
#define ZERO3_CORE_CONFIG_FIELD_BOUNDS_H_

#include <functional>
#include <string>

#include "core/config/diagnostics.h"
#include "google/protobuf/message.h"

namespace zero3 {
namespace config {

// Reports each annotated field of `msg` (a Config) whose value is outside
// its bounds, or not finite, at its DeepSpeed key path; `after_field(path)`
// is called after each field's check.
void CheckFieldBounds(
    const google::protobuf::Message& msg, Diagnostics* diag,
    const std::function<void(const std::string& path)>& after_field);

}  // namespace config
}  // namespace zero3

#endif  // ZERO3_CORE_CONFIG_FIELD_BOUNDS_H_
