// Copyright 2026 The zero3 Authors.
//
// cuda_status.h: CUDA runtime and cuBLAS error codes as absl::Status, in one
// place, so every message names the failing call and the code the same way:
//
//   ZR_RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(...), "cudaMemcpyAsync"));
//   ZR_RETURN_IF_ERROR(CublasStatus(cublasLtMatmul(...), "cublasLtMatmul"));
//
// Codes map to absl codes by what the caller can do about them: out of
// memory is ResourceExhausted, invalid values are InvalidArgument, a missing
// or unusable device is FailedPrecondition, anything else (a kernel that
// faulted, a lost device) is Internal. Pure functions; thread-safe.

#ifndef ZERO3_BACKENDS_CUDA_KERNELS_CUDA_STATUS_H_
#define ZERO3_BACKENDS_CUDA_KERNELS_CUDA_STATUS_H_

#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include "absl/status/status.h"

namespace zero3 {
namespace cuda {
// Internal to the kernels, so that they do not collide with the status
// helpers of the rest of the CUDA backend.
namespace internal {

// OK for cudaSuccess; otherwise "<call>: <cudaGetErrorName> (<code>):
// <cudaGetErrorString>".
absl::Status CudaStatus(cudaError_t error, const char* call);

// OK for CUBLAS_STATUS_SUCCESS; otherwise "<call>: <cublasGetStatusName>
// (<code>): <cublasGetStatusString>".
absl::Status CublasStatus(cublasStatus_t status, const char* call);

}  // namespace internal
}  // namespace cuda
}  // namespace zero3

#endif  // ZERO3_BACKENDS_CUDA_KERNELS_CUDA_STATUS_H_
