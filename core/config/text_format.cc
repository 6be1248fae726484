// Copyright 2026 The zero3 Authors.

#include "core/config/text_format.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/config/config.pb.h"
#include "core/config/config_to_json.h"
#include "core/config/deepspeed_keys.h"
#include "core/config/schema.h"
#include "core/util/proto_path.h"
#include "core/util/suggest.h"
#include "core/util/text_proto.h"

namespace zero3 {
namespace config {
namespace {

// The parser's message, with what was likely meant when it is about an
// unknown field of a configuration section.
std::string Improve(const TextProtoError& error) {
  const std::string& message = error.message;
  if (error.type == nullptr) return message;
  const Schema& schema = GetSchema();
  auto section = schema.section_of.find(error.type);
  if (section == schema.section_of.end()) return message;
  const std::string& field = error.unknown_field;
  const std::string where =
      section->second.empty() ? "the top level" : section->second;
  if (const DeepSpeedKey* key = FindDeepSpeedKey(section->second, field)) {
    if (key->kind == DeepSpeedKeyKind::kAlias) {
      return absl::StrCat(message,
                          " The text format takes canonical names "
                          "only: write ",
                          key->target, ".");
    }
    return absl::StrCat(message, " (", field,
                        " is a DeepSpeed JSON key; the text format has "
                        "zero3's fields only)");
  }
  const std::vector<std::string> names = FieldNames(error.type);
  const std::string near = NearestName(field, names);
  if (!near.empty()) {
    return absl::StrCat(message, " Did you mean \"", near, "\"?");
  }
  return absl::StrCat(message, " (fields of ", where, ": ",
                      absl::StrJoin(names, ", "), ")");
}

}  // namespace

absl::StatusOr<JsonValue> TextFormatToSettings(absl::string_view text) {
  Config config;
  std::vector<TextProtoError> errors;
  if (!ReadTextProto(text, &config, &errors)) {
    std::vector<std::string> lines;
    for (TextProtoError& e : errors) {
      e.message = Improve(e);
      lines.push_back(e.InText());
    }
    if (lines.empty()) lines.push_back("malformed text-format configuration");
    return absl::InvalidArgumentError(absl::StrJoin(lines, "\n"));
  }
  return MessageToJson(config, /*only_set=*/true);
}

}  // namespace config
}  // namespace zero3
