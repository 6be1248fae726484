// Copyright 2026 The zero3 Authors.
//
// export_command.h: `zero3 export --checkpoint DIR --out HFDIR`, which
// writes a checkpoint of zero3 train --save as a Hugging Face model
// directory (config.json and model.safetensors, fp32 or bf16;
// core/engine/checkpoint_export.h), as DeepSpeed's zero_to_fp32.py does.
// Exit 0 when written; exit 2 naming the file for a checkpoint that cannot
// be read or is damaged; exit 1 when the output cannot be written.
// The command object holds its parsed flags; like every Command it runs once,
// on one thread.

#ifndef ZERO3_TOOLS_CLI_EXPORT_COMMAND_H_
#define ZERO3_TOOLS_CLI_EXPORT_COMMAND_H_

#include <memory>

#include "tools/cli/command.h"

namespace zero3 {
namespace cli {

std::unique_ptr<Command> NewExportCommand();

}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_EXPORT_COMMAND_H_
