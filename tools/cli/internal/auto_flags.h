// Copyright 2026 The zero3 Authors.
//
// auto_flags.h: zero3 train's flags for the values the Hugging Face Trainer
// takes from its own arguments (--micro-batch, --accumulation, --lr,
// --warmup-steps), which fill the configuration's "auto" placeholders
// (core/config/hf_auto.h), and the learning rate on the step line.
//
//   AutoFlags auto_flags;
//   auto_flags.Define(flags);             // in DefineFlags
//   ZR_ASSIGN_OR_RETURN(config::AutoValues v,
//                       auto_flags.Values(spec.hidden_size(), steps));
//
// Not thread-safe: the flag parser writes the members.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_AUTO_FLAGS_H_
#define ZERO3_TOOLS_CLI_INTERNAL_AUTO_FLAGS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/config/config_loader.h"
#include "core/engine/engine.h"
#include "core/zero/options.h"
#include "tools/cli/flags.h"

namespace zero3 {
namespace cli {
namespace internal {

class AutoFlags {
 public:
  // Adds the flags, as one block.
  void Define(FlagSet& flags);

  // Whether --micro-batch was given (it replaces zero3 train's default
  // micro-batch of 4).
  bool has_micro_batch() const { return !micro_batch_.empty(); }

  // The values for "auto": the flags given, the model's hidden size and
  // the run's steps. A malformed flag value is an InvalidArgumentError
  // naming the flag.
  absl::StatusOr<config::AutoValues> Values(int64_t hidden_size,
                                            int64_t steps) const;

 private:
  // As given; empty when not given.
  std::string micro_batch_, accumulation_, lr_, warmup_steps_;
};

// "  lr 3.000e-04" for the step line when `options` follow a schedule, ""
// otherwise (the line stays as it was without one).
std::string LrColumn(const zero::ZeroOptions& options,
                     const engine::StepStats& stats);

}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_AUTO_FLAGS_H_
