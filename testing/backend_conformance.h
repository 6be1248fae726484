// Copyright 2026 The zero3 Authors.
//
// backend_conformance.h: one test suite that every runtime backend must pass.
//
// The engine is written against core/runtime alone, so each backend (the
// simulator, CUDA) has to honour the same contract: what allocation,
// copies, memsets, streams, events, host tasks, kernels and collectives do,
// and which results become visible to the host when. This suite checks that
// contract through the public interface only; it never names a backend
// type. A backend's test registers it once:
//
//   ConformanceBackend backend;
//   backend.name = "Sim";
//   backend.max_ranks = 8;
//   backend.launcher = [](int ranks) {
//     ...a launcher of a fresh backend of `ranks` ranks, all in this
//     process, that computes values...
//   };
//   RegisterConformanceTests(backend);
//
// before RUN_ALL_TESTS (from main, or from a static initializer as TEST()
// does; sim/simulator_conformance_test.cc shows the latter). Tests are named
// "<name>/<Group>.<Case>", e.g. "Sim/Kernels.Matmul/bf16", so
// --gtest_filter='Sim/*' selects one backend's.
//
// What is checked:
//  - Runtime: device allocation and memory_stats (the bytes requested, live
//    allocations, the peak); zero-filled pinned and pageable host memory
//    and pinned accounting; H2D, D2H, D2D and H2H copies of sub-slices,
//    pinned and pageable; Memset; stream order; event record and wait
//    across streams; Stream, Event and Device synchronize making results
//    host-visible; host tasks (run once, on the calling thread, their error
//    returned); the clock. Errors: ResourceExhausted for an allocation
//    beyond the device's memory, InvalidArgument for a copy between slices
//    of different sizes.
//  - Kernels: every op of core/runtime/kernel_call.h on seeded random fp32
//    and bf16 inputs, against the CPU reference (core/kernels/reference.h)
//    run on the host. Tolerances, by the output tensor's dtype: 1e-5 for
//    fp32 (so TF32 tensor-core math does not pass) and 1e-2 for bf16,
//    relative, both norm-wise and per element (testing/internal/
//    conformance.h has the exact bounds).
//  - Collectives, on 1 rank always and on 2 and 3 ranks where max_ranks
//    allows: all-gather, reduce-scatter (sum), all-reduce (sum, max, in
//    place), broadcast from a non-zero root, on integer-valued fp32 and
//    bf16 data whose results are exact; ordering after events and between
//    collectives.
// Every program the suite runs is race-free by construction (every host
// read of a copy's destination follows a synchronize), so a case fails
// where the launcher's Report counts any problem (a race the simulator's
// race detector found).
//
// Thread-safety: call RegisterConformanceTests from one thread before tests
// run. A launcher may call the rank function on any threads; the suite's
// checks (gtest EXPECTs) are safe from several threads.

#ifndef ZERO3_TESTING_BACKEND_CONFORMANCE_H_
#define ZERO3_TESTING_BACKEND_CONFORMANCE_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/runtime/launcher.h"
#include "core/runtime/runtime.h"

namespace zero3 {
namespace testing {

struct ConformanceBackend {
  // Prefix of the test names; a gtest-friendly identifier ("Sim", "Cuda").
  std::string name;

  // How many ranks `launcher` can run in one process (the CUDA backend: 1).
  // Collectives are tested on 1 rank always, on 2 and 3 ranks where this
  // allows.
  int max_ranks = 1;

  // A launcher of a fresh backend of `ranks` ranks, all run by this process,
  // whose runtimes compute values (Runtime::computes_values()). Each test
  // runs its case on one (Launcher::Run) and fails on an error or on a
  // problem the launcher's Report counts. Called once per test, from the
  // test's thread.
  std::function<absl::StatusOr<std::unique_ptr<runtime::Launcher>>(int ranks)>
      launcher;

  // Optional. Called at the start of each test; a non-empty result skips
  // the test with that reason ("no GPU visible"). Not called at
  // registration, so registering never touches a device.
  std::function<std::string()> skip_reason;
};

// Registers the suite's tests for `backend` with gtest (through
// ::testing::RegisterTest). The backend is copied; `launcher` and
// `skip_reason` must stay callable until the tests have run. Register each
// backend name once.
void RegisterConformanceTests(const ConformanceBackend& backend);

}  // namespace testing
}  // namespace zero3

#endif  // ZERO3_TESTING_BACKEND_CONFORMANCE_H_
