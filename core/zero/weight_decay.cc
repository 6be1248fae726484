// Copyright 2026 The zero3 Authors.

#include "core/zero/weight_decay.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "core/util/check.h"

namespace zero3 {
namespace zero {

bool TrainerDecays(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  for (absl::string_view word : {"bias", "layernorm", "rmsnorm"}) {
    if (absl::StrContains(lower, word)) return false;
  }
  for (absl::string_view part : absl::StrSplit(lower, '.')) {
    if (part == "norm" || absl::EndsWith(part, "_norm")) return false;
  }
  return true;
}

std::vector<float> ParamWeightDecays(const std::vector<std::string>& names,
                                     float weight_decay,
                                     bool exclude_bias_and_norm) {
  std::vector<float> decays;
  decays.reserve(names.size());
  for (const std::string& name : names) {
    decays.push_back(
        exclude_bias_and_norm && !TrainerDecays(name) ? 0.0f : weight_decay);
  }
  return decays;
}

std::vector<DecayRun> DecayRuns(const ShardLayout& layout,
                                const std::vector<float>& decays,
                                const ParamRange& range) {
  ZR_CHECK(static_cast<int>(decays.size()) == layout.num_params());
  std::vector<DecayRun> runs;
  for (int p = range.first; p <= range.last; ++p) {
    const ParamShard& s = layout.param(p);
    if (s.partition == 0) continue;
    if (!runs.empty() && runs.back().weight_decay == decays[p] &&
        runs.back().offset + runs.back().elements == s.offset) {
      runs.back().elements += s.partition;
    } else {
      runs.push_back({s.offset, s.partition, decays[p]});
    }
  }
  return runs;
}

std::vector<DecayRun> ClipRuns(const std::vector<DecayRun>& runs,
                               int64_t offset, int64_t elements) {
  std::vector<DecayRun> out;
  const int64_t end = offset + elements;
  for (const DecayRun& r : runs) {
    const int64_t begin = std::max(r.offset, offset);
    const int64_t stop = std::min(r.offset + r.elements, end);
    if (begin < stop) out.push_back({begin, stop - begin, r.weight_decay});
  }
  return out;
}

}  // namespace zero
}  // namespace zero3
