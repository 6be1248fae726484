// Copyright 2026 The zero3 Authors.
//
// The loading pipeline; each stage is in its own file:
//   text_format.h       text format -> settings
//   overrides.h         KEY=VALUE overrides
//   hf_auto.h           "auto" -> values zero3 knows
//   json_to_config.h    settings -> Config, key by key (coerce.h: quoted
//                       scalars where DeepSpeed's pydantic converts them)
//   deprecated.h        deprecated DeepSpeed keys -> their replacements
//   deepspeed_rules.h   DeepSpeed keys judged by their value
//   fallbacks.h         notices on what was given; unimplemented values
//   batch.h             the batch-size triple
//   defaults.h          every unset field
//   scheduler.h         the scheduler's parameters, by its type
//   validate.h          the rules (field_bounds.h: ranges from config.proto)
//   config_to_json.h    Config -> JSON

#include "core/config/config_loader.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/config/activation_checkpointing.h"
#include "core/config/aio.h"
#include "core/config/batch.h"
#include "core/config/config_to_json.h"
#include "core/config/deepspeed_rules.h"
#include "core/config/defaults.h"
#include "core/config/deprecated.h"
#include "core/config/diagnostics.h"
#include "core/config/fallbacks.h"
#include "core/config/json_to_config.h"
#include "core/config/overrides.h"
#include "core/config/scheduler.h"
#include "core/config/schema.h"
#include "core/config/text_format.h"
#include "core/config/validate.h"
#include "core/util/regular_file.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace config {
namespace {

// Resolves `settings` (a JSON object, overrides applied).
absl::StatusOr<LoadedConfig> Resolve(JsonValue settings,
                                     const LoadOptions& options) {
  const int64_t world_size = options.world_size;
  Diagnostics diag;
  Config config;
  JsonValue resolved = settings;
  ResolveAuto(options.auto_values, world_size, &resolved, &diag);
  const std::vector<DeprecatedUse> deprecated =
      ConvertSettings(resolved, &config, &diag);
  ApplyDeprecated(deprecated, &config, &diag);
  ApplyDeepSpeedRules(resolved, config, &diag);
  NoticeExplicitSettings(&config, &diag);
  CheckActivationCheckpointing(config, &diag);
  CheckAio(&config, &diag);
  ResolveBatch(world_size, &config, &diag);
  FillDependentDefaults(&config);
  FillDefaults(&config);
  ResolveScheduler(&config, &diag);
  ApplyFallbacks(&config, &diag);
  Validate(config, world_size, &diag);
  if (diag.has_errors()) return diag.ToStatus();
  LoadedConfig out;
  out.config = std::move(config);
  out.notices = std::move(diag.notices());
  out.warnings = std::move(diag.warnings());
  out.settings = std::move(settings);
  return out;
}

// True when `text` looks like JSON: its first character after white space
// and comment lines is '{'.
bool LooksLikeJson(absl::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      ++i;
    } else if (c == '#' || absl::StartsWith(text.substr(i), "//")) {
      while (i < text.size() && text[i] != '\n') ++i;
    } else {
      return c == '{';
    }
  }
  return false;
}

absl::StatusOr<LoadedConfig> LoadSettings(JsonValue settings,
                                          const LoadOptions& options) {
  if (options.world_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("the data-parallel size (world size) must be at least "
                     "1, found ",
                     options.world_size));
  }
  if (!settings.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the configuration must be a JSON object ({...}), found ",
                     DescribeValue(settings)));
  }
  ZR_RETURN_IF_ERROR(ApplyOverrideList(&settings, options.overrides));
  return Resolve(std::move(settings), options);
}

}  // namespace

ConfigFormat DetectConfigFormat(absl::string_view path,
                                absl::string_view text) {
  if (absl::EndsWith(path, ".json")) return ConfigFormat::kJson;
  for (absl::string_view ext : {".textproto", ".txtpb", ".pbtxt", ".textpb"}) {
    if (absl::EndsWith(path, ext)) return ConfigFormat::kTextProto;
  }
  return LooksLikeJson(text) ? ConfigFormat::kJson : ConfigFormat::kTextProto;
}

absl::StatusOr<LoadedConfig> LoadConfigText(absl::string_view text,
                                            ConfigFormat format,
                                            const LoadOptions& options) {
  if (format == ConfigFormat::kAuto) format = DetectConfigFormat("", text);
  JsonValue settings;
  if (format == ConfigFormat::kJson) {
    ZR_ASSIGN_OR_RETURN(settings, ParseJson(text));
  } else {
    ZR_ASSIGN_OR_RETURN(settings, TextFormatToSettings(text));
  }
  return LoadSettings(std::move(settings), options);
}

absl::StatusOr<LoadedConfig> LoadConfigFile(absl::string_view path,
                                            const LoadOptions& options) {
  struct stat st;
  if (stat(std::string(path).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot read configuration file ", path,
        ": it is a directory; give the path of a JSON or text-format file"));
  }
  // A FIFO or device would block or never end.
  const absl::Status regular = CheckRegularFile(std::string(path));
  if (absl::IsInvalidArgument(regular)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read configuration file: ", regular.message()));
  }
  std::ifstream in{std::string(path), std::ios::binary};
  if (!in) {
    const int err = errno;
    const std::string why = err != 0 ? std::strerror(err) : "cannot open";
    const std::string message =
        absl::StrCat("cannot read configuration file ", path, ": ", why);
    if (err == ENOENT) return absl::NotFoundError(message);
    return absl::InvalidArgumentError(message);
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read configuration file ", path));
  }
  const std::string text = contents.str();
  absl::StatusOr<LoadedConfig> loaded =
      LoadConfigText(text, DetectConfigFormat(path, text), options);
  if (loaded.ok()) return loaded;
  // Each error line names the file, as a compiler's do.
  std::vector<std::string> lines =
      absl::StrSplit(loaded.status().message(), '\n');
  for (std::string& line : lines) {
    if (!line.empty()) line = absl::StrCat(path, ": ", line);
  }
  return absl::Status(loaded.status().code(), absl::StrJoin(lines, "\n"));
}

absl::StatusOr<LoadedConfig> DefaultConfig(const LoadOptions& options) {
  return LoadSettings(JsonValue::Object(), options);
}

absl::StatusOr<LoadedConfig> ApplyOverrides(
    const LoadedConfig& base, absl::Span<const std::string> overrides,
    const LoadOptions& options) {
  JsonValue settings = base.settings;
  if (!settings.is_object()) settings = JsonValue::Object();
  ZR_RETURN_IF_ERROR(ApplyOverrideList(&settings, overrides));
  LoadOptions rest = options;
  rest.overrides.clear();
  return LoadSettings(std::move(settings), rest);
}

absl::Status ParseOverride(absl::string_view text, std::string* key,
                           std::string* value) {
  return SplitOverride(text, key, value);
}

absl::Status SetConfigKey(JsonValue* settings, absl::string_view key,
                          absl::string_view value) {
  return SetSettingsKey(settings, key, value);
}

absl::Status ValidateConfig(const Config& config, int64_t world_size) {
  Diagnostics diag;
  Validate(config, world_size, &diag);
  return diag.ToStatus();
}

JsonValue ConfigToJsonValue(const Config& config) {
  return MessageToJson(config, /*only_set=*/false);
}

std::string ConfigToJson(const Config& config) {
  return WriteJson(ConfigToJsonValue(config));
}

}  // namespace config
}  // namespace zero3
