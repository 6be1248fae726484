// Copyright 2026 The zero3 Authors.

#include "core/config/overrides.h"

#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/config/config.pb.h"
#include "core/config/deepspeed_keys.h"
#include "core/config/schema.h"
#include "core/util/check.h"
#include "core/util/key_value.h"
#include "core/util/proto_path.h"

namespace zero3 {
namespace config {
namespace {

void ClearPositions(JsonValue* v) {
  v->set_position(SourcePosition());
  if (v->is_array()) {
    for (JsonValue& e : v->mutable_array()) ClearPositions(&e);
  } else if (v->is_object()) {
    for (JsonValue::Member& m : v->mutable_members()) {
      m.key_position = SourcePosition();
      ClearPositions(&m.value);
    }
  }
}

// VALUE as JSON when it parses as JSON, else as a string.
JsonValue OverrideValue(absl::string_view value) {
  absl::StatusOr<JsonValue> json = ParseJson(value);
  if (!json.ok()) return JsonValue::String(std::string(value));
  JsonValue parsed = *std::move(json);
  ClearPositions(&parsed);
  return parsed;
}

absl::Status NotASection(absl::string_view given, absl::string_view key) {
  return absl::InvalidArgumentError(
      absl::StrCat(given, " is a value, not a section; cannot set ", key));
}

}  // namespace

absl::Status SplitOverride(absl::string_view text, std::string* key,
                           std::string* value) {
  const absl::optional<KeyValue> kv = SplitKeyValue(text);
  if (!kv.has_value()) {
    return absl::InvalidArgumentError(
        "expected KEY=VALUE, e.g. "
        "zero_optimization.offload_optimizer.pin_memory=false");
  }
  *key = std::string(absl::StripAsciiWhitespace(kv->key));
  *value = std::string(absl::StripAsciiWhitespace(kv->value));
  if (key->empty()) {
    return absl::InvalidArgumentError(
        "the key before '=' is empty; expected KEY=VALUE");
  }
  return absl::OkStatus();
}

absl::Status SetSettingsKey(JsonValue* settings, absl::string_view key,
                            absl::string_view value) {
  ZR_CHECK(settings != nullptr);
  if (!settings->is_object()) {
    return absl::InvalidArgumentError("the configuration is not a JSON object");
  }
  const std::vector<std::string> parts = absl::StrSplit(key, '.');
  // The fields the key names, up to the first component that is not one
  // (a DeepSpeed key of the table, or unknown).
  const FieldPath fields =
      ResolveFieldPath(Config::descriptor(), parts, FindFieldOrAlias);
  std::string section;  // canonical path of the current level
  std::string given;    // the key as given, up to the current level
  JsonValue* node = settings;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    const bool last = i + 1 == parts.size();
    given = JoinPath(given, part);
    if (part.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("empty component in key ", QuoteJsonString(key)));
    }
    const bool is_field = i < fields.fields.size();
    std::vector<std::string> equivalents = {part};
    if (is_field) {
      equivalents = EquivalentNames(section, fields.fields[i]->name());
      if (!last && fields.fields[i]->cpp_type() !=
                       google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) {
        return NotASection(given, key);
      }
    } else if (i == fields.fields.size()) {
      const DeepSpeedKey* entry = FindDeepSpeedKey(section, part);
      if (entry == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat(given, ": ", UnknownKeyMessage(section, part)));
      }
      if (!last && entry->kind != DeepSpeedKeyKind::kIgnored &&
          entry->kind != DeepSpeedKeyKind::kValueRule) {
        return NotASection(given, key);
      }
    }  // Else inside an ignored section: no schema below.
    if (last) {
      // The override replaces the key under any of its names.
      for (const std::string& name : equivalents) {
        if (name != part) node->Remove(name);
      }
      node->Set(part, OverrideValue(value));
      return absl::OkStatus();
    }
    // Descend into the section as the settings spell it, or create it.
    JsonValue* child = nullptr;
    for (const std::string& name : equivalents) {
      child = node->Find(name);
      if (child != nullptr) break;
    }
    if (child == nullptr) {
      child = &node->Set(part, JsonValue::Object());
    } else if (child->is_null()) {
      *child = JsonValue::Object();
    }
    if (!child->is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(
          given, " is ", JsonValue::KindName(child->kind()),
          " in the configuration, not a section; cannot set ", key));
    }
    node = child;
    if (is_field) section = JoinPath(section, fields.fields[i]->name());
  }
  return absl::OkStatus();
}

absl::Status ApplyOverrideList(JsonValue* settings,
                               absl::Span<const std::string> overrides) {
  std::vector<std::string> errors;
  for (const std::string& text : overrides) {
    std::string key, value;
    absl::Status status = SplitOverride(text, &key, &value);
    if (status.ok()) status = SetSettingsKey(settings, key, value);
    if (!status.ok()) {
      errors.push_back(absl::StrCat("override ", text, ": ", status.message()));
    }
  }
  if (errors.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(errors, "\n"));
}

}  // namespace config
}  // namespace zero3
