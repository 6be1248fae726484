// Copyright 2026 The zero3 Authors.

#include "core/zero/host_pieces.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace zero3 {
namespace zero {

std::vector<HostPiece> PlanHostPieces(
    const std::vector<ParamRange>& sub_groups,
    const std::vector<std::vector<DecayRun>>& decay_runs, int64_t host_begin,
    int64_t piece_elements, const std::vector<ParamRange>& buckets) {
  const int64_t size = std::max<int64_t>(1, piece_elements);
  std::vector<HostPiece> pieces;
  for (size_t g = 0; g < sub_groups.size(); ++g) {
    const ParamRange& r = sub_groups[g];
    if (r.offset < host_begin) continue;  // the device share's
    const int64_t parts = (r.elements + size - 1) / size;
    for (int64_t k = 0; k < parts; ++k) {
      HostPiece p;
      p.offset = r.offset + k * size;
      p.elements = std::min(size, r.elements - k * size);
      p.name = parts == 1 ? absl::StrCat("sub-group ", g)
                          : absl::StrCat("sub-group ", g, " part ", k);
      p.runs = ClipRuns(decay_runs[g], p.offset, p.elements);
      // Buckets are reduced from the end of the layout: the piece is on the
      // host once the bucket holding its first element is.
      for (size_t b = 0; b < buckets.size(); ++b) {
        if (buckets[b].offset < p.offset + p.elements) {
          p.ready_bucket = static_cast<int>(b);
        }
        if (buckets[b].offset <= p.offset) break;
      }
      pieces.push_back(std::move(p));
    }
  }
  return pieces;
}

}  // namespace zero
}  // namespace zero3
