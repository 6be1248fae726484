// Copyright 2026 The zero3 Authors.
//
// command.h: the subcommands of the `zero3` binary and their dispatch.
//
// Each subcommand (`zero3 config`, later `train`, `whatif`, ...) implements
// Command in its own file under tools/cli/ and exposes a factory
// (`std::unique_ptr<Command> NewConfigCommand()`); tools/zero3_main.cc lists
// the factories, one line each, and calls RunCommandLine. The dispatcher owns
// everything common: `zero3 --help`, `zero3 help COMMAND`, `zero3 COMMAND
// --help`, unknown commands and flags, and the exit codes.
//
// Streams are passed in, so commands and the dispatcher can be tested in
// process. Not thread-safe: one command runs at a time.

#ifndef ZERO3_TOOLS_CLI_COMMAND_H_
#define ZERO3_TOOLS_CLI_COMMAND_H_

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "tools/cli/flags.h"

namespace zero3 {
namespace cli {

// Exit codes of the zero3 binary.
inline constexpr int kExitOk = 0;
// A failure while doing valid work (an I/O error, a failed run).
inline constexpr int kExitFailure = 1;
// Bad usage or invalid input: unknown command or flag, invalid
// configuration. The message says what to fix.
inline constexpr int kExitUsage = 2;

class Command {
 public:
  virtual ~Command() = default;

  // The word after `zero3` ("config").
  virtual absl::string_view name() const = 0;
  // One line for `zero3 --help`.
  virtual absl::string_view summary() const = 0;
  // The paragraph of `zero3 NAME --help`, under the usage line.
  virtual absl::string_view description() const = 0;

  // Declares the command's positional arguments and flags on `flags`, bound
  // to members of the command. Called once, before Run.
  virtual void DefineFlags(FlagSet& flags) = 0;

  // Runs with the parsed flags and `positional` arguments. Results go to
  // `out`; notices and errors to `err`. Returns an exit code.
  virtual int Run(const std::vector<std::string>& positional, std::ostream& out,
                  std::ostream& err) = 0;
};

// A path given on the command line, made usable from the process's working
// directory. Under `bazel run` the binary runs in its runfiles tree, not where
// the user typed the command; Bazel says where that was in
// BUILD_WORKING_DIRECTORY, and relative paths are resolved against it.
// Elsewhere the path is returned unchanged.
std::string ResolveUserPath(absl::string_view path);

// Runs `program` (as invoked, "zero3") with `args` (argv without argv[0])
// against `commands`. Returns the process exit code.
int RunCommandLine(absl::string_view program,
                   absl::Span<const std::unique_ptr<Command>> commands,
                   absl::Span<const std::string> args, std::ostream& out,
                   std::ostream& err);

}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_COMMAND_H_
