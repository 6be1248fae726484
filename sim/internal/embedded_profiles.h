// Copyright 2026 The zero3 Authors.
//
// embedded_profiles.h: the hardware profiles of sim/profiles/, compiled into
// the binary.
//
// The definition is generated at build time (the embedded_profiles_cc
// genrule in sim/BUILD.bazel) from every sim/profiles/*.textproto, each
// file's text held verbatim in a raw string literal. So a binary finds its
// shipped profiles wherever it runs, with no data files beside it. Use
// sim/profiles.h, which parses and validates them; this header is its
// implementation detail. The data is immutable; thread-safe.

#ifndef ZERO3_SIM_INTERNAL_EMBEDDED_PROFILES_H_
#define ZERO3_SIM_INTERNAL_EMBEDDED_PROFILES_H_

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace zero3 {
namespace sim {
namespace internal {

struct EmbeddedProfile {
  absl::string_view name;  // the file name without .textproto
  absl::string_view path;  // the workspace-relative source path
  absl::string_view text;  // the file's contents
};

// Every shipped profile, sorted by name.
absl::Span<const EmbeddedProfile> EmbeddedProfiles();

}  // namespace internal
}  // namespace sim
}  // namespace zero3

#endif  // ZERO3_SIM_INTERNAL_EMBEDDED_PROFILES_H_
