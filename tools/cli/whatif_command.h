// Copyright 2026 The zero3 Authors.
//
// whatif_command.h: `zero3 whatif`, timing studies on the simulator.

#ifndef ZERO3_TOOLS_CLI_WHATIF_COMMAND_H_
#define ZERO3_TOOLS_CLI_WHATIF_COMMAND_H_

#include <memory>

#include "tools/cli/command.h"

namespace zero3 {
namespace cli {

std::unique_ptr<Command> NewWhatifCommand();

}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_WHATIF_COMMAND_H_
