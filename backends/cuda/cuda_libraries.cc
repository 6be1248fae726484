// Copyright 2026 The zero3 Authors.

#include "backends/cuda/cuda_libraries.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>  // NOLINT: std::call_once

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace zero3 {
namespace cuda {
namespace {

constexpr CudaLibrary kAll[] = {CudaLibrary::kCublasLt, CudaLibrary::kCublas,
                                CudaLibrary::kNccl};

struct Loaded {
  void* handle[3] = {nullptr, nullptr, nullptr};
  std::string error[3];
  absl::Status status;
};

int Index(CudaLibrary library) { return static_cast<int>(library); }

// Opens the first candidate that loads; the reason of the first failure
// (the soname's) otherwise.
void* Open(const std::string& soname, std::string* error) {
  std::string first_error;
  for (const std::string& path : CudaLibraryCandidates(soname)) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (handle != nullptr) return handle;
    const char* why = dlerror();
    if (first_error.empty()) first_error = why != nullptr ? why : "unknown";
  }
  *error = first_error;
  return nullptr;
}

const Loaded& Load() {
  static Loaded* loaded = new Loaded;
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::string> missing;
    // cuBLAS needs cuBLASLt: open it first.
    for (CudaLibrary library : kAll) {
      const int i = Index(library);
      loaded->handle[i] = Open(CudaLibrarySoname(library), &loaded->error[i]);
      if (loaded->handle[i] == nullptr) missing.push_back(loaded->error[i]);
    }
    if (!missing.empty()) {
      loaded->status = absl::FailedPreconditionError(absl::StrCat(
          "the CUDA backend cannot load its libraries: ",
          absl::StrJoin(missing, "; "),
          ". It needs cuBLAS 13 (libcublas.so.13, libcublasLt.so.13) and "
          "NCCL 2 (libnccl.so.2): install them (CUDA 13 toolkit, "
          "libnccl2) or put their directory on LD_LIBRARY_PATH "
          "(docs/gpu.md, \"Libraries on the GPU node\")"));
    }
  });
  return *loaded;
}

}  // namespace

const char* CudaLibrarySoname(CudaLibrary library) {
  switch (library) {
    case CudaLibrary::kCublasLt:
      return "libcublasLt.so.13";
    case CudaLibrary::kCublas:
      return "libcublas.so.13";
    case CudaLibrary::kNccl:
      return "libnccl.so.2";
  }
  return "";
}

std::vector<std::string> CudaLibraryCandidates(const std::string& soname) {
  return {soname, absl::StrCat("/usr/local/cuda/lib64/", soname),
          absl::StrCat("/usr/local/cuda-13.0/lib64/", soname)};
}

absl::Status LoadCudaLibraries() { return Load().status; }

void* CudaSymbol(CudaLibrary library, const char* symbol) {
  const Loaded& loaded = Load();
  void* handle = loaded.handle[Index(library)];
  void* address = handle != nullptr ? dlsym(handle, symbol) : nullptr;
  if (address == nullptr) {
    std::fprintf(stderr, "zero3: %s\n",
                 handle == nullptr
                     ? std::string(loaded.status.message()).c_str()
                     : absl::StrCat(CudaLibrarySoname(library), " has no ",
                                    symbol, ": a different version?")
                           .c_str());
    std::abort();
  }
  return address;
}

std::vector<std::string> DescribeCudaLibraries() {
  const Loaded& loaded = Load();
  std::vector<std::string> lines;
  for (CudaLibrary library : kAll) {
    const int i = Index(library);
    std::string line = absl::StrCat(CudaLibrarySoname(library), ": ");
    struct link_map* map = nullptr;
    if (loaded.handle[i] != nullptr &&
        dlinfo(loaded.handle[i], RTLD_DI_LINKMAP, &map) == 0 &&
        map != nullptr) {
      absl::StrAppend(&line, "found (", map->l_name, ")");
    } else {
      absl::StrAppend(&line, "not found (", loaded.error[i], ")");
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace cuda
}  // namespace zero3
