// Copyright 2026 The zero3 Authors.
//
// key_value.h: splits "KEY=VALUE" settings, as flags, configuration
// overrides and what-if settings write them.
//
// Stateless and thread-safe.

#ifndef ZERO3_CORE_UTIL_KEY_VALUE_H_
#define ZERO3_CORE_UTIL_KEY_VALUE_H_

#include "absl/strings/string_view.h"
#include "absl/types/optional.h"

namespace zero3 {

// The two sides of a "KEY=VALUE" setting, as views into the text.
struct KeyValue {
  absl::string_view key;
  absl::string_view value;
};

// Splits `text` at its first '=' (the value may contain more); nullopt when
// there is none. Either side may be empty; nothing is trimmed.
absl::optional<KeyValue> SplitKeyValue(absl::string_view text);

}  // namespace zero3

#endif  // ZERO3_CORE_UTIL_KEY_VALUE_H_
