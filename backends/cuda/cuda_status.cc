// Copyright 2026 The zero3 Authors.

#include "backends/cuda/cuda_status.h"

#include "absl/strings/str_cat.h"

namespace zero3 {
namespace cuda {
namespace {

// Errors after which the CUDA context cannot be used any more: every later
// call returns the same error.
bool IsSticky(cudaError_t error) {
  switch (error) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorUnknown:
    case cudaErrorECCUncorrectable:
      return true;
    default:
      return false;
  }
}

absl::StatusCode CudaCode(cudaError_t error) {
  switch (error) {
    case cudaErrorMemoryAllocation:
      return absl::StatusCode::kResourceExhausted;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
      return absl::StatusCode::kFailedPrecondition;
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevicePointer:
    case cudaErrorInvalidMemcpyDirection:
    case cudaErrorInvalidPitchValue:
    case cudaErrorInvalidResourceHandle:
      return absl::StatusCode::kInvalidArgument;
    default:
      return absl::StatusCode::kInternal;
  }
}

absl::StatusCode NcclCode(ncclResult_t result) {
  switch (result) {
    case ncclInvalidArgument:
    case ncclInvalidUsage:
      return absl::StatusCode::kInvalidArgument;
    case ncclSystemError:
    case ncclRemoteError:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kInternal;
  }
}

absl::string_view NcclResultName(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "ncclSuccess";
    case ncclUnhandledCudaError:
      return "ncclUnhandledCudaError";
    case ncclSystemError:
      return "ncclSystemError";
    case ncclInternalError:
      return "ncclInternalError";
    case ncclInvalidArgument:
      return "ncclInvalidArgument";
    case ncclInvalidUsage:
      return "ncclInvalidUsage";
    case ncclRemoteError:
      return "ncclRemoteError";
    case ncclInProgress:
      return "ncclInProgress";
    default:
      return "ncclResult";
  }
}

}  // namespace

absl::Status CudaStatus(cudaError_t error, absl::string_view call) {
  if (error == cudaSuccess) return absl::OkStatus();
  const bool sticky = IsSticky(error);
  // Clears the error the failed call left behind (a no-op for sticky ones,
  // which stay), so a later cudaGetLastError() after a kernel launch does
  // not report this failure again.
  if (!sticky) (void)cudaGetLastError();
  std::string message = absl::StrCat(
      call, " failed: ", cudaGetErrorString(error), " (",
      cudaGetErrorName(error), ", code ", static_cast<int>(error), ")");
  if (sticky) {
    absl::StrAppend(&message,
                    "; a kernel failed earlier on this device (errors are "
                    "reported by the next call that waits for the device); "
                    "the device cannot be used further in this process. Run "
                    "under compute-sanitizer, or with CUDA_LAUNCH_BLOCKING=1, "
                    "to find the kernel");
  }
  return absl::Status(CudaCode(error), message);
}

absl::Status CublasStatus(cublasStatus_t status, absl::string_view call) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  const std::string message = absl::StrCat(
      call, " failed: ", cublasGetStatusString(status), " (",
      cublasGetStatusName(status), ", code ", static_cast<int>(status), ")");
  switch (status) {
    case CUBLAS_STATUS_ALLOC_FAILED:
      return absl::ResourceExhaustedError(message);
    case CUBLAS_STATUS_INVALID_VALUE:
      return absl::InvalidArgumentError(message);
    case CUBLAS_STATUS_NOT_SUPPORTED:
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return absl::UnimplementedError(message);
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return absl::FailedPreconditionError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::Status NcclStatus(ncclResult_t result, absl::string_view call,
                        ncclComm_t comm) {
  if (result == ncclSuccess) return absl::OkStatus();
  std::string message = absl::StrCat(
      call, " failed: ", ncclGetErrorString(result), " (",
      NcclResultName(result), ", code ", static_cast<int>(result), ")");
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && last[0] != '\0') {
    absl::StrAppend(&message, ": ", last);
  }
  if (result == ncclSystemError || result == ncclRemoteError) {
    absl::StrAppend(&message,
                    " (another rank may have failed or exited; set "
                    "NCCL_DEBUG=WARN for details)");
  }
  return absl::Status(NcclCode(result), message);
}

}  // namespace cuda
}  // namespace zero3
