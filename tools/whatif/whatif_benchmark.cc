// Copyright 2026 The zero3 Authors.
//
// How long a what-if takes: one step of Qwen2.5-7B (micro-batch 1 x 4096,
// bf16, CPU optimizer offload) on 64 and 1024 simulated H200s, with the
// symmetric shortcut (simulating rank 0) and, for 64 ranks, without it.
//
//   bazel run -c opt //tools/whatif:whatif_benchmark

#include <chrono>
#include <cstdio>

#include "tools/whatif/whatif.h"

namespace zero3 {
namespace whatif {
namespace {

void Time(int gpus, bool full) {
  Scenario s;
  s.set_name("bench");
  s.set_hardware("h200_sxm");
  s.set_model("qwen2.5-7b");
  s.set_gpus(gpus);
  s.set_micro_batch(1);
  s.set_seq(4096);
  s.set_steps(1);
  RunOptions o;
  o.full = full;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = RunScenario(s, o);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  if (!r.ok()) {
    std::printf("error: %s\n", std::string(r.status().message()).c_str());
    return;
  }
  std::printf(
      "Qwen2.5-7B, %4d ranks, %-22s one step simulated in %7.3f s wall "
      "(simulated step %.1f ms)\n",
      gpus, full ? "every rank simulated:" : "symmetric shortcut:", wall,
      r->variants[0].metrics.total_ms);
}

}  // namespace
}  // namespace whatif
}  // namespace zero3

int main() {
  zero3::whatif::Time(64, false);
  zero3::whatif::Time(1024, false);
  zero3::whatif::Time(64, true);
  zero3::whatif::Time(256, true);
  return 0;
}
