// Copyright 2026 The zero3 Authors.
//
// schema.h: which configuration keys are accepted where, and the facts about
// fields and values that the loader's messages quote.
//
// Built once from config.proto's descriptors and the DeepSpeed key table
// (deepspeed_keys.h); immutable afterwards, so thread-safe. Internal to the
// loader (config_loader.h) and its stages.

#ifndef ZERO3_CORE_CONFIG_SCHEMA_H_
#define ZERO3_CORE_CONFIG_SCHEMA_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "core/config/json.h"
#include "google/protobuf/descriptor.h"

namespace zero3 {
namespace config {

// AdamParams.betas when not given (repeated fields have no proto default).
inline constexpr double kDefaultBetas[] = {0.9, 0.999};

struct Schema {
  // Section path -> message type: "" -> Config, "zero_optimization" -> ...
  absl::flat_hash_map<std::string, const google::protobuf::Descriptor*>
      sections;
  absl::flat_hash_map<const google::protobuf::Descriptor*, std::string>
      section_of;
  // Names accepted directly in each section: fields, then table keys.
  absl::flat_hash_map<std::string, std::vector<std::string>> names;
  // Name -> every full path where it is accepted ("belongs under ...").
  absl::flat_hash_map<std::string, std::vector<std::string>> locations;
  // Every accepted full path, and its last component, for suggestions from
  // a section's subsections.
  std::vector<std::string> all_paths;
  std::vector<std::string> all_leaves;
};

// The schema of config.proto plus the DeepSpeed key table.
const Schema& GetSchema();

// "parent.key", or "key" at the top level.
std::string JoinPath(absl::string_view parent, absl::string_view key);

// Names at `section` that mean the same key as `canonical`: itself and its
// aliases.
std::vector<std::string> EquivalentNames(absl::string_view section,
                                         absl::string_view canonical);

// The field of `type` (a section of the schema) that `name` names: the field
// of that name, or the field an alias stands for; null for anything else.
const google::protobuf::FieldDescriptor* FindFieldOrAlias(
    const google::protobuf::Descriptor* type, absl::string_view name);

// Why `key` is not accepted in `section`, and the likely fix.
std::string UnknownKeyMessage(absl::string_view section, absl::string_view key);

// A value as it reads in a message: 1.5, the string "auto", true, an object.
// A long string is cut (QuoteShort).
std::string DescribeValue(const JsonValue& v);

// `s` as a JSON string for a message; beyond 40 characters, its first 37
// and its length: "aaaa..." (50000000 characters).
std::string QuoteShort(absl::string_view s);

// A field's default as JSON text: 500000000, 1.0, "none", [0.9, 0.999].
std::string DefaultText(const google::protobuf::FieldDescriptor* f);

// train_batch_size, train_micro_batch_size_per_gpu or
// gradient_accumulation_steps: derived from each other, never defaulted.
bool IsBatchKey(absl::string_view path);

// Keys where null means "not given", as in DeepSpeed (Optional fields).
bool NullMeansAbsent(absl::string_view path);

}  // namespace config
}  // namespace zero3

#endif  // ZERO3_CORE_CONFIG_SCHEMA_H_
