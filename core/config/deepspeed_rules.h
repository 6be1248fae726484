// Copyright 2026 The zero3 Authors.
//
// deepspeed_rules.h: the DeepSpeed keys zero3 does not implement whose value
// decides whether DeepSpeed would run the config at all.
//
// Each key of kind kValueRule (deepspeed_keys.h) is judged here as
// DeepSpeed's config reader (runtime/config.py) or its engine and ZeRO-3
// optimizer (runtime/engine.py, runtime/zero/stage3.py) judge it: a value
// DeepSpeed rejects is an error that says what DeepSpeed says; a value it
// accepts gets a notice saying what zero3 does instead. zero3 always runs
// ZeRO stage 3, so the rules for stage 3 apply. The types of the keys zero3
// ignores are checked too (ignored_key_types.h). Internal to the loader.

#ifndef ZERO3_CORE_CONFIG_DEEPSPEED_RULES_H_
#define ZERO3_CORE_CONFIG_DEEPSPEED_RULES_H_

#include "core/config/config.pb.h"
#include "core/config/diagnostics.h"
#include "core/config/json.h"

namespace zero3 {
namespace config {

// Judges the kValueRule keys of `settings` (the JSON as given, "auto"
// resolved); `config` holds the converted fields, deprecated keys
// translated (reduce_scatter, the offload device).
void ApplyDeepSpeedRules(const JsonValue& settings, const Config& config,
                         Diagnostics* diag);

}  // namespace config
}  // namespace zero3

#endif  // ZERO3_CORE_CONFIG_DEEPSPEED_RULES_H_
