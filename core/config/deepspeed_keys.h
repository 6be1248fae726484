// Copyright 2026 The zero3 Authors.
//
// deepspeed_keys.h: the DeepSpeed configuration keys that are not fields of
// config.proto, and what zero3 does with each.
//
// A DeepSpeed config may carry five kinds of keys that our schema does not
// have as fields:
//   - aliases: another accepted spelling of one of our fields (DeepSpeed's
//     short `prefetch_bucket_size` for `stage3_prefetch_bucket_size`, the old
//     top-level `bfloat16` for `bf16`). Read as the field, with a notice.
//   - deprecated keys: old keys with a replacement (`cpu_offload` for
//     `offload_optimizer.device`). Translated by the loader, with a notice;
//     a contradiction with the replacement is an error.
//   - ignored keys: DeepSpeed features zero3 does not implement. Never
//     silently dropped: each one gets a notice that says what happens
//     instead. Sections (`flops_profiler`, `wandb`, ...) are
//     ignored as a whole, whatever they contain.
//   - rejected keys: keys DeepSpeed itself rejects or that would change the
//     training in a way zero3 cannot honour (`optimizer.params.max_grad_norm`).
//   - value rules: keys whose value decides (`gradient_allreduce_op`: "mean"
//     is what zero3 does, "sum" DeepSpeed rejects with ZeRO-3); checked by
//     deepspeed_rules.h.
// Keys that are none of these and not fields are errors (misspelled or
// misplaced), reported by the loader with a suggestion.
//
// The table is static data: thread-safe, no ownership.

#ifndef ZERO3_CORE_CONFIG_DEEPSPEED_KEYS_H_
#define ZERO3_CORE_CONFIG_DEEPSPEED_KEYS_H_

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace zero3 {
namespace config {

enum class DeepSpeedKeyKind {
  kAlias,
  kDeprecated,
  kIgnored,
  // An error when the key's value is true (e.g. amsgrad); ignored with a
  // notice when false.
  kRejectedIfTrue,
  kRejected,
  // Ignored or rejected depending on its value and on other keys, as
  // DeepSpeed decides (deepspeed_rules.h); the loader passes over it.
  kValueRule,
};

struct DeepSpeedKey {
  // Path of the enclosing section: "" for the top level, else dotted, e.g.
  // "zero_optimization.offload_optimizer".
  absl::string_view parent;
  absl::string_view name;
  DeepSpeedKeyKind kind;
  // kAlias: the field's name in the same section. kDeprecated: the full path
  // of the replacement key. Empty otherwise.
  absl::string_view target;
  // kIgnored/kRejected*: what happens instead, or the fix, as a sentence
  // that completes "<path>: ...".
  absl::string_view note;
};

// Every entry, grouped by section.
absl::Span<const DeepSpeedKey> DeepSpeedKeys();

// The entry for `name` directly under `parent`, or null.
const DeepSpeedKey* FindDeepSpeedKey(absl::string_view parent,
                                     absl::string_view name);

}  // namespace config
}  // namespace zero3

#endif  // ZERO3_CORE_CONFIG_DEEPSPEED_KEYS_H_
