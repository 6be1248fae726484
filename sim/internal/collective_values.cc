// Copyright 2026 The zero3 Authors.

#include "sim/internal/collective_values.h"

#include <algorithm>
#include <utility>

#include "core/kernels/reference.h"

namespace zero3 {
namespace sim {
namespace internal {
namespace {

using kernels::DType;

std::vector<float> Load(const CollectiveOperands& rank, int64_t count) {
  std::vector<float> v(count);
  kernels::CastArgs c;
  c.n = count;
  c.src = rank.send_dtype;
  c.dst = DType::kF32;
  kernels::Cast(c, rank.send, v.data());
  return v;
}

void Store(const CollectiveOperands& rank, const float* src, int64_t count) {
  kernels::CastArgs c;
  c.n = count;
  c.src = DType::kF32;
  c.dst = rank.recv_dtype;
  kernels::Cast(c, src, rank.recv);
}

// Every rank's input back to back, in position order.
std::vector<float> Gather(const std::vector<std::vector<float>>& inputs,
                          int64_t count) {
  std::vector<float> out(count * inputs.size());
  for (size_t r = 0; r < inputs.size(); ++r) {
    std::copy(inputs[r].begin(), inputs[r].end(), out.begin() + r * count);
  }
  return out;
}

// The elementwise sum, added in position order from zero.
std::vector<float> Sum(const std::vector<std::vector<float>>& inputs,
                       int64_t count) {
  std::vector<float> sum(count, 0.0f);
  for (const std::vector<float>& in : inputs) {
    for (int64_t i = 0; i < count; ++i) sum[i] += in[i];
  }
  return sum;
}

// The elementwise reduction, folded in position order from rank 0's input.
std::vector<float> Reduce(const std::vector<std::vector<float>>& inputs,
                          int64_t count, runtime::ReduceOp op) {
  std::vector<float> acc = inputs[0];
  for (size_t r = 1; r < inputs.size(); ++r) {
    for (int64_t i = 0; i < count; ++i) {
      acc[i] = op == runtime::ReduceOp::kSum ? acc[i] + inputs[r][i]
                                             : std::max(acc[i], inputs[r][i]);
    }
  }
  return acc;
}

}  // namespace

void ComputeCollectiveValues(const CollectiveValueArgs& args,
                             const std::vector<CollectiveOperands>& ranks) {
  const int64_t count = args.count;
  const int64_t n = static_cast<int64_t>(ranks.size());
  std::vector<std::vector<float>> inputs;
  inputs.reserve(n);
  for (const CollectiveOperands& r : ranks) inputs.push_back(Load(r, count));
  switch (args.kind) {
    case CollectiveKind::kAllGather: {
      const std::vector<float> out = Gather(inputs, count);
      for (const CollectiveOperands& r : ranks) Store(r, out.data(), n * count);
      break;
    }
    case CollectiveKind::kReduceScatter: {
      const int64_t chunk = count / n;
      const std::vector<float> sum = Sum(inputs, count);
      for (int64_t p = 0; p < n; ++p) {
        Store(ranks[p], sum.data() + p * chunk, chunk);
      }
      break;
    }
    case CollectiveKind::kAllReduce: {
      const std::vector<float> acc = Reduce(inputs, count, args.op);
      for (const CollectiveOperands& r : ranks) Store(r, acc.data(), count);
      break;
    }
    case CollectiveKind::kBroadcast:
      for (int64_t p = 0; p < n; ++p) {
        if (p != args.root) Store(ranks[p], inputs[args.root].data(), count);
      }
      break;
  }
}

}  // namespace internal
}  // namespace sim
}  // namespace zero3
