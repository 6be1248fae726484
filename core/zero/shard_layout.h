// Copyright 2026 The zero3 Authors.
//
// shard_layout.h: how parameters are split across the data-parallel ranks.
//
// As in DeepSpeed ZeRO-3, each parameter is flattened, padded to a multiple
// of the data-parallel size W and split into W equal partitions; rank r owns
// elements [r·P, (r+1)·P) of the padded parameter, P = ceil(numel / W). The
// padding sits at the end, so the last ranks may own fewer real elements, or
// none. Each rank stores its partitions of all parameters back to back, in
// parameter-id order, in one flat buffer: that layout is shared by the
// working (low-precision) shard, the fp32 master, the optimizer moments and
// the gradient partitions, so a range of parameters is a range of the flat
// buffer everywhere.
//
// Gradient buckets and optimizer sub-groups are ranges of parameter ids, so
// they too are ranges of the flat buffer. Immutable; thread-safe.

#ifndef ZERO3_CORE_ZERO_SHARD_LAYOUT_H_
#define ZERO3_CORE_ZERO_SHARD_LAYOUT_H_

#include <cstdint>
#include <vector>

namespace zero3 {
namespace zero {

struct ParamShard {
  int64_t numel = 0;      // real elements of the parameter
  int64_t padded = 0;     // numel rounded up to a multiple of W
  int64_t partition = 0;  // P = padded / W, elements per rank
  int64_t offset = 0;     // start of this parameter's partition in the flat
                          // shard buffer, in elements
};

// A contiguous range of parameter ids [first, last].
struct ParamRange {
  int first = 0;
  int last = -1;
  int64_t offset = 0;    // flat-buffer offset of `first`'s partition
  int64_t elements = 0;  // sum of the partitions in the range
};

class ShardLayout {
 public:
  // `rank` of `data_parallel_size` data-parallel ranks.
  ShardLayout(const std::vector<int64_t>& numels, int data_parallel_size,
              int rank);

  // W: the ranks the shards are spread over (the world size divided by the
  // tensor-parallel degree), and this rank's index among them.
  int data_parallel_size() const { return dp_size_; }
  int rank() const { return rank_; }
  int num_params() const { return static_cast<int>(params_.size()); }
  const ParamShard& param(int p) const { return params_[p]; }
  // Elements in each rank's flat shard buffer.
  int64_t total() const { return total_; }

  // Real (non-padding) elements rank r owns of parameter p: the first
  // ValidElements of its partition; the rest is padding.
  int64_t ValidElements(int p, int r) const;
  int64_t ValidElements(int p) const { return ValidElements(p, rank_); }

  ParamRange Range(int first, int last) const;

  // Optimizer sub-groups: consecutive parameters whose partitions add up to
  // sub_group_size elements, closed at the parameter that reaches it (so a
  // group can overshoot by one parameter), as DeepSpeed groups them.
  std::vector<ParamRange> SubGroups(int64_t sub_group_size) const;

  // Gradient buckets in the order gradients become ready (descending ids):
  // a bucket closes before the parameter that would take it past
  // bucket_size elements (padded), and a parameter larger than bucket_size
  // gets a bucket of its own. Each bucket is an id range; the bucket buffer
  // holds it rank-major: W rows of `elements` each.
  std::vector<ParamRange> Buckets(int64_t bucket_size) const;

 private:
  int dp_size_, rank_;
  std::vector<ParamShard> params_;
  int64_t total_ = 0;
};

}  // namespace zero
}  // namespace zero3

#endif  // ZERO3_CORE_ZERO_SHARD_LAYOUT_H_
