// Copyright 2026 The zero3 Authors.
//
// overrides.h: "KEY=VALUE" settings applied to a settings tree before it is
// resolved (config_loader.h documents the rules: ParseOverride,
// SetConfigKey, ApplyOverrides).
//
// Thread-compatible: plain functions. Internal to the loader.

#ifndef ZERO3_CORE_CONFIG_OVERRIDES_H_
#define ZERO3_CORE_CONFIG_OVERRIDES_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/config/json.h"

namespace zero3 {
namespace config {

// Splits "KEY=VALUE" at the first '=', trimming white space around both.
absl::Status SplitOverride(absl::string_view text, std::string* key,
                           std::string* value);

// Sets the dotted DeepSpeed `key` to `value` in `settings`, as
// SetConfigKey.
absl::Status SetSettingsKey(JsonValue* settings, absl::string_view key,
                            absl::string_view value);

// Applies every override in order; InvalidArgument "override TEXT: why",
// one line per bad override.
absl::Status ApplyOverrideList(JsonValue* settings,
                               absl::Span<const std::string> overrides);

}  // namespace config
}  // namespace zero3

#endif  // ZERO3_CORE_CONFIG_OVERRIDES_H_
