// Copyright 2026 The zero3 Authors.
//
// output_flags.h: zero3 train's flags for what a run writes besides its
// console (--metrics, --trace) and for stopping before it trains
// (--dry-run); checkpoints have their own (checkpoint_flags.h).
//
//   OutputFlags outputs;
//   outputs.Define(flags);                          // in DefineFlags
//   ZR_RETURN_IF_ERROR(outputs.Check(resolve));     // with the other flags
//
// Not thread-safe: the flag parser writes the members.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_OUTPUT_FLAGS_H_
#define ZERO3_TOOLS_CLI_INTERNAL_OUTPUT_FLAGS_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "tools/cli/flags.h"

namespace zero3 {
namespace cli {
namespace internal {

class OutputFlags {
 public:
  // Adds --metrics and --trace; DefineDryRun adds --dry-run (train puts the
  // checkpoint flags between them, in one section).
  void Define(FlagSet& flags);
  void DefineDryRun(FlagSet& flags);

  // Each output file given can be written: its directory exists and takes
  // a new file (output_path.h), with paths as `resolve` makes them; the
  // error names the flag and the path.
  absl::Status Check(
      const std::function<std::string(absl::string_view)>& resolve) const;

  // The flags as given ("" when not).
  const std::string& metrics() const { return metrics_; }
  const std::string& trace() const { return trace_; }
  bool tracing() const { return !trace_.empty(); }
  bool dry_run() const { return dry_run_; }

 private:
  std::string metrics_;
  std::string trace_;
  bool dry_run_ = false;
};

}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_OUTPUT_FLAGS_H_
