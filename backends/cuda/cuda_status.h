// Copyright 2026 The zero3 Authors.
//
// cuda_status.h: the one place where CUDA and NCCL error codes become
// absl::Status.
//
// Every CUDA runtime and NCCL call of the backend goes through
// ZR_CUDA_RETURN_IF_ERROR / ZR_NCCL_RETURN_IF_ERROR (or CudaStatus /
// NcclStatus directly), so every failure names the call that failed and the
// library's own error name, number and text:
//
//   cudaMalloc(&ptr, bytes) failed: out of memory (cudaErrorMemoryAllocation,
//   code 2)
//
// Codes: out of memory is ResourceExhausted; no device or driver is
// FailedPrecondition; invalid arguments are InvalidArgument; a failure of
// another rank or of the network (NCCL remote and system errors) is
// Unavailable; everything else is Internal. A CUDA error raised by a
// kernel (an illegal address, a trap) is sticky: the context is unusable
// afterwards and the status says so.
//
// cudaGetLastError() is cleared by CudaStatus for non-sticky errors, so a
// failed call does not resurface as the error of a later, unrelated
// launch. Thread-safe (pure functions).

#ifndef ZERO3_BACKENDS_CUDA_CUDA_STATUS_H_
#define ZERO3_BACKENDS_CUDA_CUDA_STATUS_H_

#include <cuda_runtime_api.h>

#include "absl/base/optimization.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "backends/cuda/cuda_dynload.h"

namespace zero3 {
namespace cuda {

// OK for cudaSuccess; otherwise an error naming `call` (the expression as
// written, e.g. "cudaMalloc(&ptr, bytes)").
absl::Status CudaStatus(cudaError_t error, absl::string_view call);

// OK for ncclSuccess; otherwise an error naming `call`. With `comm`, the
// message adds NCCL's last error text for that communicator, which says
// more than the code (which peer, which transport).
// The same for cuBLAS and cuBLASLt calls.
absl::Status CublasStatus(cublasStatus_t status, absl::string_view call);

absl::Status NcclStatus(ncclResult_t result, absl::string_view call,
                        ncclComm_t comm = nullptr);

}  // namespace cuda
}  // namespace zero3

// Evaluates a CUDA runtime call once; returns its error as a Status.
#define ZR_CUDA_RETURN_IF_ERROR(call)                          \
  do {                                                         \
    const cudaError_t zr_cuda_error_ = (call);                 \
    if (ABSL_PREDICT_FALSE(zr_cuda_error_ != cudaSuccess)) {   \
      return ::zero3::cuda::CudaStatus(zr_cuda_error_, #call); \
    }                                                          \
  } while (false)

// Evaluates an NCCL call once; returns its error as a Status. `comm` may be
// nullptr.
#define ZR_NCCL_RETURN_IF_ERROR(call, comm)                             \
  do {                                                                  \
    const ncclResult_t zr_nccl_result_ = (call);                        \
    if (ABSL_PREDICT_FALSE(zr_nccl_result_ != ncclSuccess)) {           \
      return ::zero3::cuda::NcclStatus(zr_nccl_result_, #call, (comm)); \
    }                                                                   \
  } while (false)

#endif  // ZERO3_BACKENDS_CUDA_CUDA_STATUS_H_
