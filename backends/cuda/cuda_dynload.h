// Copyright 2026 The zero3 Authors.
//
// cuda_dynload.h: the cuBLAS, cuBLASLt and NCCL headers, with each function
// the backend calls resolved at run time (cuda_libraries.h).
//
// Include this instead of <cublas_v2.h>, <cublasLt.h> and <nccl.h>. After
// the real headers, each function the backend uses is a macro that looks
// the function up once (per call site) with dlsym and calls it, so the
// binary has no link-time reference to the libraries. decltype(&::f) names
// the declared type without referencing the symbol. A function not listed
// here is still resolved at link time, and the link fails: add it.

#ifndef ZERO3_BACKENDS_CUDA_CUDA_DYNLOAD_H_
#define ZERO3_BACKENDS_CUDA_CUDA_DYNLOAD_H_

#include <cublasLt.h>
#include <cublas_v2.h>
#include <nccl.h>

#include "backends/cuda/cuda_libraries.h"

#define ZR_CUDA_DYNLOAD(library, name)                                 \
  ([]() {                                                              \
    static const auto fn =                                             \
        reinterpret_cast<decltype(&::name)>(::zero3::cuda::CudaSymbol( \
            ::zero3::cuda::CudaLibrary::library, #name));              \
    return fn;                                                         \
  }())

// cuBLAS.
#define cublasCreate_v2 ZR_CUDA_DYNLOAD(kCublas, cublasCreate_v2)
#define cublasDestroy_v2 ZR_CUDA_DYNLOAD(kCublas, cublasDestroy_v2)
#define cublasGemmEx_64 ZR_CUDA_DYNLOAD(kCublas, cublasGemmEx_64)
#define cublasGetStatusName ZR_CUDA_DYNLOAD(kCublas, cublasGetStatusName)
#define cublasGetStatusString ZR_CUDA_DYNLOAD(kCublas, cublasGetStatusString)
#define cublasGetProperty ZR_CUDA_DYNLOAD(kCublas, cublasGetProperty)
#define cublasSetMathMode ZR_CUDA_DYNLOAD(kCublas, cublasSetMathMode)
#define cublasSetStream_v2 ZR_CUDA_DYNLOAD(kCublas, cublasSetStream_v2)
#define cublasSetWorkspace_v2 ZR_CUDA_DYNLOAD(kCublas, cublasSetWorkspace_v2)

// cuBLASLt.
#define cublasLtCreate ZR_CUDA_DYNLOAD(kCublasLt, cublasLtCreate)
#define cublasLtDestroy ZR_CUDA_DYNLOAD(kCublasLt, cublasLtDestroy)
#define cublasLtMatmul ZR_CUDA_DYNLOAD(kCublasLt, cublasLtMatmul)
#define cublasLtMatmulAlgoGetHeuristic \
  ZR_CUDA_DYNLOAD(kCublasLt, cublasLtMatmulAlgoGetHeuristic)
#define cublasLtMatmulDescCreate \
  ZR_CUDA_DYNLOAD(kCublasLt, cublasLtMatmulDescCreate)
#define cublasLtMatmulDescDestroy \
  ZR_CUDA_DYNLOAD(kCublasLt, cublasLtMatmulDescDestroy)
#define cublasLtMatmulDescSetAttribute \
  ZR_CUDA_DYNLOAD(kCublasLt, cublasLtMatmulDescSetAttribute)
#define cublasLtMatmulPreferenceCreate \
  ZR_CUDA_DYNLOAD(kCublasLt, cublasLtMatmulPreferenceCreate)
#define cublasLtMatmulPreferenceDestroy \
  ZR_CUDA_DYNLOAD(kCublasLt, cublasLtMatmulPreferenceDestroy)
#define cublasLtMatmulPreferenceSetAttribute \
  ZR_CUDA_DYNLOAD(kCublasLt, cublasLtMatmulPreferenceSetAttribute)
#define cublasLtMatrixLayoutCreate \
  ZR_CUDA_DYNLOAD(kCublasLt, cublasLtMatrixLayoutCreate)
#define cublasLtMatrixLayoutDestroy \
  ZR_CUDA_DYNLOAD(kCublasLt, cublasLtMatrixLayoutDestroy)

// NCCL.
#define ncclAllGather ZR_CUDA_DYNLOAD(kNccl, ncclAllGather)
#define ncclAllReduce ZR_CUDA_DYNLOAD(kNccl, ncclAllReduce)
#define ncclBroadcast ZR_CUDA_DYNLOAD(kNccl, ncclBroadcast)
#define ncclCommAbort ZR_CUDA_DYNLOAD(kNccl, ncclCommAbort)
#define ncclCommDestroy ZR_CUDA_DYNLOAD(kNccl, ncclCommDestroy)
#define ncclCommFinalize ZR_CUDA_DYNLOAD(kNccl, ncclCommFinalize)
#define ncclCommGetAsyncError ZR_CUDA_DYNLOAD(kNccl, ncclCommGetAsyncError)
#define ncclCommInitRank ZR_CUDA_DYNLOAD(kNccl, ncclCommInitRank)
#define ncclGetErrorString ZR_CUDA_DYNLOAD(kNccl, ncclGetErrorString)
#define ncclGroupEnd ZR_CUDA_DYNLOAD(kNccl, ncclGroupEnd)
#define ncclGroupStart ZR_CUDA_DYNLOAD(kNccl, ncclGroupStart)
#define ncclGetLastError ZR_CUDA_DYNLOAD(kNccl, ncclGetLastError)
#define ncclGetUniqueId ZR_CUDA_DYNLOAD(kNccl, ncclGetUniqueId)
#define ncclGetVersion ZR_CUDA_DYNLOAD(kNccl, ncclGetVersion)
#define ncclReduceScatter ZR_CUDA_DYNLOAD(kNccl, ncclReduceScatter)

#endif  // ZERO3_BACKENDS_CUDA_CUDA_DYNLOAD_H_
