// Copyright 2026 The zero3 Authors.

#include "core/zero/shard_layout.h"

#include <algorithm>

#include "core/util/check.h"

namespace zero3 {
namespace zero {

ShardLayout::ShardLayout(const std::vector<int64_t>& numels,
                         int data_parallel_size, int rank)
    : dp_size_(data_parallel_size), rank_(rank) {
  const int w = data_parallel_size;
  ZR_CHECK_GE(w, 1);
  ZR_CHECK(rank >= 0 && rank < w) << "rank " << rank;
  for (int64_t n : numels) {
    ParamShard s;
    s.numel = n;
    s.padded = (n + w - 1) / w * w;
    s.partition = s.padded / w;
    s.offset = total_;
    total_ += s.partition;
    params_.push_back(s);
  }
}

int64_t ShardLayout::ValidElements(int p, int r) const {
  const ParamShard& s = params_[p];
  return std::max<int64_t>(0, std::min(s.partition, s.numel - r * s.partition));
}

ParamRange ShardLayout::Range(int first, int last) const {
  ZR_CHECK(first >= 0 && first <= last && last < num_params())
      << "range [" << first << ", " << last << "]";
  ParamRange r;
  r.first = first;
  r.last = last;
  r.offset = params_[first].offset;
  r.elements = params_[last].offset + params_[last].partition - r.offset;
  return r;
}

std::vector<ParamRange> ShardLayout::SubGroups(int64_t sub_group_size) const {
  std::vector<ParamRange> groups;
  int first = 0;
  int64_t sum = 0;
  for (int p = 0; p < num_params(); ++p) {
    sum += params_[p].partition;
    if (sum >= sub_group_size || p == num_params() - 1) {
      groups.push_back(Range(first, p));
      first = p + 1;
      sum = 0;
    }
  }
  return groups;
}

std::vector<ParamRange> ShardLayout::Buckets(int64_t bucket_size) const {
  std::vector<ParamRange> buckets;
  int last = num_params() - 1;  // the bucket being filled is [p, last]
  int64_t elements = 0;
  for (int p = num_params() - 1; p >= 0; --p) {
    const int64_t n = params_[p].padded;
    if (elements > 0 && elements + n > bucket_size) {
      buckets.push_back(Range(p + 1, last));
      last = p;
      elements = 0;
    }
    elements += n;
  }
  if (num_params() > 0) buckets.push_back(Range(0, last));
  return buckets;
}

}  // namespace zero
}  // namespace zero3
