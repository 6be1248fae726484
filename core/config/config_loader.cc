// Copyright 2026 The zero3 Authors.

#include "core/config/config_loader.h"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/config/deepspeed_keys.h"
#include "core/util/check.h"
#include "core/util/status_macros.h"
#include "core/util/suggest.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/tokenizer.h"  // io::ErrorCollector
#include "google/protobuf/message.h"
#include "google/protobuf/text_format.h"

namespace zero3 {
namespace config {
namespace {

using ::google::protobuf::Descriptor;
using ::google::protobuf::FieldDescriptor;
using ::google::protobuf::Message;
using ::google::protobuf::Reflection;

constexpr double kDefaultBetas[] = {0.9, 0.999};

std::string JoinPath(absl::string_view parent, absl::string_view key) {
  if (parent.empty()) return std::string(key);
  return absl::StrCat(parent, ".", key);
}

std::string Quote(absl::string_view s) { return QuoteJsonString(s); }

// A value as it reads in a message: 1.5, "auto", true, an object.
std::string DescribeValue(const JsonValue& v) {
  switch (v.kind()) {
    case JsonValue::Kind::kNull:
      return "null";
    case JsonValue::Kind::kBool:
      return v.bool_value() ? "true" : "false";
    case JsonValue::Kind::kNumber:
      return v.number_text();
    case JsonValue::Kind::kString: {
      std::string s = v.string_value();
      if (s.size() > 40) s = absl::StrCat(s.substr(0, 37), "...");
      return absl::StrCat("the string ", Quote(s));
    }
    case JsonValue::Kind::kArray:
      return "an array";
    case JsonValue::Kind::kObject:
      return "an object";
  }
  return "?";
}

// ---------------------------------------------------------------------------
// The schema: which names are accepted where. Built once from config.proto's
// descriptors and the DeepSpeed key table.

struct Schema {
  // Section path -> message type: "" -> Config, "zero_optimization" -> ...
  absl::flat_hash_map<std::string, const Descriptor*> sections;
  absl::flat_hash_map<const Descriptor*, std::string> section_of;
  // Names accepted directly in each section: fields, then table keys.
  absl::flat_hash_map<std::string, std::vector<std::string>> names;
  // Name -> every full path where it is accepted ("belongs under ...").
  absl::flat_hash_map<std::string, std::vector<std::string>> locations;
  // Every accepted full path, and its last component, for suggestions
  // across sections.
  std::vector<std::string> all_paths;
  std::vector<std::string> all_leaves;

  void Add(const std::string& section, const std::string& name) {
    const std::string path = JoinPath(section, name);
    names[section].push_back(name);
    locations[name].push_back(path);
    all_paths.push_back(path);
    all_leaves.push_back(name);
  }

  void AddMessage(const std::string& path, const Descriptor* d) {
    sections[path] = d;
    section_of[d] = path;
    for (int i = 0; i < d->field_count(); ++i) {
      const FieldDescriptor* f = d->field(i);
      Add(path, f->name());
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        AddMessage(JoinPath(path, f->name()), f->message_type());
      }
    }
  }
};

const Schema& GetSchema() {
  static const Schema* const schema = [] {
    auto* s = new Schema;
    s->AddMessage("", Config::descriptor());
    for (const DeepSpeedKey& key : DeepSpeedKeys()) {
      s->Add(std::string(key.parent), std::string(key.name));
    }
    return s;
  }();
  return *schema;
}

// Names at `section` that mean the same key as `canonical`: itself and its
// aliases.
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

// Why `key` is not accepted in `section`, and the likely fix.
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
  auto names = schema.names.find(std::string(section));
  if (names != schema.names.end()) {
    const std::string near = NearestName(key, names->second);
    if (!near.empty()) {
      return absl::StrCat("unknown key; did you mean ", Quote(near), "?",
                          deepspeed_note);
    }
  }
  const std::string near_leaf = NearestName(key, schema.all_leaves);
  if (!near_leaf.empty()) {
    for (size_t i = 0; i < schema.all_leaves.size(); ++i) {
      if (schema.all_leaves[i] == near_leaf) {
        return absl::StrCat("unknown key; did you mean ", schema.all_paths[i],
                            "?", deepspeed_note);
      }
    }
  }
  return absl::StrCat(
      "unknown key: not a DeepSpeed or zero3 key that zero3 "
      "knows (docs/config.md lists them)",
      deepspeed_note);
}

// ---------------------------------------------------------------------------
// Errors and notices, in the order found.

class Diagnostics {
 public:
  void Error(const std::string& path, absl::string_view message) {
    std::string line = path;
    const auto it = positions_.find(path);
    if (it != positions_.end() && it->second.known()) {
      absl::StrAppend(&line, " (", FormatPosition(it->second), ")");
    }
    if (!line.empty()) line.append(": ");
    line.append(message.data(), message.size());
    errors_.push_back(std::move(line));
  }

  // An error about a value that could not be read: later checks of `path`
  // (and anything under it) are skipped, so one mistake gives one error.
  void ValueError(const std::string& path, absl::string_view message) {
    Error(path, message);
    poisoned_.insert(path);
  }

  // Skips later checks of `path` without reporting anything.
  void Poison(const std::string& path) { poisoned_.insert(path); }

  void Notice(const std::string& path, absl::string_view message) {
    notices_.push_back(path.empty() ? std::string(message)
                                    : absl::StrCat(path, ": ", message));
  }

  void SetPosition(const std::string& path, SourcePosition position) {
    if (position.known()) positions_[path] = position;
  }

  bool IsPoisoned(absl::string_view path) const {
    std::string prefix(path);
    while (true) {
      if (poisoned_.contains(prefix)) return true;
      const size_t dot = prefix.rfind('.');
      if (dot == std::string::npos) return false;
      prefix.resize(dot);
    }
  }

  // Records an error at `path` unless `ok` or the path is poisoned.
  void Check(bool ok, const std::string& path, absl::string_view message) {
    if (!ok && !IsPoisoned(path)) Error(path, message);
  }

  bool has_errors() const { return !errors_.empty(); }
  std::vector<std::string>& notices() { return notices_; }

  absl::Status ToStatus() const {
    if (errors_.empty()) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrJoin(errors_, "\n"));
  }

 private:
  std::vector<std::string> errors_;
  std::vector<std::string> notices_;
  absl::flat_hash_map<std::string, SourcePosition> positions_;
  absl::flat_hash_set<std::string> poisoned_;
};

// ---------------------------------------------------------------------------
// Field facts for messages.

// A field's default as JSON text: "the default is 500000000".
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

// Keys where null means "not given", as in DeepSpeed (Optional fields).
bool NullMeansAbsent(absl::string_view path) {
  return IsBatchKey(path) || path == "zero_optimization.overlap_comm" ||
         absl::EndsWith(path, ".nvme_path");
}

// ---------------------------------------------------------------------------
// JSON -> Config.

struct DeprecatedUse {
  std::string key;   // e.g. "cpu_offload"
  std::string path;  // e.g. "zero_optimization.cpu_offload"
  JsonValue value;
};

class Loader {
 public:
  explicit Loader(int64_t world_size) : world_size_(world_size) {}

  absl::StatusOr<LoadedConfig> Run(JsonValue settings) {
    Config config;
    if (!settings.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the configuration must be a JSON object ({...}), "
                       "found ",
                       DescribeValue(settings)));
    }
    ConvertSection(settings, "", &config);
    ApplyDeprecated(&config);
    NoticeExplicitSettings(&config);
    ResolveBatch(&config);
    FillDefaults(&config);
    ApplyFallbacks(&config);
    Validate(config, world_size_, &diag_);
    if (diag_.has_errors()) return diag_.ToStatus();
    LoadedConfig out;
    out.config = std::move(config);
    out.notices = std::move(diag_.notices());
    out.settings = std::move(settings);
    return out;
  }

  // Checks a resolved config; shared with ValidateConfig.
  static void Validate(const Config& config, int64_t world_size,
                       Diagnostics* diag);

 private:
  void ConvertSection(const JsonValue& object, const std::string& section,
                      Message* msg) {
    const Descriptor* d = msg->GetDescriptor();
    for (const JsonValue::Member& member : object.members()) {
      const std::string path = JoinPath(section, member.key);
      diag_.SetPosition(path, member.value.position());
      if (const FieldDescriptor* f = d->FindFieldByName(member.key)) {
        ConvertValue(member.value, path, f, msg);
        continue;
      }
      const DeepSpeedKey* key = FindDeepSpeedKey(section, member.key);
      if (key == nullptr) {
        diag_.SetPosition(path, member.key_position);
        diag_.ValueError(path, UnknownKeyMessage(section, member.key));
        continue;
      }
      switch (key->kind) {
        case DeepSpeedKeyKind::kAlias: {
          const std::string canonical_path = JoinPath(section, key->target);
          const JsonValue* canonical = object.Find(key->target);
          if (canonical != nullptr) {
            if (*canonical == member.value) {
              diag_.Notice(path,
                           absl::StrCat("another name for ", canonical_path,
                                        ", given with the same value; "
                                        "remove one of them"));
            } else {
              diag_.ValueError(
                  path, absl::StrCat("another name for ", canonical_path,
                                     ", which is also given, with a different "
                                     "value (",
                                     DescribeValue(member.value), " vs ",
                                     DescribeValue(*canonical), "); keep one"));
              diag_.Poison(canonical_path);
            }
            continue;
          }
          diag_.Notice(
              path, absl::StrCat("DeepSpeed's other name for ", canonical_path,
                                 "; read as ", canonical_path,
                                 " (printed under that name)"));
          diag_.SetPosition(canonical_path, member.value.position());
          const FieldDescriptor* f =
              d->FindFieldByName(std::string(key->target));
          ZR_CHECK(f != nullptr) << "alias of a missing field: " << path;
          // A section (bfloat16) is read under its canonical path, so that
          // the keys inside it are looked up in the right section; a scalar
          // keeps the name the user wrote in messages.
          if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
            ConvertValue(member.value, canonical_path, f, msg);
          } else {
            ConvertValue(member.value, path, f, msg);
            if (diag_.IsPoisoned(path)) diag_.Poison(canonical_path);
          }
          break;
        }
        case DeepSpeedKeyKind::kDeprecated:
          deprecated_.push_back(DeprecatedUse{member.key, path, member.value});
          break;
        case DeepSpeedKeyKind::kIgnored:
          diag_.Notice(path, key->note);
          break;
        case DeepSpeedKeyKind::kRejectedIfTrue:
          if (member.value.is_bool() && !member.value.bool_value()) {
            diag_.Notice(path, "false is what zero3 does; ignored");
          } else {
            diag_.ValueError(path, key->note);
          }
          break;
        case DeepSpeedKeyKind::kRejected:
          diag_.ValueError(path, key->note);
          break;
      }
    }
  }

  // Reports a value of the wrong type for field `f` at `path`.
  void TypeError(const JsonValue& value, const std::string& path,
                 const FieldDescriptor* f, absl::string_view expected) {
    TypeError(value, path, f->cpp_type(), expected,
              f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE
                  ? ""
                  : DefaultText(f));
  }

  // `default_text` is empty where there is no default worth naming.
  void TypeError(const JsonValue& value, const std::string& path,
                 FieldDescriptor::CppType type, absl::string_view expected,
                 const std::string& default_text) {
    const bool numeric = type == FieldDescriptor::CPPTYPE_INT32 ||
                         type == FieldDescriptor::CPPTYPE_INT64 ||
                         type == FieldDescriptor::CPPTYPE_DOUBLE;
    if (value.is_string()) {
      const std::string& s = value.string_value();
      if (s == "auto") {
        std::string fix = absl::StrCat("zero3 needs ", expected, " here");
        if (IsBatchKey(path)) {
          absl::StrAppend(&fix,
                          ", or remove the key to derive it from the "
                          "other batch sizes");
        } else if (!default_text.empty()) {
          absl::StrAppend(&fix, " (the default is ", default_text, ")");
        }
        diag_.ValueError(path, absl::StrCat("\"auto\" is a placeholder that "
                                            "only the Hugging Face Trainer "
                                            "fills in; ",
                                            fix));
        return;
      }
      double d = 0;
      const std::string lower = absl::AsciiStrToLower(s);
      if (numeric && (lower == "nan" || lower == "inf" || lower == "-inf" ||
                      lower == "infinity" || lower == "-infinity")) {
        diag_.ValueError(path, absl::StrCat("must be a finite number, found ",
                                            DescribeValue(value)));
        return;
      }
      if (numeric && absl::SimpleAtod(s, &d)) {
        diag_.ValueError(path, absl::StrCat("expected ", expected, ", found ",
                                            DescribeValue(value),
                                            "; write the number without "
                                            "quotes"));
        return;
      }
      if (type == FieldDescriptor::CPPTYPE_BOOL &&
          (lower == "true" || lower == "false")) {
        diag_.ValueError(path, absl::StrCat("expected true or false, found ",
                                            DescribeValue(value), "; write ",
                                            lower, " without quotes"));
        return;
      }
    }
    diag_.ValueError(path, absl::StrCat("expected ", expected, ", found ",
                                        DescribeValue(value)));
  }

  void ConvertValue(const JsonValue& value, const std::string& path,
                    const FieldDescriptor* f, Message* msg) {
    const Reflection* r = msg->GetReflection();
    if (value.is_null()) {
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE ||
          NullMeansAbsent(path)) {
        return;
      }
      diag_.ValueError(path, absl::StrCat("null is not a value for this key; "
                                          "remove the key to use the default "
                                          "(",
                                          DefaultText(f), ")"));
      return;
    }
    if (f->is_repeated()) {
      // betas, the only repeated field: numbers.
      if (!value.is_array()) {
        TypeError(value, path, f, "an array of two numbers [beta1, beta2]");
        return;
      }
      bool ok = true;
      for (size_t i = 0; i < value.array().size(); ++i) {
        const JsonValue& e = value.array()[i];
        if (!e.is_number()) {
          diag_.SetPosition(absl::StrCat(path, "[", i, "]"), e.position());
          diag_.Error(
              absl::StrCat(path, "[", i, "]"),
              absl::StrCat("expected a number, found ", DescribeValue(e)));
          ok = false;
        }
      }
      if (!ok) {
        diag_.Poison(path);
        return;
      }
      r->ClearField(msg, f);
      for (const JsonValue& e : value.array()) {
        r->AddDouble(msg, f, e.number_value());
      }
      return;
    }
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_MESSAGE:
        if (!value.is_object()) {
          TypeError(value, path, f, "an object {...}");
          return;
        }
        ConvertSection(value, path, r->MutableMessage(msg, f));
        return;
      case FieldDescriptor::CPPTYPE_INT32:
      case FieldDescriptor::CPPTYPE_INT64: {
        if (!value.is_number()) {
          TypeError(value, path, f, "an integer");
          return;
        }
        const absl::optional<int64_t> v = value.AsExactInt64();
        const double d = value.number_value();
        if (!v.has_value()) {
          if (std::floor(d) == d) {
            diag_.ValueError(path, absl::StrCat(value.number_text(),
                                                " is out of range for an "
                                                "integer"));
          } else {
            diag_.ValueError(path, absl::StrCat("expected an integer, found ",
                                                value.number_text()));
          }
          return;
        }
        if (f->cpp_type() == FieldDescriptor::CPPTYPE_INT32) {
          if (*v > std::numeric_limits<int32_t>::max() ||
              *v < std::numeric_limits<int32_t>::min()) {
            diag_.ValueError(path, absl::StrCat(value.number_text(),
                                                " is out of range for this "
                                                "key (at most 2147483647)"));
            return;
          }
          r->SetInt32(msg, f, static_cast<int32_t>(*v));
        } else {
          r->SetInt64(msg, f, *v);
        }
        return;
      }
      case FieldDescriptor::CPPTYPE_DOUBLE:
        if (!value.is_number()) {
          TypeError(value, path, f, "a number");
          return;
        }
        r->SetDouble(msg, f, value.number_value());
        return;
      case FieldDescriptor::CPPTYPE_BOOL:
        if (!value.is_bool()) {
          TypeError(value, path, f, "true or false");
          return;
        }
        r->SetBool(msg, f, value.bool_value());
        return;
      case FieldDescriptor::CPPTYPE_STRING:
        if (!value.is_string()) {
          TypeError(value, path, f, "a string");
          return;
        }
        r->SetString(msg, f, value.string_value());
        return;
      default:
        ZR_CHECK(false) << "config.proto field of unhandled type: "
                        << f->full_name();
    }
  }

  // Reads a deprecated key's boolean value; false on a type error.
  bool DeprecatedBool(const DeprecatedUse& use, bool* out) {
    if (use.value.is_bool()) {
      *out = use.value.bool_value();
      return true;
    }
    TypeError(use.value, use.path, FieldDescriptor::CPPTYPE_BOOL,
              "true or false", "");
    return false;
  }

  const DeprecatedUse* FindDeprecated(absl::string_view key) const {
    for (const DeprecatedUse& use : deprecated_) {
      if (use.key == key) return &use;
    }
    return nullptr;
  }

  // cpu_offload / cpu_offload_param(s): true means device "cpu", false
  // "none". `owner` holds the device field at `device_path`.
  void ApplyDeviceKey(const DeprecatedUse& use, Message* owner,
                      const std::string& device_path) {
    bool on = false;
    if (!DeprecatedBool(use, &on)) return;
    const std::string wanted = on ? "cpu" : "none";
    const FieldDescriptor* f =
        owner->GetDescriptor()->FindFieldByName("device");
    const Reflection* r = owner->GetReflection();
    if (diag_.IsPoisoned(device_path)) return;
    if (r->HasField(*owner, f)) {
      const std::string current = r->GetString(*owner, f);
      const auto setter = set_by_.find(device_path);
      if (current == wanted) {
        if (setter == set_by_.end()) {
          diag_.Notice(use.path,
                       absl::StrCat("deprecated, and repeats ", device_path,
                                    " = ", Quote(current),
                                    "; remove it (DeepSpeed rejects the two "
                                    "together)"));
        } else {
          diag_.Notice(use.path,
                       absl::StrCat("deprecated, and repeats ", setter->second,
                                    "; remove both and write ", device_path,
                                    " = ", Quote(current)));
        }
        return;
      }
      const std::string other =
          setter != set_by_.end()
              ? setter->second
              : absl::StrCat(device_path, " = ", Quote(current));
      diag_.ValueError(
          use.path, absl::StrCat(on ? "true" : "false", " (deprecated: means ",
                                 device_path, " = ", Quote(wanted),
                                 ") contradicts ", other, "; remove ", use.path,
                                 " and keep ", device_path));
      return;
    }
    r->SetString(owner, f, wanted);
    set_by_[device_path] = absl::StrCat(use.path, ": ", on ? "true" : "false");
    diag_.Notice(use.path,
                 absl::StrCat("deprecated; read as ", device_path, " = ",
                              Quote(wanted), ". Write that instead",
                              on ? "" : " (or nothing: it is the default)"));
  }

  void ApplyDeprecated(Config* config) {
    if (deprecated_.empty()) return;
    ZeroOptimization* zero = config->mutable_zero_optimization();
    // The device keys first: cpu_offload_use_pin_memory applies to the
    // offload sections they enable.
    if (const DeprecatedUse* use = FindDeprecated("cpu_offload")) {
      ApplyDeviceKey(*use, zero->mutable_offload_optimizer(),
                     "zero_optimization.offload_optimizer.device");
    }
    for (const char* key : {"cpu_offload_param", "cpu_offload_params"}) {
      if (const DeprecatedUse* use = FindDeprecated(key)) {
        ApplyDeviceKey(*use, zero->mutable_offload_param(),
                       "zero_optimization.offload_param.device");
      }
    }
    if (const DeprecatedUse* use =
            FindDeprecated("cpu_offload_use_pin_memory")) {
      ApplyPinMemoryKey(*use, zero);
    }
    if (const DeprecatedUse* use =
            FindDeprecated("stage3_gather_fp16_weights_on_model_save")) {
      bool on = false;
      const std::string target =
          "zero_optimization.stage3_gather_16bit_weights_on_model_save";
      if (DeprecatedBool(*use, &on) && !diag_.IsPoisoned(target)) {
        if (zero->has_stage3_gather_16bit_weights_on_model_save()) {
          if (zero->stage3_gather_16bit_weights_on_model_save() == on) {
            diag_.Notice(use->path, absl::StrCat("deprecated, and repeats ",
                                                 target, "; remove it"));
          } else {
            diag_.ValueError(
                use->path,
                absl::StrCat(on ? "true" : "false",
                             " (deprecated) contradicts ", target, " = ",
                             on ? "false" : "true", "; remove ", use->path,
                             " and keep ", target));
          }
        } else {
          zero->set_stage3_gather_16bit_weights_on_model_save(on);
          diag_.Notice(use->path, absl::StrCat("deprecated; read as ", target,
                                               " = ", on ? "true" : "false",
                                               ". Write that instead"));
        }
      }
    }
  }

  // cpu_offload_use_pin_memory sets pin_memory of every enabled offload
  // section. DeepSpeed only logs a warning and drops the value, so since its
  // pin_memory default became true an explicit false there silently pins;
  // here it is honoured.
  void ApplyPinMemoryKey(const DeprecatedUse& use, ZeroOptimization* zero) {
    bool pin = false;
    if (!DeprecatedBool(use, &pin)) return;
    struct Section {
      const char* path;
      bool enabled;
      bool has_pin;
      bool current;
      std::function<void(bool)> set;
    };
    OffloadOptimizer* opt = zero->mutable_offload_optimizer();
    OffloadParam* param = zero->mutable_offload_param();
    const Section sections[] = {
        {"zero_optimization.offload_optimizer",
         opt->has_device() && opt->device() != "none", opt->has_pin_memory(),
         opt->pin_memory(), [opt](bool v) { opt->set_pin_memory(v); }},
        {"zero_optimization.offload_param",
         param->has_device() && param->device() != "none",
         param->has_pin_memory(), param->pin_memory(),
         [param](bool v) { param->set_pin_memory(v); }},
    };
    const char* value = pin ? "true" : "false";
    bool any = false;
    for (const Section& s : sections) {
      if (!s.enabled) continue;
      any = true;
      const std::string pin_path = absl::StrCat(s.path, ".pin_memory");
      if (diag_.IsPoisoned(pin_path)) continue;
      if (s.has_pin) {
        if (s.current == pin) {
          diag_.Notice(use.path,
                       absl::StrCat("deprecated, and repeats ", pin_path, " = ",
                                    value, "; remove it"));
        } else {
          diag_.ValueError(
              use.path,
              absl::StrCat(value, " (deprecated: means ", pin_path, " = ",
                           value, ") contradicts ", pin_path, " = ",
                           s.current ? "true" : "false", "; remove ", use.path,
                           " and keep ", pin_path));
        }
        continue;
      }
      s.set(pin);
      diag_.Notice(
          use.path,
          absl::StrCat(
              "deprecated; read as ", pin_path, " = ", value,
              ". Write that instead",
              pin ? ""
                  : "; DeepSpeed ignores this key and would pin host memory "
                    "(its pin_memory default is true)"));
    }
    if (!any) {
      diag_.Notice(use.path,
                   "deprecated, and has no effect: no offload section is "
                   "enabled (it sets pin_memory of offload_optimizer and "
                   "offload_param); remove it");
    }
  }

  // Notices that depend on what was given explicitly, before defaults hide
  // it.
  void NoticeExplicitSettings(Config* config) {
    const ZeroOptimization& zero = config->zero_optimization();
    if (!zero.has_stage() && !diag_.IsPoisoned("zero_optimization.stage")) {
      diag_.Notice("zero_optimization.stage",
                   "not given; zero3 runs ZeRO stage 3 (DeepSpeed's default "
                   "would be 0, no partitioning)");
    }
    const OffloadOptimizer& opt = zero.offload_optimizer();
    const OffloadParam& param = zero.offload_param();
    const std::string nvme_only =
        "used by NVMe offload only, which zero3 does not implement; ignored";
    const std::string o = "zero_optimization.offload_optimizer.";
    const std::string p = "zero_optimization.offload_param.";
    if (opt.has_nvme_path()) diag_.Notice(o + "nvme_path", nvme_only);
    if (opt.has_buffer_count()) diag_.Notice(o + "buffer_count", nvme_only);
    if (opt.has_pipeline_read()) diag_.Notice(o + "pipeline_read", nvme_only);
    if (opt.has_pipeline_write()) {
      diag_.Notice(o + "pipeline_write", nvme_only);
    }
    if (opt.has_fast_init()) diag_.Notice(o + "fast_init", nvme_only);
    if (param.has_nvme_path()) diag_.Notice(p + "nvme_path", nvme_only);
    if (param.has_buffer_count()) diag_.Notice(p + "buffer_count", nvme_only);
    if (param.has_buffer_size()) diag_.Notice(p + "buffer_size", nvme_only);
    if (param.has_max_in_cpu()) diag_.Notice(p + "max_in_cpu", nvme_only);
    if (zero.stage3_gather_16bit_weights_on_model_save()) {
      diag_.Notice(
          "zero_optimization.stage3_gather_16bit_weights_on_model_save",
          "zero3 does not save model checkpoints yet; kept in the "
          "configuration, no effect for now");
    }
    // Optimizer type: case-insensitive as in DeepSpeed, printed canonically.
    if (config->has_optimizer() && config->optimizer().has_type()) {
      const std::string lower =
          absl::AsciiStrToLower(config->optimizer().type());
      if (lower == "adam") config->mutable_optimizer()->set_type("Adam");
      if (lower == "adamw") config->mutable_optimizer()->set_type("AdamW");
    }
    const Optimizer& optimizer = config->optimizer();
    if (optimizer.type() == "AdamW" && optimizer.params().has_adam_w_mode() &&
        !optimizer.params().adam_w_mode()) {
      diag_.Notice("optimizer.params.adam_w_mode",
                   "false has no effect with type \"AdamW\", which always "
                   "decouples weight decay (as in DeepSpeed); read as true. "
                   "For L2 weight decay, use type \"Adam\" with adam_w_mode "
                   "false");
      config->mutable_optimizer()->mutable_params()->set_adam_w_mode(true);
    }
  }

  // Derives the batch triple as DeepSpeed's _set_batch_related_parameters
  // does, then checks it.
  void ResolveBatch(Config* config) {
    for (const char* key :
         {"train_batch_size", "train_micro_batch_size_per_gpu",
          "gradient_accumulation_steps"}) {
      if (diag_.IsPoisoned(key)) return;
    }
    const int64_t ws = world_size_;
    const bool has_tb = config->has_train_batch_size();
    const bool has_mb = config->has_train_micro_batch_size_per_gpu();
    const bool has_ga = config->has_gradient_accumulation_steps();
    bool positive = true;
    auto check_positive = [&](bool has, int64_t v, const char* key) {
      if (has && v <= 0) {
        diag_.ValueError(key, absl::StrCat("must be at least 1, found ", v));
        positive = false;
      }
    };
    check_positive(has_tb, config->train_batch_size(), "train_batch_size");
    check_positive(has_mb, config->train_micro_batch_size_per_gpu(),
                   "train_micro_batch_size_per_gpu");
    check_positive(has_ga, config->gradient_accumulation_steps(),
                   "gradient_accumulation_steps");
    if (!positive) return;
    int64_t tb = config->train_batch_size();
    int64_t mb = config->train_micro_batch_size_per_gpu();
    int64_t ga = config->gradient_accumulation_steps();
    bool overflow = false;
    // Integer division rounds down, as DeepSpeed's does; the check below
    // reports a remainder.
    if (has_tb && has_mb && has_ga) {
      // All given: nothing to derive.
    } else if (has_tb && has_mb) {
      ga = tb / mb / ws;
    } else if (has_tb && has_ga) {
      mb = tb / ws / ga;
    } else if (has_mb && has_ga) {
      overflow = __builtin_mul_overflow(mb, ga, &tb) ||
                 __builtin_mul_overflow(tb, ws, &tb);
    } else if (has_tb) {
      ga = 1;
      mb = tb / ws;
    } else if (has_mb) {
      ga = 1;
      overflow = __builtin_mul_overflow(mb, ws, &tb);
    } else {
      // DeepSpeed requires train_batch_size or the micro-batch size; zero3
      // defaults to one sample per rank per micro-batch.
      mb = 1;
      if (!has_ga) ga = 1;
      overflow = __builtin_mul_overflow(ga, ws, &tb);
      diag_.Notice("train_micro_batch_size_per_gpu",
                   absl::StrCat(has_ga ? "not given (nor train_batch_size)"
                                       : "no batch size given",
                                "; using train_micro_batch_size_per_gpu 1",
                                has_ga ? "" : ", gradient_accumulation_steps 1",
                                " and train_batch_size ", tb,
                                " (DeepSpeed requires train_batch_size or "
                                "train_micro_batch_size_per_gpu)"));
    }
    if (overflow) {
      diag_.ValueError("train_batch_size",
                       "the batch sizes multiply to more than 2^63; use "
                       "smaller values");
      return;
    }
    config->set_train_batch_size(tb);
    config->set_train_micro_batch_size_per_gpu(mb);
    config->set_gradient_accumulation_steps(ga);
    int64_t product = 0;
    const bool product_overflow = __builtin_mul_overflow(mb, ga, &product) ||
                                  __builtin_mul_overflow(product, ws, &product);
    if (product_overflow || product != tb || mb <= 0 || ga <= 0) {
      auto shown = [](int64_t v, bool given) {
        return absl::StrCat(v, given ? "" : " (derived)");
      };
      diag_.ValueError(
          "train_batch_size",
          absl::StrCat(
              "batch sizes are inconsistent: train_batch_size ",
              shown(tb, has_tb), " must equal train_micro_batch_size_per_gpu ",
              shown(mb, has_mb), " x gradient_accumulation_steps ",
              shown(ga, has_ga), " x data-parallel size ", ws, " = ",
              product_overflow ? std::string("(overflow)")
                               : absl::StrCat(product),
              ". Choose values whose product is train_batch_size, or give "
              "fewer of them and let zero3 derive the rest"));
    }
  }

  // Sets every unset field to its default, recursively.
  static void FillDefaults(Message* msg) {
    const Descriptor* d = msg->GetDescriptor();
    const Reflection* r = msg->GetReflection();
    for (int i = 0; i < d->field_count(); ++i) {
      const FieldDescriptor* f = d->field(i);
      if (f->is_repeated()) {
        if (f->name() == "betas" && r->FieldSize(*msg, f) == 0) {
          for (double b : kDefaultBetas) r->AddDouble(msg, f, b);
        }
        continue;
      }
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        FillDefaults(r->MutableMessage(msg, f));
        continue;
      }
      if (r->HasField(*msg, f)) continue;
      if (d == Config::descriptor() && IsBatchKey(f->name())) continue;
      switch (f->cpp_type()) {
        case FieldDescriptor::CPPTYPE_INT32:
          r->SetInt32(msg, f, f->default_value_int32());
          break;
        case FieldDescriptor::CPPTYPE_INT64:
          r->SetInt64(msg, f, f->default_value_int64());
          break;
        case FieldDescriptor::CPPTYPE_DOUBLE:
          r->SetDouble(msg, f, f->default_value_double());
          break;
        case FieldDescriptor::CPPTYPE_BOOL:
          r->SetBool(msg, f, f->default_value_bool());
          break;
        case FieldDescriptor::CPPTYPE_STRING:
          // nvme_path has no default: leave it unset rather than "".
          if (f->has_default_value()) {
            r->SetString(msg, f, f->default_value_string());
          }
          break;
        default:
          ZR_CHECK(false) << "config.proto field of unhandled type: "
                          << f->full_name();
      }
    }
  }

  // Where a DeepSpeed value names something zero3 does not implement, use
  // the nearest thing it does, and say so.
  void ApplyFallbacks(Config* config) {
    ZeroOptimization* zero = config->mutable_zero_optimization();
    if (zero->offload_optimizer().device() == "nvme") {
      diag_.Notice("zero_optimization.offload_optimizer.device",
                   "\"nvme\": NVMe offload is not implemented; the optimizer "
                   "state is offloaded to host memory (\"cpu\") instead, "
                   "which needs host RAM for the fp32 master weights, "
                   "gradients and Adam moments (16 bytes per parameter, "
                   "divided by the data-parallel size)");
      zero->mutable_offload_optimizer()->set_device("cpu");
    }
    if (zero->offload_param().device() == "nvme") {
      diag_.Notice("zero_optimization.offload_param.device",
                   "\"nvme\": NVMe offload is not implemented; parameters "
                   "are offloaded to host memory (\"cpu\") instead");
      zero->mutable_offload_param()->set_device("cpu");
    }
    const double ratio = zero->offload_optimizer().ratio();
    if (ratio >= 0 && ratio < 1) {
      diag_.Notice("zero_optimization.offload_optimizer.ratio",
                   absl::StrCat(FormatJsonDouble(ratio),
                                ": partial optimizer offload is not "
                                "implemented; all sub-groups are offloaded "
                                "(ratio 1.0)"));
      zero->mutable_offload_optimizer()->set_ratio(1.0);
    }
    if (zero->offload_optimizer().device() == "cpu" &&
        !zero->offload_optimizer().pin_memory() &&
        config->zero3().grad_offload() == "async") {
      diag_.Notice("zero3.grad_offload",
                   "\"async\" with offload_optimizer.pin_memory false: a "
                   "copy into pageable host memory blocks the host thread "
                   "until it completes, so the gradient copies will not "
                   "overlap the backward pass (see docs/config.md)");
    }
  }

  int64_t world_size_;
  Diagnostics diag_;
  std::vector<DeprecatedUse> deprecated_;
  // Target path -> the deprecated key that set it, for contradictions
  // between two deprecated keys.
  absl::flat_hash_map<std::string, std::string> set_by_;
};

// Value checks on a resolved config.
void Loader::Validate(const Config& config, int64_t world_size,
                      Diagnostics* diag) {
  auto nonneg_int = [&](int64_t v, const std::string& path,
                        absl::string_view what) {
    diag->Check(v >= 0, path,
                absl::StrCat("must be >= 0, found ", v, " (", what, ")"));
  };
  auto finite = [&](double v, const std::string& path) {
    if (!std::isfinite(v)) {
      diag->Check(false, path,
                  absl::StrCat("must be a finite number, found ", v));
      return false;
    }
    return true;
  };

  // Batch sizes (already derived and checked by the loader's ResolveBatch,
  // which poisons them on error).
  if (!diag->IsPoisoned("train_batch_size") &&
      !diag->IsPoisoned("train_micro_batch_size_per_gpu") &&
      !diag->IsPoisoned("gradient_accumulation_steps")) {
    const int64_t tb = config.train_batch_size();
    const int64_t mb = config.train_micro_batch_size_per_gpu();
    const int64_t ga = config.gradient_accumulation_steps();
    if (world_size < 1) {
      diag->Error("", absl::StrCat("the data-parallel size (world size) must "
                                   "be at least 1, found ",
                                   world_size));
    } else if (tb <= 0 || mb <= 0 || ga <= 0) {
      diag->Error("train_batch_size",
                  absl::StrCat("batch sizes must be at least 1, found "
                               "train_batch_size ",
                               tb, ", train_micro_batch_size_per_gpu ", mb,
                               ", gradient_accumulation_steps ", ga));
    } else {
      int64_t product = 0;
      const bool overflow =
          __builtin_mul_overflow(mb, ga, &product) ||
          __builtin_mul_overflow(product, world_size, &product);
      if (overflow || product != tb) {
        diag->Error("train_batch_size",
                    absl::StrCat("batch sizes are inconsistent: "
                                 "train_batch_size ",
                                 tb,
                                 " must equal train_micro_batch_size_per_"
                                 "gpu ",
                                 mb, " x gradient_accumulation_steps ", ga,
                                 " x data-parallel size ", world_size));
      }
    }
  }

  if (finite(config.gradient_clipping(), "gradient_clipping")) {
    diag->Check(config.gradient_clipping() >= 0, "gradient_clipping",
                absl::StrCat("must be >= 0 (0 disables clipping), found ",
                             FormatJsonDouble(config.gradient_clipping())));
  }
  diag->Check(!(config.bf16().enabled() && config.fp16().enabled()),
              "fp16.enabled",
              "bf16.enabled and fp16.enabled are both true; enable at most "
              "one of them");

  // fp16 loss scaling.
  const Fp16& fp16 = config.fp16();
  if (finite(fp16.loss_scale(), "fp16.loss_scale")) {
    diag->Check(fp16.loss_scale() >= 0, "fp16.loss_scale",
                absl::StrCat("must be >= 0 (0 selects dynamic loss scaling), "
                             "found ",
                             FormatJsonDouble(fp16.loss_scale())));
  }
  diag->Check(
      fp16.initial_scale_power() >= 0 && fp16.initial_scale_power() <= 127,
      "fp16.initial_scale_power",
      absl::StrCat("must be in [0, 127] (the initial scale "
                   "2^initial_scale_power must be a finite fp32 "
                   "number), found ",
                   fp16.initial_scale_power()));
  // As DeepSpeed, these are checked only where dynamic scaling uses them.
  if (fp16.enabled() && fp16.loss_scale() == 0) {
    diag->Check(fp16.loss_scale_window() >= 1, "fp16.loss_scale_window",
                absl::StrCat("must be >= 1 with dynamic loss scaling, found ",
                             fp16.loss_scale_window()));
    diag->Check(fp16.min_loss_scale() >= 1, "fp16.min_loss_scale",
                absl::StrCat("must be >= 1 with dynamic loss scaling, found ",
                             fp16.min_loss_scale()));
    diag->Check(fp16.hysteresis() >= 1, "fp16.hysteresis",
                absl::StrCat("must be >= 1 with dynamic loss scaling, found ",
                             fp16.hysteresis()));
  }

  // Optimizer.
  const Optimizer& optimizer = config.optimizer();
  if (optimizer.type() != "Adam" && optimizer.type() != "AdamW") {
    const std::string near =
        NearestName(optimizer.type(), {std::string("Adam"), "AdamW"});
    diag->Check(false, "optimizer.type",
                absl::StrCat(Quote(optimizer.type()),
                             " is not implemented: zero3 implements \"Adam\" "
                             "and \"AdamW\"",
                             near.empty() ? ""
                                          : absl::StrCat("; did you mean ",
                                                         Quote(near), "?")));
  }
  const AdamParams& params = optimizer.params();
  if (finite(params.lr(), "optimizer.params.lr")) {
    diag->Check(
        params.lr() >= 0, "optimizer.params.lr",
        absl::StrCat("must be >= 0, found ", FormatJsonDouble(params.lr())));
  }
  if (finite(params.eps(), "optimizer.params.eps")) {
    diag->Check(params.eps() > 0, "optimizer.params.eps",
                absl::StrCat("must be > 0 (it keeps the update's denominator "
                             "away from zero), found ",
                             FormatJsonDouble(params.eps())));
  }
  if (finite(params.weight_decay(), "optimizer.params.weight_decay")) {
    diag->Check(params.weight_decay() >= 0, "optimizer.params.weight_decay",
                absl::StrCat("must be >= 0, found ",
                             FormatJsonDouble(params.weight_decay())));
  }
  if (params.betas_size() != 2) {
    diag->Check(false, "optimizer.params.betas",
                absl::StrCat("needs exactly two values [beta1, beta2], such "
                             "as [0.9, 0.999]; found ",
                             params.betas_size()));
  } else {
    for (int i = 0; i < 2; ++i) {
      const double b = params.betas(i);
      diag->Check(std::isfinite(b) && b >= 0 && b < 1, "optimizer.params.betas",
                  absl::StrCat("beta", i + 1, " must be in [0, 1), found ",
                               std::isfinite(b) ? FormatJsonDouble(b)
                                                : absl::StrCat(b)));
    }
  }

  // ZeRO.
  const ZeroOptimization& zero = config.zero_optimization();
  diag->Check(
      zero.stage() == 3, "zero_optimization.stage",
      absl::StrCat("zero3 implements ZeRO stage 3 only, found ", zero.stage(),
                   "; set \"stage\": 3 or remove the key (zero3's "
                   "default is 3)"));
  const std::string z = "zero_optimization.";
  nonneg_int(zero.reduce_bucket_size(), z + "reduce_bucket_size",
             "elements per gradient bucket");
  nonneg_int(zero.sub_group_size(), z + "sub_group_size",
             "elements per optimizer sub-group");
  nonneg_int(zero.stage3_prefetch_bucket_size(),
             z + "stage3_prefetch_bucket_size",
             "elements to prefetch; 0 disables prefetching");
  nonneg_int(zero.stage3_param_persistence_threshold(),
             z + "stage3_param_persistence_threshold", "elements");
  nonneg_int(zero.stage3_model_persistence_threshold(),
             z + "stage3_model_persistence_threshold", "elements");
  nonneg_int(zero.stage3_max_live_parameters(),
             z + "stage3_max_live_parameters", "elements");
  nonneg_int(zero.stage3_max_reuse_distance(), z + "stage3_max_reuse_distance",
             "elements; 0 releases parameters right after use");

  auto check_device = [&](const std::string& device, const std::string& path) {
    if (device == "none" || device == "cpu") return;
    if (device == "nvme") {
      diag->Check(false, path,
                  "\"nvme\": NVMe offload is not implemented; use \"cpu\"");
      return;
    }
    const std::string near =
        NearestName(device, {std::string("none"), "cpu", "nvme"});
    diag->Check(
        false, path,
        absl::StrCat(
            "must be \"none\", \"cpu\" or \"nvme\", found ", Quote(device),
            near.empty() ? ""
                         : absl::StrCat("; did you mean ", Quote(near), "?")));
  };
  const OffloadOptimizer& opt = zero.offload_optimizer();
  const std::string o = z + "offload_optimizer.";
  check_device(opt.device(), o + "device");
  nonneg_int(opt.buffer_count(), o + "buffer_count", "NVMe buffers");
  if (finite(opt.ratio(), o + "ratio")) {
    if (opt.ratio() < 0 || opt.ratio() > 1) {
      diag->Check(false, o + "ratio",
                  absl::StrCat("must be in [0, 1], found ",
                               FormatJsonDouble(opt.ratio())));
    } else {
      diag->Check(opt.ratio() == 1, o + "ratio",
                  "partial optimizer offload (ratio < 1) is not implemented; "
                  "use 1.0");
    }
  }
  const OffloadParam& param = zero.offload_param();
  const std::string p = z + "offload_param.";
  check_device(param.device(), p + "device");
  nonneg_int(param.buffer_count(), p + "buffer_count", "NVMe buffers");
  nonneg_int(param.buffer_size(), p + "buffer_size", "NVMe buffer elements");
  nonneg_int(param.max_in_cpu(), p + "max_in_cpu", "elements");

  // zero3's own section.
  const Zero3& zero3 = config.zero3();
  if (zero3.grad_offload() != "async" && zero3.grad_offload() != "blocking") {
    const std::string near =
        NearestName(zero3.grad_offload(), {std::string("async"), "blocking"});
    diag->Check(false, "zero3.grad_offload",
                absl::StrCat("must be \"async\" or \"blocking\", found ",
                             Quote(zero3.grad_offload()),
                             near.empty() ? ""
                                          : absl::StrCat("; did you mean ",
                                                         Quote(near), "?")));
  }
  diag->Check(zero3.optimizer_threads() >= 0, "zero3.optimizer_threads",
              absl::StrCat("must be >= 0 (0 uses every core of the rank), "
                           "found ",
                           zero3.optimizer_threads()));
}

// ---------------------------------------------------------------------------
// Config -> JSON.

JsonValue DoubleAsJson(double v) {
  // A hand-built config may hold a non-finite double; print it as a string
  // so that it reads back as an error instead of aborting here.
  if (!std::isfinite(v)) {
    return JsonValue::String(std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"));
  }
  return JsonValue::Double(v);
}

// Field `f` of `msg` (element `index` of a repeated field) as JSON.
JsonValue FieldValueAsJson(const Message& msg, const FieldDescriptor* f,
                           int index = -1) {
  const Reflection* r = msg.GetReflection();
  const bool rep = index >= 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return JsonValue::Int(rep ? r->GetRepeatedInt32(msg, f, index)
                                : r->GetInt32(msg, f));
    case FieldDescriptor::CPPTYPE_INT64:
      return JsonValue::Int(rep ? r->GetRepeatedInt64(msg, f, index)
                                : r->GetInt64(msg, f));
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return DoubleAsJson(rep ? r->GetRepeatedDouble(msg, f, index)
                              : r->GetDouble(msg, f));
    case FieldDescriptor::CPPTYPE_BOOL:
      return JsonValue::Bool(rep ? r->GetRepeatedBool(msg, f, index)
                                 : r->GetBool(msg, f));
    case FieldDescriptor::CPPTYPE_STRING:
      return JsonValue::String(rep ? r->GetRepeatedString(msg, f, index)
                                   : r->GetString(msg, f));
    default:
      ZR_CHECK(false) << "config.proto field of unhandled type: "
                      << f->full_name();
  }
  return JsonValue();
}

// All fields (`only_set` false) or only the fields set (true).
JsonValue MessageToJson(const Message& msg, bool only_set) {
  JsonValue out = JsonValue::Object();
  const Descriptor* d = msg.GetDescriptor();
  const Reflection* r = msg.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (f->is_repeated()) {
      const int n = r->FieldSize(msg, f);
      if (only_set && n == 0) continue;
      JsonValue array = JsonValue::Array();
      if (n == 0 && f->name() == "betas") {
        for (double b : kDefaultBetas) array.Append(JsonValue::Double(b));
      }
      for (int k = 0; k < n; ++k) array.Append(FieldValueAsJson(msg, f, k));
      out.Set(f->name(), std::move(array));
      continue;
    }
    const bool has = r->HasField(msg, f);
    if (only_set && !has) continue;
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      out.Set(f->name(), MessageToJson(r->GetMessage(msg, f), only_set));
      continue;
    }
    // String fields without a default (nvme_path) are printed only when set.
    if (!has && f->cpp_type() == FieldDescriptor::CPPTYPE_STRING &&
        !f->has_default_value()) {
      continue;
    }
    // Unset batch sizes (an unresolved config) are printed only when set.
    if (!has && d == Config::descriptor() && IsBatchKey(f->name())) continue;
    out.Set(f->name(), FieldValueAsJson(msg, f));
  }
  return out;
}

// ---------------------------------------------------------------------------
// Text format.

class TextErrorCollector : public ::google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, ::google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    errors.push_back(absl::StrCat("line ", line + 1, ", column ", column + 1,
                                  ": ", Improve(message)));
  }
  void AddWarning(int, ::google::protobuf::io::ColumnNumber,
                  const std::string&) override {}

  std::vector<std::string> errors;

 private:
  // Adds a suggestion to protobuf's unknown-field message:
  //   Message type "zero3.config.ZeroOptimization" has no field named "x".
  static std::string Improve(const std::string& message) {
    static constexpr absl::string_view kType = "Message type \"";
    static constexpr absl::string_view kField = "has no field named \"";
    const absl::string_view m = message;
    const size_t t = m.find(kType);
    const size_t f = m.find(kField);
    if (t == m.npos || f == m.npos) return message;
    const size_t t_end = m.find('"', t + kType.size());
    const size_t f_end = m.find('"', f + kField.size());
    if (t_end == m.npos || f_end == m.npos) return message;
    const std::string type(
        m.substr(t + kType.size(), t_end - t - kType.size()));
    const std::string field(
        m.substr(f + kField.size(), f_end - f - kField.size()));
    const Descriptor* d =
        Config::descriptor()->file()->pool()->FindMessageTypeByName(type);
    if (d == nullptr) return message;
    const Schema& schema = GetSchema();
    auto section = schema.section_of.find(d);
    if (section == schema.section_of.end()) return message;
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
    std::vector<std::string> names;
    for (int i = 0; i < d->field_count(); ++i) {
      names.push_back(d->field(i)->name());
    }
    const std::string near = NearestName(field, names);
    if (!near.empty()) {
      return absl::StrCat(message, " Did you mean \"", near, "\"?");
    }
    return absl::StrCat(message, " (fields of ", where, ": ",
                        absl::StrJoin(names, ", "), ")");
  }
};

absl::StatusOr<JsonValue> ParseTextProto(absl::string_view text) {
  Config config;
  TextErrorCollector collector;
  ::google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&collector);
  if (!parser.ParseFromString(std::string(text), &config)) {
    if (collector.errors.empty()) {
      collector.errors.push_back("malformed text-format configuration");
    }
    return absl::InvalidArgumentError(absl::StrJoin(collector.errors, "\n"));
  }
  return MessageToJson(config, /*only_set=*/true);
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

absl::Status ApplyOverrideList(JsonValue* settings,
                               absl::Span<const std::string> overrides) {
  std::vector<std::string> errors;
  for (const std::string& text : overrides) {
    std::string key, value;
    absl::Status status = ParseOverride(text, &key, &value);
    if (status.ok()) status = SetConfigKey(settings, key, value);
    if (!status.ok()) {
      errors.push_back(absl::StrCat("override ", text, ": ", status.message()));
    }
  }
  if (errors.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(errors, "\n"));
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
  return Loader(options.world_size).Run(std::move(settings));
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
    ZR_ASSIGN_OR_RETURN(settings, ParseTextProto(text));
  }
  return LoadSettings(std::move(settings), options);
}

absl::StatusOr<LoadedConfig> LoadConfigFile(absl::string_view path,
                                            const LoadOptions& options) {
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
  return LoadConfigText(text, DetectConfigFormat(path, text), options);
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
  const size_t eq = text.find('=');
  if (eq == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        "expected KEY=VALUE, e.g. "
        "zero_optimization.offload_optimizer.pin_memory=false");
  }
  *key = std::string(absl::StripAsciiWhitespace(text.substr(0, eq)));
  *value = std::string(absl::StripAsciiWhitespace(text.substr(eq + 1)));
  if (key->empty()) {
    return absl::InvalidArgumentError(
        "the key before '=' is empty; expected KEY=VALUE");
  }
  return absl::OkStatus();
}

absl::Status SetConfigKey(JsonValue* settings, absl::string_view key,
                          absl::string_view value) {
  ZR_CHECK(settings != nullptr);
  if (!settings->is_object()) {
    return absl::InvalidArgumentError("the configuration is not a JSON object");
  }
  const std::vector<std::string> parts = absl::StrSplit(key, '.');
  const Schema& schema = GetSchema();
  std::string section;  // canonical path of the current level
  std::string given;    // the key as given, up to the current level
  bool free = false;    // inside an ignored section: no schema below
  JsonValue* node = settings;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    const bool last = i + 1 == parts.size();
    given = JoinPath(given, part);
    if (part.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("empty component in key ", Quote(key)));
    }
    std::string canonical = part;
    std::vector<std::string> equivalents = {part};
    if (!free) {
      const Descriptor* d = schema.sections.at(section);
      const FieldDescriptor* f = d->FindFieldByName(part);
      const DeepSpeedKey* entry = FindDeepSpeedKey(section, part);
      if (f == nullptr && entry != nullptr &&
          entry->kind == DeepSpeedKeyKind::kAlias) {
        canonical = std::string(entry->target);
        f = d->FindFieldByName(canonical);
      }
      if (f != nullptr) {
        equivalents = EquivalentNames(section, canonical);
        if (!last && f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
          return absl::InvalidArgumentError(absl::StrCat(
              given, " is a value, not a section; cannot set ", key));
        }
      } else if (entry != nullptr) {
        if (!last && entry->kind != DeepSpeedKeyKind::kIgnored) {
          return absl::InvalidArgumentError(absl::StrCat(
              given, " is a value, not a section; cannot set ", key));
        }
        free = true;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat(given, ": ", UnknownKeyMessage(section, part)));
      }
    }
    if (last) {
      JsonValue parsed;
      absl::StatusOr<JsonValue> json = ParseJson(value);
      if (json.ok()) {
        parsed = *std::move(json);
        ClearPositions(&parsed);
      } else {
        parsed = JsonValue::String(std::string(value));
      }
      // The override replaces the key under any of its names.
      for (const std::string& name : equivalents) {
        if (name != part) node->Remove(name);
      }
      node->Set(part, std::move(parsed));
      return absl::OkStatus();
    }
    // Descend into the section as the settings spell it, or create it.
    JsonValue* child = nullptr;
    for (const std::string& name : equivalents) {
      child = node->Find(name);
      if (child != nullptr) break;
    }
    if (child == nullptr || child->is_null()) {
      if (child != nullptr) {
        *child = JsonValue::Object();
      } else {
        child = &node->Set(part, JsonValue::Object());
      }
    }
    if (!child->is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(
          given, " is ", JsonValue::KindName(child->kind()),
          " in the configuration, not a section; cannot set ", key));
    }
    node = child;
    if (!free) section = JoinPath(section, canonical);
  }
  return absl::OkStatus();
}

absl::Status ValidateConfig(const Config& config, int64_t world_size) {
  Diagnostics diag;
  Loader::Validate(config, world_size, &diag);
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
