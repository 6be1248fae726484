// Copyright 2026 The zero3 Authors.
//
// flag_limits.h: the ranges of the integer flags that size a run, shared by
// the subcommands so that train, whatif, config and calibrate take the same
// values. The limits are generous (well beyond any run this engine makes)
// but keep every derived size within what the engine and the simulator
// index and allocate: ranks fit an int, a step's row and a simulated
// micro-step cost a bounded amount of memory and time.

#ifndef ZERO3_TOOLS_CLI_FLAG_LIMITS_H_
#define ZERO3_TOOLS_CLI_FLAG_LIMITS_H_

#include <cstdint>

#include "tools/cli/flags.h"

namespace zero3 {
namespace cli {

// Data-parallel ranks (train --ranks, whatif --gpus, config --world-size)
// and tensor-parallel degree: 2^20.
inline constexpr IntRange kRanksRange{1, int64_t{1} << 20};
// Optimizer steps of a run: train keeps one row of figures per step.
inline constexpr IntRange kStepsRange{1, 1000000};
// Steps whatif simulates per variant (each one a full simulated step).
inline constexpr IntRange kWhatifStepsRange{1, 1000};
// Tokens per sequence: 2^20.
inline constexpr IntRange kSeqRange{1, int64_t{1} << 20};
// Sequences per micro-batch: 2^16.
inline constexpr IntRange kMicroBatchRange{1, int64_t{1} << 16};
// Micro-steps per optimizer step: the simulator walks each one (whatif
// takes about 20 ms per micro-step of a 1.5B model).
inline constexpr IntRange kAccumulationRange{1, 1024};

}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_FLAG_LIMITS_H_
