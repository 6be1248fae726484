// Copyright 2026 The zero3 Authors.
//
// kernel_launcher.h: how the CUDA backend runs a KernelCall.
//
// CudaStream::Launch checks the call (device buffers only), then hands it to
// the device's KernelLauncher with the stream's cudaStream_t. The launcher
// owns whatever the kernels need per device (a cuBLAS handle, workspaces,
// the device's properties); it is created once per CudaDevice, after the
// device is current, and destroyed before the device.
//
// In a KernelCall on this backend, every BufferSlice's data() is a device
// address (Buffer::data() of a device buffer is its device pointer); token
// and target ids are int32 device arrays.
//
// NewDefaultKernelLauncher (kernel_launcher_default.cc) is the one the
// backend uses unless told otherwise; it connects the backend to the CUDA
// kernels of backends/cuda/kernels. Thread-compatible: the launcher is used
// by the host thread that drives its device.

#ifndef ZERO3_BACKENDS_CUDA_KERNEL_LAUNCHER_H_
#define ZERO3_BACKENDS_CUDA_KERNEL_LAUNCHER_H_

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/runtime/kernel_call.h"

namespace zero3 {
namespace cuda {

class KernelLauncher {
 public:
  virtual ~KernelLauncher() = default;

  // Enqueues `call` on `stream` and returns without waiting for it. Errors
  // are those of the launch itself (an unsupported op or shape, a failed
  // launch); errors inside the kernel surface at the next synchronize.
  virtual absl::Status Launch(const runtime::KernelCall& call,
                              cudaStream_t stream) = 0;
};

// Makes the launcher for CUDA device `device`, which is current on the
// calling thread.
using KernelLauncherFactory =
    std::function<absl::StatusOr<std::unique_ptr<KernelLauncher>>(int device)>;

// The backend's launcher: the kernels of backends/cuda/kernels.
absl::StatusOr<std::unique_ptr<KernelLauncher>> NewDefaultKernelLauncher(
    int device);

}  // namespace cuda
}  // namespace zero3

#endif  // ZERO3_BACKENDS_CUDA_KERNEL_LAUNCHER_H_
