// Copyright 2026 The zero3 Authors.
//
// gpu_flags.h: zero3 train's GPU-only flags (--profile-ops, --predict,
// --predict-host-cores) and their rules with the backend and --trace.
//
//   GpuFlags gpu;
//   gpu.Define(flags);                                   // in DefineFlags
//   ZR_RETURN_IF_ERROR(gpu.Check(run.gpu(), outputs.tracing()));
//
// Not thread-safe: the flag parser writes the members.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_GPU_FLAGS_H_
#define ZERO3_TOOLS_CLI_INTERNAL_GPU_FLAGS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "tools/cli/flags.h"

namespace zero3 {
namespace cli {
namespace internal {

class GpuFlags {
 public:
  // Adds the flags, as one block.
  void Define(FlagSet& flags);

  // Each flag needs --backend cuda (`gpu`), and --trace on GPUs needs
  // --profile-ops (`tracing`): InvalidArgument naming the flag.
  absl::Status Check(bool gpu, bool tracing) const;

  bool profile_ops() const { return profile_ops_; }
  bool predict() const { return predict_; }
  // Host cores per rank to predict for; 0: the CPUs this process may use.
  int64_t predict_host_cores() const { return predict_host_cores_; }

 private:
  bool profile_ops_ = false;
  bool predict_ = false;
  int64_t predict_host_cores_ = 0;
};

}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_GPU_FLAGS_H_
