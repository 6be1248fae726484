// Copyright 2026 The zero3 Authors.
//
// diagnostics.h: the errors and notices of one load, in the order found.
//
// Each error names its key path and, where the input gave one, its position
// ("zero_optimization.stage (line 4, column 14): ..."). An error about a
// value that could not be read poisons the path, so later checks of it and
// of anything under it stay silent: one mistake, one error.
//
// Not thread-safe: one per load. Internal to the loader (config_loader.h).

#ifndef ZERO3_CORE_CONFIG_DIAGNOSTICS_H_
#define ZERO3_CORE_CONFIG_DIAGNOSTICS_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/config/json.h"

namespace zero3 {
namespace config {

class Diagnostics {
 public:
  // Records "PATH (POSITION): MESSAGE" (the position if known; no prefix for
  // an empty path).
  void Error(const std::string& path, absl::string_view message);

  // An error about a value that could not be read: later checks of `path`
  // (and anything under it) are skipped.
  void ValueError(const std::string& path, absl::string_view message);

  // Skips later checks of `path` without reporting anything.
  void Poison(const std::string& path) { poisoned_.insert(path); }

  // Records "PATH: MESSAGE" (just MESSAGE for an empty path).
  void Notice(const std::string& path, absl::string_view message);

  // Records "PATH: MESSAGE" as a warning: a substitution the user must not
  // miss among the notices.
  void Warning(const std::string& path, absl::string_view message);

  // Where `path` was given, for its errors; unknown positions are ignored.
  void SetPosition(const std::string& path, SourcePosition position);

  // Whether `path` or a section above it is poisoned.
  bool IsPoisoned(absl::string_view path) const;

  // Records an error at `path` unless `ok` or the path is poisoned.
  void Check(bool ok, const std::string& path, absl::string_view message) {
    if (!ok && !IsPoisoned(path)) Error(path, message);
  }

  bool has_errors() const { return !errors_.empty(); }
  std::vector<std::string>& notices() { return notices_; }
  std::vector<std::string>& warnings() { return warnings_; }

  // OK, or InvalidArgument with every error, one per line.
  absl::Status ToStatus() const;

 private:
  std::vector<std::string> errors_;
  std::vector<std::string> notices_;
  std::vector<std::string> warnings_;
  absl::flat_hash_map<std::string, SourcePosition> positions_;
  absl::flat_hash_set<std::string> poisoned_;
};

}  // namespace config
}  // namespace zero3

#endif  // ZERO3_CORE_CONFIG_DIAGNOSTICS_H_
