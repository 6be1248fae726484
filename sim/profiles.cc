// Copyright 2026 The zero3 Authors.

#include "sim/profiles.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/util/status_macros.h"
#include "core/util/suggest.h"
#include "core/util/text_proto.h"
#include "sim/cost_model.h"
#include "sim/internal/embedded_profiles.h"

namespace zero3 {
namespace sim {
namespace {

// The shipped name a user most likely meant: one that starts with `name`
// ("h200" for "h200_sxm"), else the one at the smallest edit distance.
std::string NearestName(absl::string_view name,
                        const std::vector<std::string>& names) {
  std::string best;
  int best_distance = 0;
  for (const std::string& candidate : names) {
    if (absl::StartsWithIgnoreCase(candidate, name)) return candidate;
    const int distance = zero3::EditDistance(name, candidate);
    if (best.empty() || distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

const internal::EmbeddedProfile* FindShipped(absl::string_view name) {
  for (const internal::EmbeddedProfile& profile :
       internal::EmbeddedProfiles()) {
    if (profile.name == name) return &profile;
  }
  return nullptr;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::error_code error_code;
  if (std::filesystem::is_directory(path, error_code)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "hardware profile '", path, "' is a directory, not a .textproto file"));
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    const int error = errno;
    const std::string reason = std::strerror(error);
    const std::string message =
        absl::StrCat("cannot read hardware profile '", path, "': ", reason);
    return error == ENOENT ? absl::NotFoundError(message)
                           : absl::InvalidArgumentError(message);
  }
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace

std::vector<std::string> ProfileNames() {
  std::vector<std::string> names;
  for (const internal::EmbeddedProfile& profile :
       internal::EmbeddedProfiles()) {
    names.emplace_back(profile.name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

absl::StatusOr<HardwareProfile> ParseProfile(absl::string_view text,
                                             absl::string_view source) {
  HardwareProfile profile;
  std::vector<TextProtoError> errors;
  if (!ReadTextProto(text, &profile, &errors)) {
    std::vector<std::string> lines;
    for (const TextProtoError& e : errors) lines.push_back(e.InFile(source));
    std::string message = absl::StrJoin(lines, "\n");
    if (message.empty()) {
      message = absl::StrCat(source, ": not a valid hardware profile");
    }
    return absl::InvalidArgumentError(message);
  }
  // The cost model's check names the first missing or invalid figure.
  ZR_RETURN_IF_ERROR(Annotate(CostModel::Create(profile).status(), source));
  return profile;
}

absl::StatusOr<HardwareProfile> LoadProfile(absl::string_view name_or_path) {
  if (const internal::EmbeddedProfile* shipped = FindShipped(name_or_path)) {
    return ParseProfile(shipped->text, shipped->path);
  }
  const std::vector<std::string> names = ProfileNames();
  const std::string shipped_list = absl::StrJoin(names, ", ");
  if (absl::StrContains(name_or_path, '/') ||
      absl::StrContains(name_or_path, '.')) {
    const std::string path(name_or_path);
    absl::StatusOr<std::string> text = ReadFile(path);
    if (!text.ok()) {
      return absl::Status(
          text.status().code(),
          absl::StrCat(text.status().message(),
                       " (shipped profiles: ", shipped_list, ")"));
    }
    return ParseProfile(*text, path);
  }
  return absl::NotFoundError(absl::StrCat(
      "unknown hardware profile '", name_or_path, "'; did you mean '",
      NearestName(name_or_path, names), "'? Shipped profiles: ", shipped_list,
      "; or give the path of a .textproto file"));
}

}  // namespace sim
}  // namespace zero3
