// Copyright 2026 The zero3 Authors.
//
// coerce.h: the scalar conversions DeepSpeed's pydantic sections make.
//
// DeepSpeed validates its fp16, bf16, zero_optimization (and offload),
// csv_monitor and tensorboard sections with pydantic v2 models in lax mode,
// which convert a value of another JSON type where the conversion is exact:
//   bool  <- "true"/"false"/"1"/"0"/"yes"/"no"/"on"/"off"/"t"/"f"/"y"/"n"
//            (any case), and the numbers 0 and 1 (also 0.0 and 1.0)
//   int   <- a string holding an integer ("3", " +3 ", "1_000", "3.0"), a
//            number with an integral value (2.0, 5e8), true/false (1/0)
//   float <- a string holding a number ("3", "1e-3"), true/false (1.0/0.0)
// Anything else ("3.5" or 2.5 for an int, "maybe" for a bool) is rejected.
// Keys read by DeepSpeed's plain config code (the top level, optimizer,
// scheduler) are used as given, so a quoted number there fails in DeepSpeed
// and is not converted here. Stateless and thread-safe.

#ifndef ZERO3_CORE_CONFIG_COERCE_H_
#define ZERO3_CORE_CONFIG_COERCE_H_

#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "core/config/json.h"

namespace zero3 {
namespace config {

enum class LaxType { kBool, kInt, kFloat };

// Whether DeepSpeed reads the key at dotted `path` through a pydantic model
// (and so converts scalars as above).
bool IsPydanticPath(absl::string_view path);

// `value` converted to `type` by pydantic's lax rules, with DeepSpeed's
// field validators at `path` (fp16.loss_scale takes no bool; its
// loss_scale_window and min_loss_scale take no bool and only strings that
// Python's int() reads). nullopt when pydantic would reject it, or when
// `value` already has the type (nothing to convert). Numbers from a string
// must be finite.
absl::optional<JsonValue> CoerceLax(const JsonValue& value, LaxType type,
                                    absl::string_view path);

// `value` as a bool the way pydantic reads it at `path` (a bool as is, else
// CoerceLax); nullopt when DeepSpeed would reject it.
absl::optional<bool> LaxBool(const JsonValue& value, absl::string_view path);

// The notice for a conversion: "the string \"3\" is read as 3 (as
// DeepSpeed's pydantic reads it); write 3".
std::string CoercionNotice(const JsonValue& from, const JsonValue& to);

}  // namespace config
}  // namespace zero3

#endif  // ZERO3_CORE_CONFIG_COERCE_H_
