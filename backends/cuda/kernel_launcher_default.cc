// Copyright 2026 The zero3 Authors.
//
// The default kernel launcher: the CUDA kernels of backends/cuda/kernels.
// One kernel context serves the device's streams (each stream gets its own
// scratch and cuBLAS workspace inside it); it is created on the first launch,
// which blocks while it allocates: the engine's first step pays for it.

#include <memory>

#include "absl/synchronization/mutex.h"
#include "backends/cuda/kernel_launcher.h"
#include "backends/cuda/kernels/launch.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace cuda {
namespace {

class DefaultLauncher final : public KernelLauncher {
 public:
  absl::Status Launch(const runtime::KernelCall& call,
                      cudaStream_t stream) override {
    KernelContext* ctx = nullptr;
    {
      absl::MutexLock lock(&mu_);
      if (context_ == nullptr) {
        ZR_ASSIGN_OR_RETURN(context_, CreateKernelContext(stream));
      }
      ctx = context_.get();
    }
    return LaunchKernel(call, stream, *ctx);
  }

 private:
  absl::Mutex mu_;
  std::unique_ptr<KernelContext> context_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<std::unique_ptr<KernelLauncher>> NewDefaultKernelLauncher(
    int device) {
  return std::unique_ptr<KernelLauncher>(std::make_unique<DefaultLauncher>());
}

}  // namespace cuda
}  // namespace zero3
