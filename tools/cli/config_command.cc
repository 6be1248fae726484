// Copyright 2026 The zero3 Authors.

#include "tools/cli/config_command.h"

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/config/config_loader.h"
#include "tools/cli/flag_limits.h"

namespace zero3 {
namespace cli {
namespace {

class ConfigCommand : public Command {
 public:
  absl::string_view name() const override { return "config"; }

  absl::string_view summary() const override {
    return "validate a DeepSpeed or zero3 configuration and print it "
           "resolved";
  }

  absl::string_view description() const override {
    return "Reads a DeepSpeed JSON configuration, exactly as used with "
           "DeepSpeed, or a zero3 text-format configuration; validates it; "
           "and prints the resolved configuration as JSON on stdout, with "
           "DeepSpeed's key names and every default filled in. Notices "
           "(deprecated keys, DeepSpeed features zero3 ignores) go to stderr "
           "as 'notice:' lines. Exit status 0 when the configuration is "
           "valid; 2 when it is not, with every error on stderr as an "
           "'error:' line. docs/config.md describes every key.";
  }

  void DefineFlags(FlagSet& flags) override {
    flags.AddPositional("FILE",
                        "the configuration: DeepSpeed JSON (.json) or zero3 "
                        "text format (.textproto, .txtpb, .pbtxt); other "
                        "names are recognised by content");
    flags.AddInt("world-size", &world_size_, "N",
                 "data-parallel size, for the check train_batch_size = "
                 "micro-batch x accumulation steps x N",
                 kRanksRange);
    flags.AddRepeated("set", &overrides_, "KEY=VALUE",
                      "override a key before validation, with DeepSpeed's "
                      "dotted key names, e.g. --set "
                      "zero_optimization.offload_optimizer.pin_memory=false; "
                      "VALUE is read as JSON, else as a string");
  }

  int Run(const std::vector<std::string>& positional, std::ostream& out,
          std::ostream& err) override {
    config::LoadOptions options;
    options.world_size = world_size_;
    options.overrides = overrides_;
    const std::string path = ResolveUserPath(positional[0]);
    const absl::StatusOr<config::LoadedConfig> loaded =
        config::LoadConfigFile(path, options);
    if (!loaded.ok()) {
      for (absl::string_view line :
           absl::StrSplit(loaded.status().message(), '\n')) {
        err << "error: " << line << "\n";
      }
      return kExitUsage;
    }
    for (const std::string& notice : loaded->notices) {
      err << "notice: " << notice << "\n";
    }
    for (const std::string& warning : loaded->warnings) {
      err << "warning: " << warning << "\n";
    }
    out << config::ConfigToJson(loaded->config) << "\n";
    return kExitOk;
  }

 private:
  int64_t world_size_ = 1;
  std::vector<std::string> overrides_;
};

}  // namespace

std::unique_ptr<Command> NewConfigCommand() {
  return std::make_unique<ConfigCommand>();
}

}  // namespace cli
}  // namespace zero3
