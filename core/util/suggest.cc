// Copyright 2026 The zero3 Authors.

#include "core/util/suggest.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"

namespace zero3 {
namespace {

std::string Normalize(absl::string_view s) {
  std::string out = absl::AsciiStrToLower(s);
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

}  // namespace

int EditDistance(absl::string_view a, absl::string_view b) {
  const size_t n = a.size();
  const size_t m = b.size();
  // Three rows of the dynamic-programming table: i-2, i-1, i.
  std::vector<int> prev2(m + 1), prev(m + 1), cur(m + 1);
  for (size_t j = 0; j <= m; ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= n; ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= m; ++j) {
      const int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
      }
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[m];
}

std::string NearestName(absl::string_view name,
                        absl::Span<const std::string> candidates) {
  const std::string wanted = Normalize(name);
  if (wanted.empty()) return "";
  const int limit = 1 + static_cast<int>(wanted.size()) / 6;
  int best_distance = limit + 1;
  const std::string* best = nullptr;
  for (const std::string& candidate : candidates) {
    const std::string c = Normalize(candidate);
    int d = EditDistance(wanted, c);
    // A fragment of a longer key counts as near: users drop prefixes such as
    // "stage3_" or suffixes such as "_size".
    if (d > limit && wanted.size() >= 5 &&
        c.find(wanted) != std::string::npos) {
      d = limit;
    }
    if (d < best_distance) {
      best_distance = d;
      best = &candidate;
    }
  }
  return best == nullptr ? "" : *best;
}

}  // namespace zero3
