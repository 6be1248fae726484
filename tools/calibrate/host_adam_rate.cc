// Copyright 2026 The zero3 Authors.

#include "tools/calibrate/host_adam_rate.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/kernels/op_args.h"
#include "core/zero/host_adam.h"

namespace zero3 {
namespace calibrate {

double HostAdamGbps(int64_t elements, int threads, int reps) {
  const int64_t n = std::max<int64_t>(1, elements);
  std::vector<float> state(4 * n, 0.0f);
  float* f = state.data();
  kernels::AdamWArgs a;
  a.n = n;
  double best = 0;
  for (int r = 0; r <= std::max(1, reps); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    zero::HostAdamWStep(a, f, f + n, f + 2 * n, f + 3 * n, threads);
    ++a.step;
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    if (r > 0 && s > 0) best = std::max(best, 28.0 * n / s / 1e9);
  }
  return best;
}

void SetHostAdamRate(double one_gbps, double all_gbps, int threads,
                     sim::HardwareProfile* profile) {
  sim::HostProfile* h = profile->mutable_host();
  h->set_memory_bandwidth_gbps_per_thread(one_gbps);
  h->set_memory_bandwidth_gbps_per_rank(all_gbps);
  h->set_cores_per_rank(std::max(1, threads));
  h->clear_memory_bandwidth_by_threads();
}

}  // namespace calibrate
}  // namespace zero3
