// Copyright 2026 The zero3 Authors.
//
// matmul.h: the Matmul op (C = alpha op(A) op(B) + beta C, row-major, see
// kernels::MatmulArgs) on cuBLASLt, with cublasGemmEx as the fallback when
// cuBLASLt offers no algorithm.
//
// Row-major C[m, n] = A[m, k] B[k, n] is computed as the column-major product
// C^T[n, m] = B^T[n, k] A^T[k, m]: a row-major matrix is its transpose in
// column-major order, so cuBLAS gets B as its first operand and A as its
// second, with the transposes carried over unchanged.
//
// Precision: bf16 and fp16 inputs multiply on tensor cores with fp32
// accumulation (CUBLAS_COMPUTE_32F); fp32 inputs use CUBLAS_COMPUTE_32F
// without TF32, so they match the fp32 reference to rounding. beta == 0
// never reads C (cuBLAS's contract), so C may hold NaN.
//
// Supported element types: A and B of one type, C of that type or fp32
// (bf16 x bf16 -> bf16 or f32, f16 x f16 -> f16 or f32, f32 x f32 -> f32).
// Others return Unimplemented naming the types.
//
// Owns the cuBLASLt and cuBLAS handles and a cache of plans (descriptors and
// the chosen algorithm) per shape, types and pointer alignment; the caller
// passes each call's workspace (one per stream: calls on different streams
// may overlap). Not thread-safe; KernelContext serializes its use. Run()
// only enqueues work on the given stream.

#ifndef ZERO3_BACKENDS_CUDA_KERNELS_MATMUL_H_
#define ZERO3_BACKENDS_CUDA_KERNELS_MATMUL_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/cuda/cuda_dynload.h"
#include "core/kernels/dtype.h"
#include "core/kernels/op_args.h"

namespace zero3 {
namespace cuda {
namespace internal {

class MatmulRunner {
 public:
  // Every call's workspace will be `workspace_bytes` long (algorithms are
  // chosen for that size).
  static absl::StatusOr<std::unique_ptr<MatmulRunner>> Create(
      int64_t workspace_bytes);
  ~MatmulRunner();

  MatmulRunner(const MatmulRunner&) = delete;
  MatmulRunner& operator=(const MatmulRunner&) = delete;

  // True when cuBLAS multiplies these element types (see file comment).
  static bool Supports(kernels::DType a, kernels::DType b, kernels::DType c);

  // Enqueues C = alpha op(A) op(B) + beta C on `stream`, using `workspace`
  // (device memory of the size given to Create, used only by work on
  // `stream`). Requires m, n, k > 0 (the caller handles empty products) and
  // supported types.
  absl::Status Run(const kernels::MatmulArgs& args, kernels::DType a_dtype,
                   const void* a, kernels::DType b_dtype, const void* b,
                   kernels::DType c_dtype, void* c, cudaStream_t stream,
                   void* workspace);

  cublasLtHandle_t lt_handle() const { return lt_; }
  cublasHandle_t handle() const { return blas_; }

 private:
  struct Plan;
  using PlanKey = std::tuple<bool, bool, int64_t, int64_t, int64_t, int, int,
                             int, int, int, int>;

  explicit MatmulRunner(int64_t workspace_bytes);

  absl::StatusOr<Plan*> GetPlan(const kernels::MatmulArgs& args,
                                kernels::DType a_dtype, const void* a,
                                kernels::DType b_dtype, const void* b,
                                kernels::DType c_dtype, const void* c);

  int64_t workspace_bytes_;
  cublasLtHandle_t lt_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  absl::flat_hash_map<PlanKey, std::unique_ptr<Plan>> plans_;
};

}  // namespace internal
}  // namespace cuda
}  // namespace zero3

#endif  // ZERO3_BACKENDS_CUDA_KERNELS_MATMUL_H_
