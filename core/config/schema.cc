// Copyright 2026 The zero3 Authors.

#include "core/config/schema.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/config/config.pb.h"
#include "core/config/deepspeed_keys.h"
#include "core/util/suggest.h"

namespace zero3 {
namespace config {
namespace {

using ::google::protobuf::Descriptor;
using ::google::protobuf::FieldDescriptor;

void Add(const std::string& section, const std::string& name, Schema* s) {
  const std::string path = JoinPath(section, name);
  s->names[section].push_back(name);
  s->locations[name].push_back(path);
  s->all_paths.push_back(path);
  s->all_leaves.push_back(name);
}

void AddMessage(const std::string& path, const Descriptor* d, Schema* s) {
  s->sections[path] = d;
  s->section_of[d] = path;
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    Add(path, f->name(), s);
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      AddMessage(JoinPath(path, f->name()), f->message_type(), s);
    }
  }
}

std::string Quote(absl::string_view s) { return QuoteJsonString(s); }

}  // namespace

const Schema& GetSchema() {
  static const Schema* const schema = [] {
    auto* s = new Schema;
    AddMessage("", Config::descriptor(), s);
    for (const DeepSpeedKey& key : DeepSpeedKeys()) {
      Add(std::string(key.parent), std::string(key.name), s);
    }
    return s;
  }();
  return *schema;
}

std::string JoinPath(absl::string_view parent, absl::string_view key) {
  if (parent.empty()) return std::string(key);
  return absl::StrCat(parent, ".", key);
}

std::vector<std::string> EquivalentNames(absl::string_view section,
                                         absl::string_view canonical) {
  std::vector<std::string> out = {std::string(canonical)};
  for (const DeepSpeedKey& key : DeepSpeedKeys()) {
    if (key.kind == DeepSpeedKeyKind::kAlias && key.parent == section &&
        key.target == canonical) {
      out.push_back(std::string(key.name));
    }
  }
  return out;
}

const FieldDescriptor* FindFieldOrAlias(const Descriptor* type,
                                        absl::string_view name) {
  if (const FieldDescriptor* f = type->FindFieldByName(std::string(name))) {
    return f;
  }
  const auto section = GetSchema().section_of.find(type);
  if (section == GetSchema().section_of.end()) return nullptr;
  const DeepSpeedKey* entry = FindDeepSpeedKey(section->second, name);
  if (entry == nullptr || entry->kind != DeepSpeedKeyKind::kAlias) {
    return nullptr;
  }
  return type->FindFieldByName(std::string(entry->target));
}

std::string UnknownKeyMessage(absl::string_view section,
                              absl::string_view key) {
  const Schema& schema = GetSchema();
  std::string where =
      section.empty() ? "the top level" : absl::StrCat("'", section, "'");
  // DeepSpeed forbids unknown keys inside its pydantic sections but ignores
  // them at the top level, which makes a misplaced top-level key silently
  // ineffective there.
  const std::string deepspeed_note =
      section.empty()
          ? " (DeepSpeed ignores unknown top-level keys without a word, so "
            "there this setting would silently have no effect)"
          : "";
  auto it = schema.locations.find(std::string(key));
  if (it != schema.locations.end()) {
    std::vector<std::string> paths = it->second;
    if (paths.size() > 4) paths.resize(4);
    return absl::StrCat("misplaced: ", Quote(key), " is not a key of ", where,
                        "; it belongs at ", absl::StrJoin(paths, " or "),
                        ". Move it there", deepspeed_note);
  }
  // Guesses stay inside the section and its subsections: a key of another
  // section with a similar name is another setting, not a misspelling. No key
  // is longer than kLongestKey characters, so a longer name has no near one.
  constexpr size_t kLongestKey = 64;
  auto names = schema.names.find(std::string(section));
  if (names != schema.names.end() && key.size() <= kLongestKey) {
    const std::string near = NearestName(key, names->second);
    if (!near.empty()) {
      return absl::StrCat("unknown key; did you mean ", Quote(near), "?",
                          deepspeed_note);
    }
  }
  // Then the keys of its subsections (a key written one level too high).
  if (key.size() <= kLongestKey) {
    const std::string prefix =
        section.empty() ? "" : absl::StrCat(section, ".");
    std::vector<std::string> leaves;
    std::vector<const std::string*> paths;
    for (size_t i = 0; i < schema.all_paths.size(); ++i) {
      if (absl::StartsWith(schema.all_paths[i], prefix)) {
        leaves.push_back(schema.all_leaves[i]);
        paths.push_back(&schema.all_paths[i]);
      }
    }
    const std::string near = NearestName(key, leaves);
    for (size_t i = 0; !near.empty() && i < leaves.size(); ++i) {
      if (leaves[i] == near) {
        return absl::StrCat("unknown key; did you mean ", *paths[i], "?",
                            deepspeed_note);
      }
    }
  }
  return absl::StrCat(
      "unknown key: not a DeepSpeed or zero3 key that zero3 "
      "knows (docs/config.md lists them)",
      deepspeed_note);
}

std::string DescribeValue(const JsonValue& v) {
  switch (v.kind()) {
    case JsonValue::Kind::kNull:
      return "null";
    case JsonValue::Kind::kBool:
      return v.bool_value() ? "true" : "false";
    case JsonValue::Kind::kNumber:
      return v.number_text();
    case JsonValue::Kind::kString:
      return absl::StrCat("the string ", QuoteShort(v.string_value()));
    case JsonValue::Kind::kArray:
      return "an array";
    case JsonValue::Kind::kObject:
      return "an object";
  }
  return "?";
}

std::string QuoteShort(absl::string_view s) {
  if (s.size() <= 40) return Quote(s);
  return absl::StrCat(Quote(absl::StrCat(s.substr(0, 37), "...")), " (",
                      s.size(), " characters)");
}

std::string DefaultText(const FieldDescriptor* f) {
  if (f->is_repeated()) return "[0.9, 0.999]";  // betas, the only one
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return absl::StrCat(f->default_value_int32());
    case FieldDescriptor::CPPTYPE_INT64:
      return absl::StrCat(f->default_value_int64());
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return FormatJsonDouble(f->default_value_double());
    case FieldDescriptor::CPPTYPE_BOOL:
      return f->default_value_bool() ? "true" : "false";
    case FieldDescriptor::CPPTYPE_STRING:
      return Quote(f->default_value_string());
    default:
      return "";
  }
}

bool IsBatchKey(absl::string_view path) {
  return path == "train_batch_size" ||
         path == "train_micro_batch_size_per_gpu" ||
         path == "gradient_accumulation_steps";
}

bool NullMeansAbsent(absl::string_view path) {
  // DeepSpeed's documentation writes number_checkpoints null.
  return IsBatchKey(path) || path == "zero_optimization.overlap_comm" ||
         path == "activation_checkpointing.number_checkpoints" ||
         absl::EndsWith(path, ".nvme_path");
}

}  // namespace config
}  // namespace zero3
