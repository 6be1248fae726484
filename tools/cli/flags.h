// Copyright 2026 The zero3 Authors.
//
// flags.h: a small command-line flag parser for zero3's subcommands.
//
// Each subcommand declares its own flags on a FlagSet, bound to variables it
// owns, and the FlagSet parses the arguments after the subcommand's name and
// writes `--help` text from the declarations. (absl::flags registers flags
// globally, per binary; subcommands with their own flags fit it badly.)
//
//   int64_t world_size = 1;
//   std::vector<std::string> overrides;
//   FlagSet flags("zero3 config", "Validates a configuration ...");
//   flags.AddPositional("FILE", "the configuration file");
//   flags.AddInt("world-size", &world_size, "N", "data-parallel size");
//   flags.AddRepeated("set", &overrides, "KEY=VALUE", "override a key");
//   absl::Status status = flags.Parse(args);
//
// Accepted syntax: `--name value`, `--name=value`; booleans as `--name`,
// `--name=true|false` or `--no-name`; a repeated flag may be given many
// times; other flags may be given again and the last value wins. `--`
// ends the flags; `-h` and `--help` request help. Anything else that starts
// with '-' and is not a negative number is a flag; everything else is a
// positional argument. Errors name the flag and suggest the nearest declared
// one: "unknown flag --wrold-size; did you mean --world-size?".
//
// Not thread-safe; a FlagSet is used once, on one thread. The bound
// variables must outlive Parse().

#ifndef ZERO3_TOOLS_CLI_FLAGS_H_
#define ZERO3_TOOLS_CLI_FLAGS_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace zero3 {
namespace cli {

// The values an integer flag takes: [min, max].
struct IntRange {
  int64_t min = std::numeric_limits<int64_t>::min();
  int64_t max = std::numeric_limits<int64_t>::max();
};

class FlagSet {
 public:
  // `command` is how the command is invoked ("zero3 config"), for the usage
  // line and messages; `description` is the paragraph under the usage line.
  FlagSet(std::string command, std::string description);

  FlagSet(const FlagSet&) = delete;
  FlagSet& operator=(const FlagSet&) = delete;

  // Declarations. `name` is without dashes, words joined by '-'
  // ("world-size"). `value_name` is the placeholder in help ("N"). The help
  // text shows each flag's value at declaration time as its default. A
  // string flag rejects an empty value.
  void AddString(absl::string_view name, std::string* value,
                 absl::string_view value_name, absl::string_view help);
  // An integer flag takes values in `range` and says so in help; a value
  // outside is an error naming the limits.
  void AddInt(absl::string_view name, int64_t* value,
              absl::string_view value_name, absl::string_view help,
              IntRange range = IntRange());
  void AddDouble(absl::string_view name, double* value,
                 absl::string_view value_name, absl::string_view help);
  void AddBool(absl::string_view name, bool* value, absl::string_view help);
  // Each occurrence appends one value.
  void AddRepeated(absl::string_view name, std::vector<std::string>* values,
                   absl::string_view value_name, absl::string_view help);

  // Flags declared from here on are listed by help under `title` (a
  // heading of their own, after the flags declared before any section).
  void Section(absl::string_view title);

  // Another spelling of the declared flag `name` (torchrun's
  // "nproc_per_node" for "nproc-per-node"); help shows it beside the flag.
  void AddAlias(absl::string_view name, absl::string_view alias);

  // Replaces the default that help shows for flag `name` (declared
  // before): for a flag whose bound value means "not given" ("0") and whose
  // effective default comes from elsewhere.
  void SetDefaultText(absl::string_view name, absl::string_view text);

  // A positional argument, for the usage line, the help text and the count
  // check in Parse(). Required positionals come before optional ones.
  void AddPositional(absl::string_view name, absl::string_view help,
                     bool required = true);

  // Accepts any number of positional arguments after the declared ones,
  // collected in order into `values`: another program's command line, for
  // a command that runs one. Its flags must follow `--`, which ends this
  // command's flags. Shown as "[NAME...]" in the usage line.
  void AddRemainingPositionals(absl::string_view name,
                               std::vector<std::string>* values,
                               absl::string_view help);

  // Parses `args` (the arguments after the command's name). On error the
  // message names the offending argument and the remedy. With -h/--help,
  // returns OK at once and help_requested() is true.
  absl::Status Parse(absl::Span<const std::string> args);

  bool help_requested() const { return help_requested_; }
  // Whether flag `name` was on the command line (for a default that
  // depends on other flags).
  bool given(absl::string_view name) const;
  const std::vector<std::string>& positional() const { return positional_; }

  // Usage line, description, arguments and flags, ending in a newline.
  std::string Help() const;

  // "zero3 config"
  const std::string& command() const { return command_; }

 private:
  struct Flag {
    std::string name;
    std::string value_name;  // empty for booleans
    std::string help;
    std::string default_text;
    std::string range_text;  // "1 to 64", integers only
    bool is_bool = false;
    bool repeated = false;
    std::string section;  // help's heading; empty: "Flags"
    std::vector<std::string> aliases;
    // Stores a value; returns an error message, or "" on success.
    std::function<std::string(absl::string_view)> set;
  };
  struct Positional {
    std::string name;
    std::string help;
    bool required;
  };

  void Add(Flag flag);
  const Flag* Find(absl::string_view name) const;
  Flag* FindMutable(absl::string_view name);
  std::string UnknownFlag(absl::string_view flag) const;

  std::string command_;
  std::string description_;
  std::vector<Flag> flags_;
  std::string section_;  // of the flags declared next
  std::vector<Positional> positionals_;
  // AddRemainingPositionals: its name and help, and where the arguments go.
  Positional remaining_{"", "", false};
  std::vector<std::string>* remaining_values_ = nullptr;
  std::vector<std::string> positional_;
  bool help_requested_ = false;
  std::vector<std::string> given_;  // flags set by Parse
};

}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_FLAGS_H_
