// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/correctness_flags.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"
#include "core/zero/sync_points.h"
#include "core/zero/sync_relevance.h"

namespace zero3 {
namespace cli {
namespace internal {

void CorrectnessFlags::Define(FlagSet& flags) {
  flags.AddBool("check-reference", &check_reference_,
                "also train the unsharded reference and compare every step");
  flags.AddRepeated("drop-sync", &drop_sync_, "NAME",
                    "remove one of the engine's synchronizations to see "
                    "what it protects; 'list' lists them");
}

absl::Status CorrectnessFlags::Check(bool data_mode) const {
  if (check_reference_ && !data_mode) {
    return absl::InvalidArgumentError(
        "--check-reference compares values: it needs --mode data");
  }
  return absl::OkStatus();
}

bool CorrectnessFlags::listing_syncs() const {
  return std::find(drop_sync_.begin(), drop_sync_.end(), "list") !=
         drop_sync_.end();
}

void CorrectnessFlags::PrintSyncs(std::ostream& out) {
  for (zero::Sync s : zero::AllSyncs()) {
    out << absl::StrFormat("%-30s %s\n", zero::SyncName(s),
                           zero::SyncDescription(s));
  }
}

absl::Status CorrectnessFlags::DropSyncs(const std::vector<int64_t>& numels,
                                         zero::ZeroOptions* options,
                                         std::ostream& err) const {
  for (const std::string& name : drop_sync_) {
    ZR_ASSIGN_OR_RETURN(zero::Sync s, zero::ParseSync(name));
    options->syncs.Drop(s);
    err << "notice: dropping synchronization " << name << " ("
        << zero::SyncDescription(s) << ")\n";
    const std::string moot = zero::DropHasNoEffect(s, *options, numels);
    if (!moot.empty()) {
      err << "notice: dropping " << name
          << " alone changes nothing here: " << moot << "\n";
    }
  }
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace cli
}  // namespace zero3
