// Copyright 2026 The zero3 Authors.
//
// json_to_config.h: the loader's first stage, DeepSpeed-named JSON settings
// to a Config, key by key.
//
// Fields are read by name with DeepSpeed's number rules (5e8 is an integer),
// aliases as their field (with a notice), ignored keys with a notice,
// rejected and unknown keys as errors with the fix; deprecated keys are
// collected for ApplyDeprecated (deprecated.h). Every value of the wrong
// type is an error that says what was expected.
//
// Thread-compatible: plain functions. Internal to the loader
// (config_loader.h).

#ifndef ZERO3_CORE_CONFIG_JSON_TO_CONFIG_H_
#define ZERO3_CORE_CONFIG_JSON_TO_CONFIG_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/config/config.pb.h"
#include "core/config/diagnostics.h"
#include "core/config/json.h"
#include "google/protobuf/descriptor.h"

namespace zero3 {
namespace config {

// A deprecated DeepSpeed key as given, for ApplyDeprecated.
struct DeprecatedUse {
  std::string key;   // e.g. "cpu_offload"
  std::string path;  // e.g. "zero_optimization.cpu_offload"
  JsonValue value;
};

// Reads the JSON object `settings` into `config` and returns the deprecated
// keys found, in order. Errors and notices go to `diag`.
std::vector<DeprecatedUse> ConvertSettings(const JsonValue& settings,
                                           Config* config, Diagnostics* diag);

// Reports `value` at `path`, where a value of C++ type `type` (`expected`,
// e.g. "an integer") belongs, as an error that poisons `path`: "auto", quoted
// numbers and booleans get their own fix. `default_text` is the default to
// mention, empty where there is none worth naming.
void ReportTypeError(const JsonValue& value, const std::string& path,
                     google::protobuf::FieldDescriptor::CppType type,
                     absl::string_view expected,
                     const std::string& default_text, Diagnostics* diag);

}  // namespace config
}  // namespace zero3

#endif  // ZERO3_CORE_CONFIG_JSON_TO_CONFIG_H_
