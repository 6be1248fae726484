// Copyright 2026 The zero3 Authors.
//
// config_command.h: `zero3 config FILE`, which validates a configuration and
// prints it resolved.
//
// Reads a DeepSpeed JSON configuration or a zero3 text-format one
// (core/config/config_loader.h), prints the resolved configuration as JSON
// with DeepSpeed's key names and every default on stdout, and "notice: ..."
// lines on stderr. Exit 0 when valid; exit 2 with one "error: ..." line per
// error on stderr when not.
//
// The command object holds its parsed flags; like every Command it runs once,
// on one thread.

#ifndef ZERO3_TOOLS_CLI_CONFIG_COMMAND_H_
#define ZERO3_TOOLS_CLI_CONFIG_COMMAND_H_

#include <memory>

#include "tools/cli/command.h"

namespace zero3 {
namespace cli {

std::unique_ptr<Command> NewConfigCommand();

}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_CONFIG_COMMAND_H_
