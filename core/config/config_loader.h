// Copyright 2026 The zero3 Authors.
//
// config_loader.h: reads a training configuration, fills in every default,
// validates it, and prints it back.
//
// Two input formats:
//   - DeepSpeed JSON, exactly as users have it for DeepSpeed: numbers as
//     DeepSpeed writes them (5e8 for an integer), DeepSpeed's aliases and
//     deprecated keys (translated, with a notice), DeepSpeed features zero3
//     does not implement (named in a notice saying what happens instead).
//   - Text-format protobuf of config.proto (canonical names only).
//
// Loading runs: parse -> apply KEY=VALUE overrides -> resolve "auto" ->
// map keys to fields (converting quoted scalars where DeepSpeed's pydantic
// does, with a notice) -> judge the DeepSpeed keys whose value decides ->
// translate deprecated keys -> derive the batch sizes -> fill defaults ->
// fall back where a DeepSpeed value is not implemented -> validate. It
// returns the resolved Config (every field set) plus notices, or an
// InvalidArgumentError whose message lists every error found, one per line,
// each starting with the key path:
//
//   zero_optimization.stage (line 4, column 14): zero3 implements ZeRO
//       stage 3 only, found 2; set "stage": 3 or remove the key
//   train_batch_size (line 2, column 23): "auto" is a Hugging Face Trainer
//       placeholder; ...
//
// Malformed input yields one error with its line and column ("line 3,
// column 14: expected ',' or '}' ...").
//
//   LoadOptions options;
//   options.world_size = 8;
//   absl::StatusOr<LoadedConfig> loaded = LoadConfigFile(path, options);
//   if (!loaded.ok()) { print loaded.status().message(); exit(2); }
//   for (const std::string& n : loaded->notices) print "notice: " + n;
//   const Config& config = loaded->config;
//
// All functions are thread-safe (they share only immutable schema tables).

#ifndef ZERO3_CORE_CONFIG_CONFIG_LOADER_H_
#define ZERO3_CORE_CONFIG_CONFIG_LOADER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/config/config.pb.h"
#include "core/config/hf_auto.h"
#include "core/config/json.h"

namespace zero3 {
namespace config {

enum class ConfigFormat {
  // By file extension (.json; .textproto, .txtpb, .pbtxt), else by content:
  // JSON starts with '{' (after white space and comments).
  kAuto,
  kJson,
  kTextProto,
};

struct LoadOptions {
  // The data-parallel size. The batch sizes must satisfy
  // train_batch_size == train_micro_batch_size_per_gpu x
  // gradient_accumulation_steps x world_size. At least 1.
  int64_t world_size = 1;
  // "KEY=VALUE" settings applied on top of the input before it is resolved,
  // as if they were in the file; see ApplyOverrides. An override may fill in
  // a value the file leaves as "auto".
  std::vector<std::string> overrides;
  // What "auto" (the Hugging Face Trainer's placeholder) resolves to where
  // the file holds it, and the flags given (hf_auto.h). Unset values leave
  // "auto" an error that names the flag which sets it.
  AutoValues auto_values;
};

struct LoadedConfig {
  // The resolved configuration: every field set explicitly.
  Config config;
  // Deprecations, aliases, ignored keys and fallbacks: one sentence each,
  // starting with the key path, without a "notice:" prefix.
  std::vector<std::string> notices;
  // Substitutions that change what the run needs (NVMe offload run from host
  // memory): printed apart from the notices, as "warning: ...".
  std::vector<std::string> warnings;
  // What was given explicitly (the JSON as read, or the text-format fields
  // that were set, as DeepSpeed-named JSON), with the overrides applied.
  // ApplyOverrides starts from here.
  JsonValue settings;
};

// Reads `path` and loads it (format by extension or content). An unreadable
// file is a NotFoundError or InvalidArgumentError naming the path.
absl::StatusOr<LoadedConfig> LoadConfigFile(absl::string_view path,
                                            const LoadOptions& options = {});

// Loads configuration text. kAuto sniffs the content.
absl::StatusOr<LoadedConfig> LoadConfigText(absl::string_view text,
                                            ConfigFormat format,
                                            const LoadOptions& options = {});

// The configuration of an empty file: every default, batch sizes of 1 per
// rank. Fails only for a bad world size or bad overrides.
absl::StatusOr<LoadedConfig> DefaultConfig(const LoadOptions& options = {});

// Reloads `base` with more "KEY=VALUE" overrides. KEY is a dotted path of
// DeepSpeed key names ("zero_optimization.offload_optimizer.pin_memory");
// VALUE is read as JSON when it parses as JSON ("false", "5e8", "[0.9,
// 0.95]", "\"cpu\"") and as a string otherwise ("cpu"). An override replaces
// the value of its key, including one given under an alias of that key; it
// goes through the same mapping and validation as the file, so deprecated
// keys still translate and contradictions are still errors. Unknown keys are
// errors that suggest the nearest known key. All errors of all overrides are
// reported together. `options.overrides` is ignored here; `options` gives
// the world size.
absl::StatusOr<LoadedConfig> ApplyOverrides(
    const LoadedConfig& base, absl::Span<const std::string> overrides,
    const LoadOptions& options);

// Sets one dotted `key` to `value` (read as in ApplyOverrides) in a settings
// tree, creating sections as needed. Checks that every component of `key` is
// a key zero3 knows at that level (a field, an alias, a deprecated or an
// ignored DeepSpeed key); the value is checked later, when the settings are
// loaded.
absl::Status SetConfigKey(JsonValue* settings, absl::string_view key,
                          absl::string_view value);

// Splits "KEY=VALUE" at the first '='.
absl::Status ParseOverride(absl::string_view text, std::string* key,
                           std::string* value);

// Checks a resolved configuration (every rule of the loader that applies to
// the fields themselves: stage, ranges, precision, batch consistency, known
// devices and optimizers). Returns every error, one per line.
absl::Status ValidateConfig(const Config& config, int64_t world_size);

// The configuration as DeepSpeed-named JSON, every field in schema order,
// defaults included. Loading the text back yields an equal Config.
JsonValue ConfigToJsonValue(const Config& config);
std::string ConfigToJson(const Config& config);

// The format LoadConfigFile would use for `path` with content `text`.
ConfigFormat DetectConfigFormat(absl::string_view path, absl::string_view text);

}  // namespace config
}  // namespace zero3

#endif  // ZERO3_CORE_CONFIG_CONFIG_LOADER_H_
