// Copyright 2026 The zero3 Authors.
//
// version.h: what `zero3 --version` prints, as DeepSpeed's ds_report does:
// the version, the build mode, and what the CUDA backend finds on this
// machine (runtime, driver, cuBLAS and NCCL with their versions, GPUs).

#ifndef ZERO3_TOOLS_CLI_VERSION_H_
#define ZERO3_TOOLS_CLI_VERSION_H_

#include <string>

namespace zero3 {
namespace cli {

// "0.1.0".
const char* Zero3Version();

// The report, one fact a line, ending in a newline.
std::string VersionReport();

}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_VERSION_H_
