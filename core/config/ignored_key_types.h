// Copyright 2026 The zero3 Authors.
//
// ignored_key_types.h: the types DeepSpeed's config models give the keys
// zero3 ignores.
//
// zero3 ignores many DeepSpeed keys (deepspeed_keys.h), but DeepSpeed still
// validates them: `round_robin_gradients` must read as true or false,
// `allgather_bucket_size` as an integer >= 0, the `wandb` section may hold
// only the keys of DeepSpeed's WandbConfig. A value DeepSpeed rejects makes a
// config DeepSpeed cannot run, so it is an error here too, although the key
// changes nothing in zero3. Internal to the loader.

#ifndef ZERO3_CORE_CONFIG_IGNORED_KEY_TYPES_H_
#define ZERO3_CORE_CONFIG_IGNORED_KEY_TYPES_H_

#include "core/config/diagnostics.h"
#include "core/config/json.h"

namespace zero3 {
namespace config {

// Reports each ignored key of `settings` (the JSON as given) whose value, or
// whose presence, DeepSpeed's config models reject.
void CheckIgnoredKeyTypes(const JsonValue& settings, Diagnostics* diag);

}  // namespace config
}  // namespace zero3

#endif  // ZERO3_CORE_CONFIG_IGNORED_KEY_TYPES_H_
