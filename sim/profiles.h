// Copyright 2026 The zero3 Authors.
//
// profiles.h: finding a hardware profile by name or by file.
//
// The profiles shipped in sim/profiles/ (h200_sxm, a100_sxm, ...) are
// compiled into every binary that links this library, so
//
//   zero3 whatif --hardware a100_sxm ...
//
// works from any directory and from a binary copied elsewhere. A user's own
// profile is a text-format HardwareProfile (sim/profile.proto) given by path:
//
//   ZR_ASSIGN_OR_RETURN(HardwareProfile profile,
//                       LoadProfile("my_cluster.textproto"));
//
// Every profile returned is valid for CostModel::Create: loading checks it
// and reports a missing or out-of-range figure with the profile's file name.
// Errors are statuses, never crashes: a parse error names the file, line and
// column (InvalidArgument); an unknown name lists the shipped profiles and
// suggests the nearest (NotFound). Profile files are read on each call;
// nothing is cached. All functions are thread-safe.

#ifndef ZERO3_SIM_PROFILES_H_
#define ZERO3_SIM_PROFILES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sim/profile.pb.h"

namespace zero3 {
namespace sim {

// The names of the shipped profiles, sorted ("a100_sxm", "h200_sxm", ...).
// A profile's name is its file name without ".textproto".
std::vector<std::string> ProfileNames();

// Loads a shipped profile by name, or a profile file by path. An argument
// that is a shipped name is that profile; otherwise, one that contains a '/'
// or a '.' is a path (relative to the working directory); anything else is
// an unknown name. Fails with NotFound for an unknown name or a missing
// file, InvalidArgument for a parse error or an invalid profile.
absl::StatusOr<HardwareProfile> LoadProfile(absl::string_view name_or_path);

// Parses and validates profile text; `source` names it in errors (a file
// path, "<flag>", ...). LoadProfile is this plus finding the text.
absl::StatusOr<HardwareProfile> ParseProfile(absl::string_view text,
                                             absl::string_view source);

}  // namespace sim
}  // namespace zero3

#endif  // ZERO3_SIM_PROFILES_H_
