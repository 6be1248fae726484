// Copyright 2026 The zero3 Authors.

#include "core/config/diagnostics.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace zero3 {
namespace config {
namespace {

// A key as a message shows it: control characters (a JSON key may hold a
// newline) escaped, so each message stays one line.
std::string Shown(absl::string_view path) {
  std::string out;
  for (const char c : path) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      absl::StrAppend(
          &out, "\\x",
          absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

void Diagnostics::Error(const std::string& path, absl::string_view message) {
  // A key can be any length; a message shows enough of it to find it.
  constexpr size_t kLongestShown = 200;
  std::string line =
      path.size() <= kLongestShown
          ? Shown(path)
          : absl::StrCat(Shown(path.substr(0, kLongestShown - 3)), "... (",
                         path.size(), " characters)");
  const auto it = positions_.find(path);
  if (it != positions_.end() && it->second.known()) {
    absl::StrAppend(&line, " (", FormatPosition(it->second), ")");
  }
  if (!line.empty()) line.append(": ");
  line.append(message.data(), message.size());
  errors_.push_back(std::move(line));
}

void Diagnostics::ValueError(const std::string& path,
                             absl::string_view message) {
  Error(path, message);
  poisoned_.insert(path);
}

void Diagnostics::Notice(const std::string& path, absl::string_view message) {
  notices_.push_back(path.empty() ? std::string(message)
                                  : absl::StrCat(Shown(path), ": ", message));
}

void Diagnostics::Warning(const std::string& path, absl::string_view message) {
  warnings_.push_back(absl::StrCat(Shown(path), ": ", message));
}

void Diagnostics::SetPosition(const std::string& path,
                              SourcePosition position) {
  if (position.known()) positions_[path] = position;
}

bool Diagnostics::IsPoisoned(absl::string_view path) const {
  std::string prefix(path);
  while (true) {
    if (poisoned_.contains(prefix)) return true;
    const size_t dot = prefix.rfind('.');
    if (dot == std::string::npos) return false;
    prefix.resize(dot);
  }
}

absl::Status Diagnostics::ToStatus() const {
  if (errors_.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(errors_, "\n"));
}

}  // namespace config
}  // namespace zero3
