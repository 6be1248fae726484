// Copyright 2026 The zero3 Authors.
//
// suggest.h: "did you mean ...?" for misspelled names.
//
// Configuration keys and command-line flags are both looked up by name; when a
// name is unknown, the nearest known one by edit distance is usually what the
// user meant (`stage3_prefetch_bucket_sise`, `--world_size`). Stateless and
// thread-safe.

#ifndef ZERO3_CORE_UTIL_SUGGEST_H_
#define ZERO3_CORE_UTIL_SUGGEST_H_

#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace zero3 {

// Optimal-string-alignment distance: insertions, deletions, substitutions and
// transpositions of adjacent characters each cost 1. Case-sensitive.
int EditDistance(absl::string_view a, absl::string_view b);

// The candidate nearest to `name`, or "" when none is near enough to be a
// plausible misspelling. Comparison ignores case and treats '-' as '_'. Near
// enough: an edit distance of at most 1 + length / 6 (one slip in a short
// name, several in a long key), or `name` being a part of the candidate, at
// least 5 characters long (`prefetch_bucket_size` for
// `stage3_prefetch_bucket_size`), which counts as distance 1. Ties go to the
// earlier candidate. A candidate equal to `name` is returned as is.
std::string NearestName(absl::string_view name,
                        absl::Span<const std::string> candidates);

}  // namespace zero3

#endif  // ZERO3_CORE_UTIL_SUGGEST_H_
