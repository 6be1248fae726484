// Copyright 2026 The zero3 Authors.
//
// correctness_flags.h: zero3 train's flags for checking a run rather than
// training one: --check-reference (the unsharded reference, or on GPUs the
// simulator, beside every step) and --drop-sync (remove one of the engine's
// synchronizations to watch the race detector catch the race; 'list' lists
// them).
//
//   CorrectnessFlags checks;
//   checks.Define(flags);                            // in DefineFlags
//   if (checks.listing_syncs()) { PrintSyncs(out); return; }
//   ZR_RETURN_IF_ERROR(checks.Check(data_mode));     // with the other flags
//   ZR_RETURN_IF_ERROR(checks.DropSyncs(numels, &options, err));
//
// Not thread-safe: the flag parser writes the members.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_CORRECTNESS_FLAGS_H_
#define ZERO3_TOOLS_CLI_INTERNAL_CORRECTNESS_FLAGS_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/zero/options.h"
#include "tools/cli/flags.h"

namespace zero3 {
namespace cli {
namespace internal {

class CorrectnessFlags {
 public:
  // Adds the flags, as one block.
  void Define(FlagSet& flags);

  // --check-reference compares values: InvalidArgument without data mode.
  absl::Status Check(bool data_mode) const;

  bool check_reference() const { return check_reference_; }
  // --drop-sync list: print the synchronizations (PrintSyncs) and stop.
  bool listing_syncs() const;
  static void PrintSyncs(std::ostream& out);

  // Drops each --drop-sync synchronization from `options`, with a notice on
  // `err` for each and for those that change nothing alone here (`numels`:
  // the model's parameter sizes); InvalidArgument naming an unknown one.
  absl::Status DropSyncs(const std::vector<int64_t>& numels,
                         zero::ZeroOptions* options, std::ostream& err) const;

 private:
  bool check_reference_ = false;
  std::vector<std::string> drop_sync_;
};

}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_CORRECTNESS_FLAGS_H_
