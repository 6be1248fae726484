// Copyright 2026 The zero3 Authors.
//
// calibrate_command.h: `zero3 calibrate`, measuring a hardware profile.

#ifndef ZERO3_TOOLS_CLI_CALIBRATE_COMMAND_H_
#define ZERO3_TOOLS_CLI_CALIBRATE_COMMAND_H_

#include <memory>

#include "tools/cli/command.h"

namespace zero3 {
namespace cli {

std::unique_ptr<Command> NewCalibrateCommand();

}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_CALIBRATE_COMMAND_H_
