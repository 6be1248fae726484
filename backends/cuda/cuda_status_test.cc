// Copyright 2026 The zero3 Authors.
//
// Needs the CUDA runtime library, not a GPU: error names and texts are
// tables in the library.

#include "backends/cuda/cuda_status.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace cuda {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::zero3::testing::IsOk;
using ::zero3::testing::StatusIs;

absl::Status FailingCall() {
  ZR_CUDA_RETURN_IF_ERROR(cudaErrorMemoryAllocation);
  return absl::OkStatus();
}

absl::Status FailingNcclCall() {
  ZR_NCCL_RETURN_IF_ERROR(ncclInvalidArgument, nullptr);
  return absl::OkStatus();
}

TEST(CudaStatusTest, Success) {
  EXPECT_THAT(CudaStatus(cudaSuccess, "cudaMalloc"), IsOk());
  EXPECT_THAT(NcclStatus(ncclSuccess, "ncclAllGather"), IsOk());
}

TEST(CudaStatusTest, NamesTheCallAndTheError) {
  EXPECT_THAT(CudaStatus(cudaErrorMemoryAllocation, "cudaMalloc(&ptr, bytes)"),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("cudaMalloc(&ptr, bytes) failed"),
                             HasSubstr("cudaErrorMemoryAllocation"),
                             HasSubstr("code 2"), HasSubstr("out of memory"))));
  EXPECT_THAT(CudaStatus(cudaErrorNoDevice, "cudaSetDevice(0)"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("cudaErrorNoDevice")));
  EXPECT_THAT(CudaStatus(cudaErrorInvalidValue, "cudaMemcpyAsync"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(CudaStatusTest, StickyErrorsSayTheDeviceIsLost) {
  EXPECT_THAT(CudaStatus(cudaErrorIllegalAddress, "cudaStreamSynchronize"),
              StatusIs(absl::StatusCode::kInternal,
                       AllOf(HasSubstr("cudaErrorIllegalAddress"),
                             HasSubstr("compute-sanitizer"))));
  EXPECT_THAT(CudaStatus(cudaErrorInvalidValue, "x").message(),
              Not(HasSubstr("compute-sanitizer")));
}

TEST(CudaStatusTest, MacroReturnsTheExpression) {
  EXPECT_THAT(FailingCall(),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("cudaErrorMemoryAllocation failed")));
}

TEST(CudaStatusTest, Nccl) {
  EXPECT_THAT(FailingNcclCall(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("ncclInvalidArgument failed"),
                             HasSubstr("code 4"))));
  EXPECT_THAT(NcclStatus(ncclRemoteError, "ncclAllReduce"),
              StatusIs(absl::StatusCode::kUnavailable,
                       AllOf(HasSubstr("ncclAllReduce failed"),
                             HasSubstr("ncclRemoteError"),
                             HasSubstr("another rank may have failed"))));
}

}  // namespace
}  // namespace cuda
}  // namespace zero3
