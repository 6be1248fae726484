// Copyright 2026 The zero3 Authors.

#include "tools/cli/command.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/util/suggest.h"

namespace zero3 {
namespace cli {
namespace {

std::string TopLevelHelp(absl::string_view program,
                         absl::Span<const std::unique_ptr<Command>> commands) {
  std::string out = absl::StrCat(
      program,
      ": ZeRO stage 3 training with host optimizer offload,\non GPUs or "
      "a simulated device.\n\nUsage: ",
      program, " COMMAND [ARGS] [flags]\n\nCommands:\n");
  size_t width = 4;  // "help"
  for (const auto& c : commands) width = std::max(width, c->name().size());
  for (const auto& c : commands) {
    absl::StrAppend(&out, "  ", c->name(),
                    std::string(width - c->name().size() + 2, ' '),
                    c->summary(), "\n");
  }
  absl::StrAppend(&out, "  help", std::string(width - 4 + 2, ' '),
                  "describe a command: help COMMAND\n");
  absl::StrAppend(&out, "\nRun '", program,
                  " COMMAND --help' for a command's arguments and flags,\n'",
                  program,
                  " --version' for the version, the build and the CUDA "
                  "libraries found.\n");
  return out;
}

Command* FindCommand(absl::Span<const std::unique_ptr<Command>> commands,
                     absl::string_view name) {
  for (const auto& c : commands) {
    if (c->name() == name) return c.get();
  }
  return nullptr;
}

std::string UnknownCommand(absl::string_view program,
                           absl::Span<const std::unique_ptr<Command>> commands,
                           absl::string_view name) {
  std::vector<std::string> names;
  for (const auto& c : commands) names.push_back(std::string(c->name()));
  const std::string near = NearestName(name, names);
  std::string message =
      absl::StrCat(program, ": unknown command \"", name, "\"");
  if (!near.empty())
    absl::StrAppend(&message, "; did you mean \"", near, "\"?");
  absl::StrAppend(&message, " ('", program, " --help' lists the commands)");
  return message;
}

}  // namespace

std::string ResolveUserPath(absl::string_view path) {
  const char* cwd = std::getenv("BUILD_WORKING_DIRECTORY");
  if (path.empty() || path[0] == '/' || cwd == nullptr || *cwd == '\0') {
    return std::string(path);
  }
  return absl::StrCat(cwd, "/", path);
}

int RunCommandLine(absl::string_view program,
                   absl::Span<const std::unique_ptr<Command>> commands,
                   absl::Span<const std::string> args, std::ostream& out,
                   std::ostream& err) {
  if (args.empty()) {
    err << TopLevelHelp(program, commands);
    return kExitUsage;
  }
  const std::string& first = args[0];
  if (first == "-h" || first == "--help" ||
      (first == "help" && args.size() == 1)) {
    out << TopLevelHelp(program, commands);
    return kExitOk;
  }
  Command* command = nullptr;
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (first == "help") {
    command = FindCommand(commands, args[1]);
    if (command == nullptr) {
      err << UnknownCommand(program, commands, args[1]) << "\n";
      return kExitUsage;
    }
    rest = {"--help"};
  } else if (absl::StartsWith(first, "--help=")) {
    err << program << ": --help takes no value, got " << first << " ('"
        << program << " --help' lists the commands)\n";
    return kExitUsage;
  } else if (absl::StartsWith(first, "-")) {
    err << program << ": expected a command before " << first << " ('"
        << program << " --help' lists the commands)\n";
    return kExitUsage;
  } else {
    command = FindCommand(commands, first);
    if (command == nullptr) {
      err << UnknownCommand(program, commands, first) << "\n";
      return kExitUsage;
    }
  }
  FlagSet flags(absl::StrCat(program, " ", command->name()),
                std::string(command->description()));
  command->DefineFlags(flags);
  const absl::Status status = flags.Parse(rest);
  if (!status.ok()) {
    err << flags.command() << ": " << status.message() << "\n";
    return kExitUsage;
  }
  if (flags.help_requested()) {
    out << flags.Help();
    return kExitOk;
  }
  return command->Run(flags.positional(), out, err);
}

}  // namespace cli
}  // namespace zero3
