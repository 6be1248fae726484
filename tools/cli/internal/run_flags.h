// Copyright 2026 The zero3 Authors.
//
// run_flags.h: zero3 train's flags for what is trained and where (--backend,
// --model, --config, --set, --ranks, --steps, --seq, --seed,
// --gradient-checkpointing, --max-pinned-bytes), with the backend resolved
// once into a type.
//
//   RunFlags run;
//   run.Define(flags);                      // in DefineFlags
//   ZR_RETURN_IF_ERROR(run.Check());        // with the other flags
//   if (run.backend() == Backend::kCuda) ...
//
// Not thread-safe: the flag parser writes the members; the const methods
// may be called from every rank.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_RUN_FLAGS_H_
#define ZERO3_TOOLS_CLI_INTERNAL_RUN_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tools/cli/flags.h"
#include "tools/cli/internal/backend.h"

namespace zero3 {
namespace cli {
namespace internal {

class RunFlags {
 public:
  // Adds the flags, as one block.
  void Define(FlagSet& flags);

  // Resolves --backend (InvalidArgument naming it unless sim or cuda) and
  // checks --ranks and --steps.
  absl::Status Check();

  Backend backend() const { return backend_; }
  bool gpu() const { return backend_ == Backend::kCuda; }
  const std::string& model() const { return model_; }
  const std::string& config() const { return config_; }
  const std::vector<std::string>& overrides() const { return overrides_; }
  int64_t ranks() const { return ranks_; }
  int64_t steps() const { return steps_; }
  int64_t seq() const { return seq_; }
  uint64_t seed() const { return static_cast<uint64_t>(seed_); }
  bool gradient_checkpointing() const { return gradient_checkpointing_; }
  const std::string& max_pinned_bytes() const { return max_pinned_bytes_; }

 private:
  std::string backend_name_ = "sim";
  Backend backend_ = Backend::kSim;
  std::string model_ = "tiny";
  std::string config_;
  std::vector<std::string> overrides_;
  int64_t ranks_ = 2;
  int64_t steps_ = 100;
  int64_t seq_ = 64;
  int64_t seed_ = 0;
  bool gradient_checkpointing_ = false;
  std::string max_pinned_bytes_;
};

}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_RUN_FLAGS_H_
