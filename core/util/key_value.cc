// Copyright 2026 The zero3 Authors.

#include "core/util/key_value.h"

namespace zero3 {

absl::optional<KeyValue> SplitKeyValue(absl::string_view text) {
  const size_t eq = text.find('=');
  if (eq == absl::string_view::npos) return absl::nullopt;
  return KeyValue{text.substr(0, eq), text.substr(eq + 1)};
}

}  // namespace zero3
