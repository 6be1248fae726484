// Copyright 2026 The zero3 Authors.
//
// launch.h: runs a runtime::KernelCall on a CUDA stream. This is the one
// entry point through which the CUDA backend executes every op of
// core/runtime/kernel_call.h, forward and backward.
//
//   ZR_ASSIGN_OR_RETURN(std::unique_ptr<KernelContext> ctx,
//                       CreateKernelContext(stream));
//   ZR_RETURN_IF_ERROR(LaunchKernel(call, stream, *ctx));
//
// Semantics are those of the CPU reference (core/kernels/reference.h, as run
// by the simulator): every tensor has its own dtype, arithmetic is fp32
// (double for the long reductions the reference does in double), results are
// rounded to nearest even. Tensor data pointers come from
// TensorRef::slice.data() and must be device memory of the context's device;
// token and target ids are int32 device arrays. Deviations from the
// reference, all within its stated tolerances:
//  - Matmul of bf16/fp16 runs on tensor cores (fp32 accumulation); sums are
//    not in the reference's order. fp32 matmuls use no TF32.
//  - Attention on bf16/fp16 with head_dim 64 or 128 uses the tensor-core
//    kernels, which round P and dS to the input type for their second
//    product (as FlashAttention does); KernelContextOptions::attention or the
//    environment variable ZERO3_CUDA_ATTENTION=simple selects the fp32
//    CUDA-core kernels instead.
//  - Reductions sum in a different (fixed) order. Every kernel is
//    deterministic: no floating-point atomics; the same inputs give the same
//    bits on the same GPU.
//  - Ids out of range (tokens, targets other than ignore_index) abort the
//    reference; here they are counted on the device and skipped (zero rows,
//    no gradient, not counted in the loss); ConsumeDeviceErrors() reports
//    them.
//
// Blocking: LaunchKernel only enqueues work on the stream and returns; the
// results are ready when the stream reaches that point. It blocks the host
// only when the context's scratch memory must grow (the first call of a
// larger shape): it then allocates a larger one with cudaMalloc (at least
// double), which rules out stream capture for that call, and keeps the old
// one until the context goes, so no free waits for the device mid-run (with
// NCCL on other streams such a wait can deadlock); size the scratch up
// front with RequiredScratchBytes() to avoid it. The
// first matmul of each new shape also asks cuBLASLt for an algorithm (host
// work, no device sync).
//
// Errors: invalid calls (sizes, dtypes, missing data) return InvalidArgument
// naming the call label, the op and the tensor, before anything is enqueued;
// unsupported combinations return Unimplemented; CUDA and cuBLAS failures
// return the status of cuda_status.h.
//
// Streams and thread-safety: one KernelContext serves a device and any
// number of its streams. Each stream gets its own scratch memory and cuBLAS
// workspace (allocated on its first call, blocking that call once), because
// kernels reuse them from call to call, which is safe only when the stream
// orders those calls; work on different streams may overlap. LaunchKernel
// holds the context's mutex while enqueuing, so threads may share a context.

#ifndef ZERO3_BACKENDS_CUDA_KERNELS_LAUNCH_H_
#define ZERO3_BACKENDS_CUDA_KERNELS_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "backends/cuda/cuda_dynload.h"
#include "core/runtime/kernel_call.h"

namespace zero3 {
namespace cuda {

namespace internal {
class MatmulRunner;
}  // namespace internal

enum class AttentionKernels {
  kAuto,    // tensor cores where supported, else the CUDA-core kernels
  kSimple,  // always the CUDA-core (fp32) kernels
};

struct KernelContextOptions {
  // Scratch device memory per stream for the kernels' temporaries (reduction
  // partials, sort buffers, attention row statistics). Grows on demand when
  // grow_scratch; otherwise a call that needs more fails with
  // ResourceExhausted. RequiredScratchBytes() sizes it in advance.
  int64_t scratch_bytes = int64_t{16} << 20;
  bool grow_scratch = true;
  // cuBLAS workspace per stream (32 MiB is NVIDIA's recommendation for
  // Hopper).
  int64_t cublas_workspace_bytes = int64_t{32} << 20;
  // ZERO3_CUDA_ATTENTION=simple in the environment forces kSimple.
  AttentionKernels attention = AttentionKernels::kAuto;
};

// Per-device state of the kernels: cuBLAS handles, per-stream scratch memory
// and cuBLAS workspaces, the device counter of invalid ids, the device's
// properties. Owns its device memory and handles; destroy it only after the
// streams have finished the work it launched (the destructor frees memory
// with cudaFree, which waits for the device).
class KernelContext {
 public:
  ~KernelContext();
  KernelContext(const KernelContext&) = delete;
  KernelContext& operator=(const KernelContext&) = delete;

  // The stream the context was created for (its resources exist from the
  // start); any other stream of the device works too.
  cudaStream_t stream() const { return stream_; }
  int device() const { return device_; }
  int sm_count() const { return sm_count_; }
  cublasLtHandle_t cublaslt_handle() const;
  cublasHandle_t cublas_handle() const;
  AttentionKernels attention() const { return attention_; }
  // Scratch bytes held for `stream` (0 before its first call).
  int64_t scratch_bytes(cudaStream_t stream) const;

  // Blocks until the device is idle, then returns InvalidArgument with the
  // number of out-of-range token and target ids the kernels met since the
  // last call (and resets the count), or OK if there were none.
  absl::Status ConsumeDeviceErrors() const;

 private:
  friend absl::StatusOr<std::unique_ptr<KernelContext>> CreateKernelContext(
      cudaStream_t stream, const KernelContextOptions& options);
  friend absl::Status LaunchKernel(const runtime::KernelCall& call,
                                   cudaStream_t stream,
                                   const KernelContext& ctx);

  struct StreamResources {
    void* scratch = nullptr;
    int64_t scratch_bytes = 0;
    void* cublas_workspace = nullptr;
    // Scratch outgrown during a run, freed with the context: freeing it
    // then would wait for the device, and with NCCL on other streams of a
    // multi-GPU process that wait can deadlock.
    std::vector<void*> retired;
  };

  KernelContext() = default;

  // The resources of `stream`, created on first use, with at least
  // `scratch_bytes` of scratch.
  absl::StatusOr<StreamResources*> ResourcesFor(cudaStream_t stream,
                                                int64_t scratch_bytes) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  cudaStream_t stream_ = nullptr;
  int device_ = 0;
  int sm_count_ = 1;
  bool grow_scratch_ = true;
  int64_t initial_scratch_bytes_ = 0;
  int64_t cublas_workspace_bytes_ = 0;
  AttentionKernels attention_ = AttentionKernels::kAuto;
  int* error_count_ = nullptr;  // device
  std::unique_ptr<internal::MatmulRunner> matmul_;

  // Launches create per-stream resources and fill the cuBLAS plan cache
  // behind a const interface; the mutex makes that safe.
  mutable absl::Mutex mu_;
  mutable absl::flat_hash_map<cudaStream_t, StreamResources> streams_
      ABSL_GUARDED_BY(mu_);
};

// Creates a context on the current device (cudaGetDevice), with the scratch
// and workspace of `stream` (a stream of that device) allocated up front,
// and the cuBLAS handles: blocking, call it outside the training step.
absl::StatusOr<std::unique_ptr<KernelContext>> CreateKernelContext(
    cudaStream_t stream, const KernelContextOptions& options = {});

// Validates `call` and enqueues its kernels on `stream`, a stream of the
// context's device. See the file comment for semantics, blocking and errors.
absl::Status LaunchKernel(const runtime::KernelCall& call, cudaStream_t stream,
                          const KernelContext& ctx);

// The scratch bytes LaunchKernel needs for `call` (0 for most ops), so a
// backend can size KernelContextOptions::scratch_bytes for its largest call.
int64_t RequiredScratchBytes(const runtime::KernelCall& call);

}  // namespace cuda
}  // namespace zero3

#endif  // ZERO3_BACKENDS_CUDA_KERNELS_LAUNCH_H_
