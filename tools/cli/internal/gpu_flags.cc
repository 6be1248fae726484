// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/gpu_flags.h"

namespace zero3 {
namespace cli {
namespace internal {

void GpuFlags::Define(FlagSet& flags) {
  flags.AddBool("profile-ops", &profile_ops_,
                "cuda: time every device operation of steps 2..N with "
                "events and print device time per kind of operation (with "
                "--predict, beside the simulator's); with --trace, write "
                "them as a Chrome trace");
  flags.AddBool("predict", &predict_,
                "cuda: also simulate the same configuration on --hardware "
                "and print predicted beside measured FWD/BWD/STEP");
  flags.AddInt("predict-host-cores", &predict_host_cores_, "N",
               "with --predict: host cores per rank to predict for",
               IntRange{0, 4096});
  flags.SetDefaultText("predict-host-cores",
                       "the CPUs this process may run on");
}

absl::Status GpuFlags::Check(bool gpu, bool tracing) const {
  if (!gpu && predict_) {
    return absl::InvalidArgumentError(
        "--predict compares a GPU run with the simulator: it needs --backend "
        "cuda");
  }
  if (!gpu && profile_ops_) {
    return absl::InvalidArgumentError(
        "--profile-ops times operations on GPUs: it needs --backend cuda (on "
        "the simulator, --trace shows every operation)");
  }
  if (gpu && tracing && !profile_ops_) {
    return absl::InvalidArgumentError(
        "--trace with --backend cuda writes the timed operations: add "
        "--profile-ops");
  }
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace cli
}  // namespace zero3
