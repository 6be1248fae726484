// Copyright 2026 The zero3 Authors.
//
// text_format.h: reads a configuration in protobuf text format (config.proto,
// canonical names only) into the settings tree the loader resolves.
//
// Errors say where ("line 2, column 3: ...") and, for an unknown field, what
// was likely meant: the nearest field, the canonical name of a DeepSpeed
// alias, or that a DeepSpeed JSON key has no place in the text format.
//
// Thread-compatible: a plain function. Internal to the loader
// (config_loader.h).

#ifndef ZERO3_CORE_CONFIG_TEXT_FORMAT_H_
#define ZERO3_CORE_CONFIG_TEXT_FORMAT_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/config/json.h"

namespace zero3 {
namespace config {

// The fields `text` sets, as DeepSpeed-named JSON; InvalidArgument with
// every parse error, one per line.
absl::StatusOr<JsonValue> TextFormatToSettings(absl::string_view text);

}  // namespace config
}  // namespace zero3

#endif  // ZERO3_CORE_CONFIG_TEXT_FORMAT_H_
