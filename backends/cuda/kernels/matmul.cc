// Copyright 2026 The zero3 Authors.

#include "backends/cuda/kernels/matmul.h"

#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_status.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace cuda {
namespace internal {
namespace {

using kernels::DType;

cudaDataType CudaType(DType dtype) {
  switch (dtype) {
    case DType::kBF16:
      return CUDA_R_16BF;
    case DType::kF16:
      return CUDA_R_16F;
    case DType::kF32:
      break;
  }
  return CUDA_R_32F;
}

// The largest power of two (at most 256) dividing the address: cuBLASLt
// assumes 256-byte aligned operands unless told otherwise, and an algorithm
// chosen under that assumption may fault on a tensor that starts mid-buffer.
uint32_t Alignment(const void* p) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(p);
  uint32_t alignment = 256;
  while (alignment > 1 && address % alignment != 0) alignment /= 2;
  return alignment;
}

// The column-major view of the row-major product: cuBLAS computes
// C'[n x m] = op'(A') op'(B') with A' = b and B' = a.
struct ColumnMajor {
  cublasOperation_t op_a, op_b;  // for A' (= b) and B' (= a)
  uint64_t a_rows, a_cols;       // stored shape of A'
  int64_t lda;
  uint64_t b_rows, b_cols;  // stored shape of B'
  int64_t ldb;
  uint64_t c_rows, c_cols;  // C' = n x m
  int64_t ldc;
};

ColumnMajor ToColumnMajor(const kernels::MatmulArgs& args) {
  ColumnMajor cm;
  // b: [n, k] row-major when trans_b (a column-major k x n, transposed by
  // cuBLAS), else [k, n] (a column-major n x k, used as is).
  cm.op_a = args.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  cm.a_rows = static_cast<uint64_t>(args.trans_b ? args.k : args.n);
  cm.a_cols = static_cast<uint64_t>(args.trans_b ? args.n : args.k);
  cm.lda = static_cast<int64_t>(cm.a_rows);
  // a: [k, m] row-major when trans_a (column-major m x k), else [m, k]
  // (column-major k x m).
  cm.op_b = args.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  cm.b_rows = static_cast<uint64_t>(args.trans_a ? args.m : args.k);
  cm.b_cols = static_cast<uint64_t>(args.trans_a ? args.k : args.m);
  cm.ldb = static_cast<int64_t>(cm.b_rows);
  cm.c_rows = static_cast<uint64_t>(args.n);
  cm.c_cols = static_cast<uint64_t>(args.m);
  cm.ldc = args.n;
  return cm;
}

}  // namespace

struct MatmulRunner::Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo;
  bool has_algo = false;

  ~Plan() {
    if (c != nullptr) cublasLtMatrixLayoutDestroy(c);
    if (b != nullptr) cublasLtMatrixLayoutDestroy(b);
    if (a != nullptr) cublasLtMatrixLayoutDestroy(a);
    if (op != nullptr) cublasLtMatmulDescDestroy(op);
  }
};

MatmulRunner::MatmulRunner(int64_t workspace_bytes)
    : workspace_bytes_(workspace_bytes) {}

absl::StatusOr<std::unique_ptr<MatmulRunner>> MatmulRunner::Create(
    int64_t workspace_bytes) {
  std::unique_ptr<MatmulRunner> runner(new MatmulRunner(workspace_bytes));
  ZR_RETURN_IF_ERROR(
      CublasStatus(cublasLtCreate(&runner->lt_), "cublasLtCreate"));
  ZR_RETURN_IF_ERROR(
      CublasStatus(cublasCreate(&runner->blas_), "cublasCreate"));
  // CUBLAS_DEFAULT_MATH keeps fp32 products off TF32.
  ZR_RETURN_IF_ERROR(
      CublasStatus(cublasSetMathMode(runner->blas_, CUBLAS_DEFAULT_MATH),
                   "cublasSetMathMode"));
  return runner;
}

MatmulRunner::~MatmulRunner() {
  plans_.clear();
  if (blas_ != nullptr) cublasDestroy(blas_);
  if (lt_ != nullptr) cublasLtDestroy(lt_);
}

bool MatmulRunner::Supports(DType a, DType b, DType c) {
  return a == b && (c == a || c == DType::kF32);
}

absl::StatusOr<MatmulRunner::Plan*> MatmulRunner::GetPlan(
    const kernels::MatmulArgs& args, DType a_dtype, const void* a,
    DType b_dtype, const void* b, DType c_dtype, const void* c) {
  const uint32_t align_a = Alignment(a), align_b = Alignment(b),
                 align_c = Alignment(c);
  const PlanKey key(args.trans_a, args.trans_b, args.m, args.n, args.k,
                    static_cast<int>(a_dtype), static_cast<int>(b_dtype),
                    static_cast<int>(c_dtype), static_cast<int>(align_a),
                    static_cast<int>(align_b), static_cast<int>(align_c));
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second.get();

  auto plan = std::make_unique<Plan>();
  const ColumnMajor cm = ToColumnMajor(args);
  ZR_RETURN_IF_ERROR(CublasStatus(
      cublasLtMatmulDescCreate(&plan->op, CUBLAS_COMPUTE_32F, CUDA_R_32F),
      "cublasLtMatmulDescCreate"));
  ZR_RETURN_IF_ERROR(CublasStatus(
      cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSA,
                                     &cm.op_a, sizeof(cm.op_a)),
      "cublasLtMatmulDescSetAttribute(TRANSA)"));
  ZR_RETURN_IF_ERROR(CublasStatus(
      cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSB,
                                     &cm.op_b, sizeof(cm.op_b)),
      "cublasLtMatmulDescSetAttribute(TRANSB)"));
  // A' is b, B' is a (see matmul.h).
  ZR_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatrixLayoutCreate(&plan->a, CudaType(b_dtype),
                                              cm.a_rows, cm.a_cols, cm.lda),
                   "cublasLtMatrixLayoutCreate(b)"));
  ZR_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatrixLayoutCreate(&plan->b, CudaType(a_dtype),
                                              cm.b_rows, cm.b_cols, cm.ldb),
                   "cublasLtMatrixLayoutCreate(a)"));
  ZR_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatrixLayoutCreate(&plan->c, CudaType(c_dtype),
                                              cm.c_rows, cm.c_cols, cm.ldc),
                   "cublasLtMatrixLayoutCreate(c)"));

  cublasLtMatmulPreference_t pref = nullptr;
  ZR_RETURN_IF_ERROR(CublasStatus(cublasLtMatmulPreferenceCreate(&pref),
                                  "cublasLtMatmulPreferenceCreate"));
  const uint64_t workspace = static_cast<uint64_t>(workspace_bytes_);
  // A' is b and B' is a, so their alignments swap too.
  const uint32_t pref_a = align_b, pref_b = align_a;
  cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
      sizeof(workspace));
  if (status == CUBLAS_STATUS_SUCCESS) {
    status = cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &pref_a,
        sizeof(pref_a));
  }
  if (status == CUBLAS_STATUS_SUCCESS) {
    status = cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &pref_b,
        sizeof(pref_b));
  }
  if (status == CUBLAS_STATUS_SUCCESS) {
    status = cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c,
        sizeof(align_c));
  }
  if (status == CUBLAS_STATUS_SUCCESS) {
    status = cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c,
        sizeof(align_c));
  }
  cublasLtMatmulHeuristicResult_t result;
  int found = 0;
  if (status == CUBLAS_STATUS_SUCCESS) {
    status =
        cublasLtMatmulAlgoGetHeuristic(lt_, plan->op, plan->a, plan->b, plan->c,
                                       plan->c, pref, 1, &result, &found);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  // No algorithm (NOT_SUPPORTED, or none found) is not an error: Run falls
  // back to cublasGemmEx.
  if (status != CUBLAS_STATUS_SUCCESS &&
      status != CUBLAS_STATUS_NOT_SUPPORTED) {
    return CublasStatus(status, "cublasLtMatmulAlgoGetHeuristic");
  }
  if (status == CUBLAS_STATUS_SUCCESS && found > 0) {
    plan->algo = result.algo;
    plan->has_algo = true;
  }
  Plan* raw = plan.get();
  plans_.emplace(key, std::move(plan));
  return raw;
}

absl::Status MatmulRunner::Run(const kernels::MatmulArgs& args, DType a_dtype,
                               const void* a, DType b_dtype, const void* b,
                               DType c_dtype, void* c, cudaStream_t stream,
                               void* workspace) {
  if (!Supports(a_dtype, b_dtype, c_dtype)) {
    return absl::UnimplementedError(absl::StrCat(
        "matmul of a ", kernels::DTypeName(a_dtype), " and b ",
        kernels::DTypeName(b_dtype), " into c ", kernels::DTypeName(c_dtype),
        ": cuBLAS takes a and b of one type and c of that type or f32"));
  }
  ZR_ASSIGN_OR_RETURN(Plan * plan,
                      GetPlan(args, a_dtype, a, b_dtype, b, c_dtype, c));
  const float alpha = args.alpha;
  const float beta = args.beta;
  if (plan->has_algo) {
    return CublasStatus(
        cublasLtMatmul(lt_, plan->op, &alpha, b, plan->a, a, plan->b, &beta, c,
                       plan->c, c, plan->c, &plan->algo, workspace,
                       static_cast<size_t>(workspace_bytes_), stream),
        "cublasLtMatmul");
  }
  const ColumnMajor cm = ToColumnMajor(args);
  ZR_RETURN_IF_ERROR(
      CublasStatus(cublasSetStream(blas_, stream), "cublasSetStream"));
  // cublasSetStream resets the workspace to cuBLAS's default pool; hand it
  // this stream's instead.
  if (workspace != nullptr) {
    ZR_RETURN_IF_ERROR(
        CublasStatus(cublasSetWorkspace(blas_, workspace,
                                        static_cast<size_t>(workspace_bytes_)),
                     "cublasSetWorkspace"));
  }
  return CublasStatus(
      cublasGemmEx_64(blas_, cm.op_a, cm.op_b, args.n, args.m, args.k, &alpha,
                      b, CudaType(b_dtype), cm.lda, a, CudaType(a_dtype),
                      cm.ldb, &beta, c, CudaType(c_dtype), cm.ldc,
                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      "cublasGemmEx_64");
}

}  // namespace internal
}  // namespace cuda
}  // namespace zero3
