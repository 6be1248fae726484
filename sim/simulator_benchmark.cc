// Copyright 2026 The zero3 Authors.
//
// Throughput of the simulator in timing mode: operations simulated per
// second of wall time, for a step-like mix of kernels, copies and
// collectives on 8 and 1024 ranks, and the resident memory after many
// operations (which must not grow with the number of operations retired).
//
//   bazel run -c opt //sim:simulator_benchmark

#include <sys/resource.h>

#include <chrono>
#include <cstdio>

#include "core/runtime/runtime.h"
#include "core/util/check.h"
#include "core/util/status_macros.h"
#include "sim/simulator.h"
#include "sim/testing/test_profile.h"

namespace zero3 {
namespace sim {
namespace {

using runtime::Buffer;
using runtime::DType;
using runtime::TensorRef;

runtime::KernelCall Fill(const Buffer& b, int64_t n) {
  runtime::ops::Fill op;
  op.args.n = n;
  op.x = TensorRef::Of(b, DType::kF32, 0, n);
  return runtime::KernelCall(op, "kernel");
}

// Per step: 200 kernels, 2 all-gathers, 1 reduce-scatter, 4 pinned copies,
// event record/wait pairs and one synchronize: the shape of a ZeRO-3 layer
// loop.
absl::Status Workload(runtime::Runtime& rt, int steps) {
  auto compute = rt.device().CreateStream("compute").value();
  auto comm = rt.device().CreateStream("comm").value();
  auto ev = rt.device().CreateEvent().value();
  const int n = rt.world_size();
  Buffer a = rt.device().Allocate(4096, "a").value();
  Buffer g = rt.device().Allocate(4096 * n, "g").value();
  Buffer h =
      rt.AllocateHost(4096, runtime::HostMemoryKind::kPinned, "h").value();
  const auto shard = TensorRef::Of(a, DType::kF32, 0, 1024);
  const auto full = TensorRef::Of(g, DType::kF32, 0, 1024 * n);
  for (int step = 0; step < steps; ++step) {
    for (int layer = 0; layer < 2; ++layer) {
      ZR_RETURN_IF_ERROR(rt.world().AllGather(*comm, shard, full, "ag"));
      ZR_RETURN_IF_ERROR(comm->Record(*ev));
      ZR_RETURN_IF_ERROR(compute->Wait(*ev));
      for (int k = 0; k < 100; ++k)
        ZR_RETURN_IF_ERROR(compute->Launch(Fill(a, 1024)));
      ZR_RETURN_IF_ERROR(compute->Record(*ev));
      ZR_RETURN_IF_ERROR(comm->Wait(*ev));
      ZR_RETURN_IF_ERROR(comm->Copy(h.All(), a.All(), "d2h"));
      ZR_RETURN_IF_ERROR(comm->Copy(a.All(), h.All(), "h2d"));
    }
    ZR_RETURN_IF_ERROR(rt.world().ReduceScatter(*comm, full, shard, "rs"));
    ZR_RETURN_IF_ERROR(rt.device().Synchronize());
  }
  return absl::OkStatus();
}

long MaxRssKib() {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

void Measure(int ranks, int steps, bool detect_races) {
  SimOptions options;
  options.profile = TestProfile();
  options.world_size = ranks;
  options.mode = SimMode::kTiming;
  options.detect_races = detect_races;
  auto world = SimWorld::Create(options).value();
  const auto t0 = std::chrono::steady_clock::now();
  ZR_CHECK_OK(world->Run(
      [steps](runtime::Runtime& rt) { return Workload(rt, steps); }));
  const double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  const int64_t ops = world->total_ops();
  std::printf(
      "ranks %5d  races %-3s  ops %10lld  wall %7.3f s  %8.2f Mops/s  max RSS "
      "%ld MiB\n",
      ranks, detect_races ? "on" : "off", static_cast<long long>(ops), s,
      ops / s / 1e6, MaxRssKib() / 1024);
}

}  // namespace
}  // namespace sim
}  // namespace zero3

int main() {
  using zero3::sim::Measure;
  for (bool races : {false, true}) {
    Measure(8, 200, races);
    Measure(8, 800, races);  // 4x the ops: memory must stay flat
    Measure(1024, 4, races);
  }
  return 0;
}
