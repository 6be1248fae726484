// Copyright 2026 The zero3 Authors.
//
// The default kernel launcher. Until the CUDA kernels of backends/cuda/kernels
// are in the build, every launch fails with Unimplemented naming the op;
// everything else of the backend (memory, copies, streams, events,
// collectives) works without them. Connecting them replaces
// NoKernelsLauncher with a launcher that owns the kernels' per-device
// context (made here, for `device`) and forwards each call:
//
//   absl::Status Launch(const runtime::KernelCall& call,
//                       cudaStream_t stream) override {
//     return LaunchKernel(call, stream, *context_);
//   }
//
// plus the kernels' library in this target's deps (BUILD.bazel).

#include <memory>

#include "absl/strings/str_cat.h"
#include "backends/cuda/kernel_launcher.h"

namespace zero3 {
namespace cuda {
namespace {

class NoKernelsLauncher final : public KernelLauncher {
 public:
  absl::Status Launch(const runtime::KernelCall& call,
                      cudaStream_t stream) override {
    return absl::UnimplementedError(
        absl::StrCat("kernel '", call.label, "' (", call.OpName(),
                     "): this build has no CUDA kernels"));
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<KernelLauncher>> NewDefaultKernelLauncher(
    int device) {
  return std::unique_ptr<KernelLauncher>(std::make_unique<NoKernelsLauncher>());
}

}  // namespace cuda
}  // namespace zero3
