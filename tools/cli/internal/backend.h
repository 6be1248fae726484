// Copyright 2026 The zero3 Authors.
//
// backend.h: where a command runs its ranks, resolved once from --backend.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_BACKEND_H_
#define ZERO3_TOOLS_CLI_INTERNAL_BACKEND_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace zero3 {
namespace cli {
namespace internal {

// The simulated device, or GPUs.
enum class Backend { kSim, kCuda };

// "sim" or "cuda"; InvalidArgument naming --backend and the value
// otherwise.
inline absl::StatusOr<Backend> BackendNamed(absl::string_view name) {
  if (name == "sim") return Backend::kSim;
  if (name == "cuda") return Backend::kCuda;
  return absl::InvalidArgumentError(
      absl::StrCat("--backend must be sim or cuda, got '", name, "'"));
}

}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_BACKEND_H_
