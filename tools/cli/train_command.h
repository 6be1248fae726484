// Copyright 2026 The zero3 Authors.
//
// train_command.h: `zero3 train`, ZeRO-3 training on a backend.

#ifndef ZERO3_TOOLS_CLI_TRAIN_COMMAND_H_
#define ZERO3_TOOLS_CLI_TRAIN_COMMAND_H_

#include <memory>

#include "tools/cli/command.h"

namespace zero3 {
namespace cli {

std::unique_ptr<Command> NewTrainCommand();

}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_TRAIN_COMMAND_H_
