// Copyright 2026 The zero3 Authors.

#include "tools/cli/version.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "tools/cli/build_info.h"
#include "tools/cli/internal/launcher_factory.h"

#ifndef ZERO3_BUILD_MODE
#define ZERO3_BUILD_MODE "unknown"
#endif

namespace zero3 {
namespace cli {

const char* Zero3Version() { return "0.1.0"; }

std::string VersionReport() {
  std::string out = absl::StrCat("zero3 ", Zero3Version(), "\n");
  const std::string commit = ZERO3_GIT_COMMIT;
  if (!commit.empty()) absl::StrAppend(&out, "git commit: ", commit, "\n");
  absl::StrAppend(&out, "build: ", ZERO3_BUILD_MODE,
#ifdef NDEBUG
                  " (NDEBUG)",
#else
                  "",
#endif
                  ", GCC ", __GNUC__, ".", __GNUC_MINOR__, ", C++",
                  __cplusplus / 100 % 100, "\n");
  for (const std::string& line : internal::DescribeGpuBackend()) {
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

}  // namespace cli
}  // namespace zero3
