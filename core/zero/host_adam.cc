// Copyright 2026 The zero3 Authors.

#include "core/zero/host_adam.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "core/kernels/reference.h"

namespace zero3 {
namespace zero {
namespace {

// Elements per scaled-gradient chunk: small enough to stay in L2.
constexpr int64_t kChunk = 16384;

void StepRange(const kernels::AdamWArgs& args, float grad_scale, float* p,
               const float* g, float* m, float* v, int64_t begin, int64_t end) {
  float scaled[kChunk];
  for (int64_t i = begin; i < end; i += kChunk) {
    const int64_t n = std::min(kChunk, end - i);
    const float* grads = g + i;
    if (grad_scale != 1.0f) {
      for (int64_t j = 0; j < n; ++j) scaled[j] = g[i + j] * grad_scale;
      grads = scaled;
    }
    kernels::AdamWArgs a = args;
    a.n = n;
    kernels::AdamWStep(a, p + i, grads, m + i, v + i);
  }
}

}  // namespace

int OptimizerThreads(int requested) {
  if (requested > 0) return requested;
  return std::max(1u, std::thread::hardware_concurrency());
}

void HostAdamWStep(const kernels::AdamWArgs& args, float grad_scale,
                   float* params, const float* grads, float* exp_avg,
                   float* exp_avg_sq, int threads) {
  const int64_t n = args.n;
  // Below ~1M elements a thread costs more than it saves.
  const int t = static_cast<int>(
      std::max<int64_t>(1, std::min<int64_t>(threads, n / (1 << 20))));
  if (t == 1) {
    StepRange(args, grad_scale, params, grads, exp_avg, exp_avg_sq, 0, n);
    return;
  }
  std::vector<std::thread> workers;
  const int64_t per = (n + t - 1) / t;
  for (int i = 0; i < t; ++i) {
    const int64_t begin = i * per;
    const int64_t end = std::min(n, begin + per);
    if (begin >= end) break;
    workers.emplace_back(StepRange, args, grad_scale, params, grads, exp_avg,
                         exp_avg_sq, begin, end);
  }
  for (std::thread& w : workers) w.join();
}

}  // namespace zero
}  // namespace zero3
