// Copyright 2026 The zero3 Authors.
//
// cuda_libraries.h: cuBLAS, cuBLASLt and NCCL, loaded when the CUDA backend
// starts rather than when the program does.
//
// The zero3 binary does not name these libraries as NEEDED: `zero3 --help`,
// `config`, `whatif` and simulator runs work on machines without them. The
// backend's calls into them go through cuda_dynload.h, which resolves each
// function here with dlsym on its first call. RunCudaRank loads the
// libraries first (LoadCudaLibraries), so a missing one is an error naming
// it and docs/gpu.md's fix, not a crash. A library is looked up by its
// soname (LD_LIBRARY_PATH, the ld.so cache), then in the toolkit's
// directories (/usr/local/cuda/lib64, /usr/local/cuda-13.0/lib64).
// The CUDA runtime is linked statically and needs only the driver
// (libcuda.so.1), which it opens itself. Thread-safe.

#ifndef ZERO3_BACKENDS_CUDA_CUDA_LIBRARIES_H_
#define ZERO3_BACKENDS_CUDA_CUDA_LIBRARIES_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace zero3 {
namespace cuda {

enum class CudaLibrary { kCublasLt, kCublas, kNccl };

// "libcublas.so.13".
const char* CudaLibrarySoname(CudaLibrary library);

// Loads every library (once; later calls return the first result).
// FailedPrecondition naming each library that could not be loaded, the
// loader's reason, and docs/gpu.md's fix.
absl::Status LoadCudaLibraries();

// The address of `symbol` in `library`, loading it if needed. A library or
// symbol that cannot be found ends the process with the message
// LoadCudaLibraries would return: call that first to fail cleanly.
void* CudaSymbol(CudaLibrary library, const char* symbol);

// Where `soname` can be loaded from, in the order tried.
std::vector<std::string> CudaLibraryCandidates(const std::string& soname);

// What `zero3 --version` reports: for each library, "libnccl.so.2: found
// (/usr/lib/x86_64-linux-gnu/libnccl.so.2)" or "...: not found (reason)".
// Loads nothing into the process that LoadCudaLibraries would not.
std::vector<std::string> DescribeCudaLibraries();

}  // namespace cuda
}  // namespace zero3

#endif  // ZERO3_BACKENDS_CUDA_CUDA_LIBRARIES_H_
