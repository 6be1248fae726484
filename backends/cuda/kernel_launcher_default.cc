// Copyright 2026 The zero3 Authors.
//
// The default kernel launcher: the CUDA kernels of backends/cuda/kernels.
// Their context (cuBLAS handles and workspace, scratch memory) serves one
// stream, so the launcher keeps one per stream it has seen, created on the
// stream's first launch (blocking: the engine's first step pays for it).

#include <memory>

#include "absl/container/flat_hash_map.h"
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
      std::unique_ptr<KernelContext>& slot = contexts_[stream];
      if (slot == nullptr) {
        ZR_ASSIGN_OR_RETURN(slot, CreateKernelContext(stream));
      }
      ctx = slot.get();
    }
    return LaunchKernel(call, stream, *ctx);
  }

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<cudaStream_t, std::unique_ptr<KernelContext>> contexts_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<std::unique_ptr<KernelLauncher>> NewDefaultKernelLauncher(
    int device) {
  return std::unique_ptr<KernelLauncher>(std::make_unique<DefaultLauncher>());
}

}  // namespace cuda
}  // namespace zero3
