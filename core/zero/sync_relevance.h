// Copyright 2026 The zero3 Authors.
//
// sync_relevance.h: whether dropping one of the engine's synchronizations
// (sync_points.h) can change anything under a configuration. Some are
// redundant under some settings, covered by another synchronization or by
// the order of the host thread; `zero3 train --drop-sync` says so instead
// of reporting "0 races" without a reason, and the drop-sync tests check
// each claim.
//
//   const std::string why = DropHasNoEffect(sync, options, numels);
//   if (!why.empty()) ...  // dropping `sync` alone changes nothing

#ifndef ZERO3_CORE_ZERO_SYNC_RELEVANCE_H_
#define ZERO3_CORE_ZERO_SYNC_RELEVANCE_H_

#include <cstdint>
#include <string>

#include "absl/types/span.h"
#include "core/zero/options.h"
#include "core/zero/sync_points.h"

namespace zero3 {
namespace zero {

// Why dropping `sync` alone changes nothing for a run with `options` whose
// parameters have `param_numels` elements each, and what makes it matter;
// "" when it may matter.
std::string DropHasNoEffect(Sync sync, const ZeroOptions& options,
                            absl::Span<const int64_t> param_numels);

}  // namespace zero
}  // namespace zero3

#endif  // ZERO3_CORE_ZERO_SYNC_RELEVANCE_H_
