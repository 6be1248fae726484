// Copyright 2026 The zero3 Authors.
//
// zero3_main.cc: the `zero3` binary. Each subcommand lives in tools/cli/;
// adding one is one line in kCommands below (plus its dependency in
// tools/BUILD.bazel).

#include <signal.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "tools/cli/calibrate_command.h"
#include "tools/cli/command.h"
#include "tools/cli/config_command.h"
#include "tools/cli/export_command.h"
#include "tools/cli/launch_command.h"
#include "tools/cli/train_command.h"
#include "tools/cli/version.h"
#include "tools/cli/whatif_command.h"

int main(int argc, char** argv) {
  // A reader that goes away (`zero3 train | head`) ends the printing, not
  // the run: writes to the closed pipe fail (EPIPE) instead of killing the
  // process, and the run finishes its steps, checkpoints and files.
  signal(SIGPIPE, SIG_IGN);
  using ::zero3::cli::Command;
  std::vector<std::unique_ptr<Command>> commands;
  // The subcommands, in the order `zero3 --help` lists them.
  commands.push_back(zero3::cli::NewTrainCommand());
  commands.push_back(zero3::cli::NewWhatifCommand());
  commands.push_back(zero3::cli::NewConfigCommand());
  commands.push_back(zero3::cli::NewLaunchCommand());
  commands.push_back(zero3::cli::NewCalibrateCommand());
  commands.push_back(zero3::cli::NewExportCommand());

  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && args[0] == "--version") {
    std::cout << zero3::cli::VersionReport();
    return zero3::cli::kExitOk;
  }
  return zero3::cli::RunCommandLine("zero3", commands, args, std::cout,
                                    std::cerr);
}
