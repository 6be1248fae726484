// Copyright 2026 The zero3 Authors.
//
// The backend conformance suite (testing/backend_conformance.h) on the CUDA
// backend, one GPU per rank. Every test skips itself where no GPU is
// visible.
//
// Ranks: one, unless ZERO3_CONFORMANCE_RANKS asks for more; the collective
// cases on 2 and 3 ranks then run as threads of this process, rank r on
// GPU r (so 3 ranks need 3 GPUs):
//
//   ZERO3_CONFORMANCE_RANKS=2 bazel test //backends/cuda:cuda_conformance_test
//       --test_env=ZERO3_CONFORMANCE_RANKS
//
// Built where the suite is in the tree (ZERO3_HAVE_CONFORMANCE_SUITE, set by
// the BUILD file); elsewhere this test says so and skips.

#include <cstdlib>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_launcher.h"
#include "backends/cuda/cuda_rank.h"
#include "gtest/gtest.h"

#ifdef ZERO3_HAVE_CONFORMANCE_SUITE
#include "testing/backend_conformance.h"
#endif

namespace zero3 {
namespace cuda {
namespace {

#ifdef ZERO3_HAVE_CONFORMANCE_SUITE

// Read at registration, which must not touch the GPU (the CUDA runtime is
// not to be initialized from a static initializer).
int RanksFromEnvironment() {
  const char* value = std::getenv("ZERO3_CONFORMANCE_RANKS");
  int ranks = 1;
  if (value == nullptr || !absl::SimpleAtoi(value, &ranks) || ranks < 1) {
    return 1;
  }
  return ranks;
}

// Registered from a static initializer, as TEST() registers its tests;
// gtest_main runs them.
bool RegisterCudaConformanceTests() {
  testing::ConformanceBackend backend;
  backend.name = "Cuda";
  backend.max_ranks = RanksFromEnvironment();
  backend.launcher = [](int ranks) {
    CudaLauncherOptions options;
    options.ranks_in_process = ranks;
    return CudaLauncher::Create(options);
  };
  backend.skip_reason = []() -> std::string {
    if (VisibleCudaDevices() == 0) return "no GPU visible";
    return "";
  };
  testing::RegisterConformanceTests(backend);
  return true;
}

[[maybe_unused]] const bool kRegistered = RegisterCudaConformanceTests();

#else

TEST(CudaConformanceTest, SuiteNotInThisBuild) {
  GTEST_SKIP() << "testing/backend_conformance.h is not in this tree; set "
                  "HAVE_CONFORMANCE_SUITE = True in backends/cuda/BUILD.bazel "
                  "once it is";
}

#endif

}  // namespace
}  // namespace cuda
}  // namespace zero3
