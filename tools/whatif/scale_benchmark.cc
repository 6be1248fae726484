// Copyright 2026 The zero3 Authors.
//
// How the full simulation scales with the number of ranks: one step of
// Qwen2.5-7B (the whatif defaults, H200 SXM, every rank simulated) on 64,
// 256, 1,024 and 8,192 ranks, with the simulated operations per second of
// wall time and the wall seconds per simulated step; then the race
// detector's cost per operation, on 64 ranks with it on and off. Optional
// arguments replace the list of rank counts.
//
//   bazel run -c opt //tools/whatif:scale_benchmark [-- 64 1024]

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tools/whatif/whatif.h"

namespace zero3 {
namespace whatif {
namespace {

struct Timed {
  double wall_s = 0;
  int64_t ops = 0;
};

// One step of Qwen2.5-7B on `ranks` fully simulated ranks; false on error.
bool TimeStep(int ranks, bool races, Timed* timed) {
  Scenario s;
  s.set_name("scale");
  s.set_hardware("h200_sxm");
  s.set_model("qwen2.5-7b");
  s.set_gpus(ranks);
  s.set_steps(1);
  RunOptions o;
  o.full = true;
  o.detect_races = races;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = RunScenario(s, o);
  timed->wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  if (!r.ok()) {
    std::printf("error: %s\n", std::string(r.status().message()).c_str());
    return false;
  }
  timed->ops = r->variants[0].simulated_ops;
  return true;
}

double PeakRssGiB() {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / (1024.0 * 1024.0);
}

}  // namespace
}  // namespace whatif
}  // namespace zero3

int main(int argc, char** argv) {
  using zero3::whatif::Timed;
  std::vector<int> ranks = {64, 256, 1024, 8192};
  if (argc > 1) {
    ranks.clear();
    for (int i = 1; i < argc; ++i) ranks.push_back(std::atoi(argv[i]));
  }
  std::printf("Qwen2.5-7B, one step, every rank simulated (races off)\n");
  std::printf("%7s %12s %12s %14s %14s\n", "ranks", "ops", "ops/s",
              "s/sim. step", "peak RSS GiB");
  for (int n : ranks) {
    Timed t;
    if (!zero3::whatif::TimeStep(n, false, &t)) return 1;
    std::printf("%7d %12lld %12.0f %14.2f %14.2f\n", n,
                static_cast<long long>(t.ops), t.ops / t.wall_s, t.wall_s,
                zero3::whatif::PeakRssGiB());
    std::fflush(stdout);
  }
  Timed off, on;
  if (!zero3::whatif::TimeStep(64, false, &off) ||
      !zero3::whatif::TimeStep(64, true, &on)) {
    return 1;
  }
  std::printf(
      "race detector, 64 ranks: %.2f s off, %.2f s on: %.2f us per op "
      "(%lld ops)\n",
      off.wall_s, on.wall_s, 1e6 * (on.wall_s - off.wall_s) / on.ops,
      static_cast<long long>(on.ops));
  return 0;
}
