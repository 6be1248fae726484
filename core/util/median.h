// Copyright 2026 The zero3 Authors.
//
// median.h: the median of measured samples, as the project reports them.

#ifndef ZERO3_CORE_UTIL_MEDIAN_H_
#define ZERO3_CORE_UTIL_MEDIAN_H_

#include <algorithm>
#include <vector>

#include "core/util/check.h"

namespace zero3 {

// The median of `v` (not empty); of an even count, the upper of the two
// middle values, so that it is always a value that was measured.
inline double UpperMedian(std::vector<double> v) {
  ZR_CHECK(!v.empty()) << "the median of no samples";
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace zero3

#endif  // ZERO3_CORE_UTIL_MEDIAN_H_
