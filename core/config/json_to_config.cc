// Copyright 2026 The zero3 Authors.

#include "core/config/json_to_config.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/config/coerce.h"
#include "core/config/config.pb.h"
#include "core/config/deepspeed_keys.h"
#include "core/config/hf_auto.h"
#include "core/config/schema.h"
#include "core/util/check.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace zero3 {
namespace config {
namespace {

using ::google::protobuf::Descriptor;
using ::google::protobuf::FieldDescriptor;
using ::google::protobuf::Message;
using ::google::protobuf::Reflection;

// True when the number literal of `value` is not zero but reads as 0.
bool UnderflowsToZero(const JsonValue& value) {
  if (value.number_value() != 0) return false;
  const std::string& text = value.number_text();
  for (char c : text) {
    if (c == 'e' || c == 'E') break;
    if (c >= '1' && c <= '9') return true;
  }
  return false;
}

// What 0 means for double field `f`: its bounds' reason, or "the value 0".
std::string ZeroMeaning(const FieldDescriptor* f) {
  const FieldBounds& b = f->options().GetExtension(bounds);
  return b.has_why() && absl::StrContains(b.why(), "0 ")
             ? b.why()
             : std::string("the value 0");
}

// Reads one JSON object tree into a message tree, section by section.
class Converter {
 public:
  Converter(Diagnostics* diag, std::string other_optimizer)
      : diag_(diag), other_optimizer_(std::move(other_optimizer)) {}

  // Reports the unknown keys that were counted but not described.
  void ReportUncounted() {
    if (unknown_keys_ <= kDescribedUnknownKeys) return;
    diag_->Error("", absl::StrCat("and ", unknown_keys_ - kDescribedUnknownKeys,
                                  " more unknown keys (the first ",
                                  kDescribedUnknownKeys, " are shown above)"));
  }

  std::vector<DeprecatedUse>& deprecated() { return deprecated_; }

  void ConvertSection(const JsonValue& object, const std::string& section,
                      Message* msg) {
    const Descriptor* d = msg->GetDescriptor();
    for (const JsonValue::Member& member : object.members()) {
      const std::string path = JoinPath(section, member.key);
      diag_->SetPosition(path, member.value.position());
      if (const FieldDescriptor* f = d->FindFieldByName(member.key)) {
        ConvertValue(member.value, path, f, msg);
        continue;
      }
      const DeepSpeedKey* key = FindDeepSpeedKey(section, member.key);
      if (key == nullptr) {
        ReportUnknownKey(section, member, path);
        continue;
      }
      switch (key->kind) {
        case DeepSpeedKeyKind::kAlias: {
          const std::string canonical_path = JoinPath(section, key->target);
          const JsonValue* canonical = object.Find(key->target);
          if (canonical != nullptr) {
            if (*canonical == member.value) {
              diag_->Notice(path,
                            absl::StrCat("another name for ", canonical_path,
                                         ", given with the same value; "
                                         "remove one of them"));
            } else {
              diag_->ValueError(
                  path, absl::StrCat("another name for ", canonical_path,
                                     ", which is also given, with a different "
                                     "value (",
                                     DescribeValue(member.value), " vs ",
                                     DescribeValue(*canonical), "); keep one"));
              diag_->Poison(canonical_path);
            }
            continue;
          }
          diag_->Notice(
              path, absl::StrCat("DeepSpeed's other name for ", canonical_path,
                                 "; read as ", canonical_path,
                                 " (printed under that name)"));
          diag_->SetPosition(canonical_path, member.value.position());
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
            if (diag_->IsPoisoned(path)) diag_->Poison(canonical_path);
          }
          break;
        }
        case DeepSpeedKeyKind::kDeprecated:
          deprecated_.push_back(DeprecatedUse{
              member.key, path, Coerced(member.value, LaxType::kBool, path)});
          break;
        case DeepSpeedKeyKind::kValueRule:
          break;  // deepspeed_rules.h reads it

        case DeepSpeedKeyKind::kIgnored:
          diag_->Notice(path, key->note);
          break;
        case DeepSpeedKeyKind::kRejectedIfTrue:
          if (member.value.is_bool() && !member.value.bool_value()) {
            diag_->Notice(path, "false is what zero3 does; ignored");
          } else {
            diag_->ValueError(path, key->note);
          }
          break;
        case DeepSpeedKeyKind::kRejected:
          diag_->ValueError(path, key->note);
          break;
      }
    }
  }

 private:
  // Unknown keys past this many are counted, not described (a file of
  // thousands of them gets one line for the rest).
  static constexpr int kDescribedUnknownKeys = 20;

  void ReportUnknownKey(const std::string& section,
                        const JsonValue::Member& member,
                        const std::string& path) {
    if (section == "optimizer.params" && !other_optimizer_.empty()) {
      // Another optimizer's parameters: optimizer.type's error covers them.
      return;
    }
    ++unknown_keys_;
    if (unknown_keys_ > kDescribedUnknownKeys) {
      diag_->Poison(path);
      return;
    }
    diag_->SetPosition(path, member.key_position);
    diag_->ValueError(path, UnknownKeyMessage(section, member.key));
  }

  // `value`, or its conversion to `type` where DeepSpeed's pydantic model
  // converts it (coerce.h), with a notice.
  JsonValue Coerced(const JsonValue& value, LaxType type,
                    const std::string& path) {
    if (!IsPydanticPath(path)) return value;
    absl::optional<JsonValue> c = CoerceLax(value, type, path);
    if (!c.has_value()) return value;
    diag_->Notice(path, CoercionNotice(value, *c));
    c->set_position(value.position());
    return *std::move(c);
  }

  // `given`, or its lax conversion (stored in `*storage`) for scalar field
  // `f`.
  const JsonValue& CoerceScalar(const JsonValue& given, const std::string& path,
                                const FieldDescriptor* f, JsonValue* storage) {
    if (given.is_null() || f->is_repeated()) return given;
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_BOOL:
        *storage = Coerced(given, LaxType::kBool, path);
        return *storage;
      case FieldDescriptor::CPPTYPE_INT32:
      case FieldDescriptor::CPPTYPE_INT64:
        *storage = Coerced(given, LaxType::kInt, path);
        return *storage;
      case FieldDescriptor::CPPTYPE_DOUBLE:
        *storage = Coerced(given, LaxType::kFloat, path);
        return *storage;
      default:
        return given;
    }
  }

  // Reports a value of the wrong type for field `f` at `path`.
  void TypeError(const JsonValue& value, const std::string& path,
                 const FieldDescriptor* f, absl::string_view expected) {
    ReportTypeError(
        value, path, f->cpp_type(), expected,
        f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE ? "" : DefaultText(f),
        diag_);
  }

  void ConvertValue(const JsonValue& given, const std::string& path,
                    const FieldDescriptor* f, Message* msg) {
    const Reflection* r = msg->GetReflection();
    JsonValue coerced;
    const JsonValue& value = CoerceScalar(given, path, f, &coerced);
    if (value.is_null()) {
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE ||
          NullMeansAbsent(path)) {
        return;
      }
      diag_->ValueError(path, absl::StrCat("null is not a value for this key; "
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
      if (value.array().empty()) {
        diag_->ValueError(path,
                          "an empty array; give two numbers [beta1, "
                          "beta2], or remove the key for the default "
                          "[0.9, 0.999]");
        return;
      }
      bool ok = true;
      for (size_t i = 0; i < value.array().size(); ++i) {
        const JsonValue& e = value.array()[i];
        if (!e.is_number()) {
          diag_->SetPosition(absl::StrCat(path, "[", i, "]"), e.position());
          diag_->Error(
              absl::StrCat(path, "[", i, "]"),
              absl::StrCat("expected a number, found ", DescribeValue(e)));
          ok = false;
        }
      }
      if (!ok) {
        diag_->Poison(path);
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
            diag_->ValueError(path, absl::StrCat(value.number_text(),
                                                 " is out of range for an "
                                                 "integer"));
          } else {
            diag_->ValueError(path, absl::StrCat("expected an integer, found ",
                                                 value.number_text()));
          }
          return;
        }
        if (f->cpp_type() == FieldDescriptor::CPPTYPE_INT32) {
          if (*v > std::numeric_limits<int32_t>::max() ||
              *v < std::numeric_limits<int32_t>::min()) {
            diag_->ValueError(path, absl::StrCat(value.number_text(),
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
        if (UnderflowsToZero(value)) {
          diag_->ValueError(
              path, absl::StrCat(value.number_text(),
                                 " is too small for a double and would read "
                                 "as 0 (",
                                 ZeroMeaning(f),
                                 "); write 0 if that is "
                                 "what you mean"));
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

  Diagnostics* diag_;
  std::vector<DeprecatedUse> deprecated_;
  // optimizer.type when it is neither Adam nor AdamW, else "".
  const std::string other_optimizer_;
  int unknown_keys_ = 0;
};

// optimizer.type when it is a string other than Adam or AdamW (any case).
std::string OtherOptimizer(const JsonValue& settings) {
  const JsonValue* optimizer = settings.Find("optimizer");
  const JsonValue* type = optimizer != nullptr && optimizer->is_object()
                              ? optimizer->Find("type")
                              : nullptr;
  if (type == nullptr || !type->is_string()) return "";
  const std::string lower = absl::AsciiStrToLower(type->string_value());
  return lower == "adam" || lower == "adamw" ? "" : type->string_value();
}

}  // namespace

void ReportTypeError(const JsonValue& value, const std::string& path,
                     FieldDescriptor::CppType type, absl::string_view expected,
                     const std::string& default_text, Diagnostics* diag) {
  const bool numeric = type == FieldDescriptor::CPPTYPE_INT32 ||
                       type == FieldDescriptor::CPPTYPE_INT64 ||
                       type == FieldDescriptor::CPPTYPE_DOUBLE;
  if (value.is_string()) {
    const std::string& s = value.string_value();
    if (s == "auto") {
      std::string fix = absl::StrCat("zero3 needs ", expected, " here");
      const std::string hint = AutoHint(path);
      if (!hint.empty()) {
        fix = hint;
      } else if (IsBatchKey(path)) {
        absl::StrAppend(&fix,
                        ", or remove the key to derive it from the "
                        "other batch sizes");
      } else if (!default_text.empty()) {
        absl::StrAppend(&fix, " (the default is ", default_text, ")");
      }
      diag->ValueError(path, absl::StrCat("\"auto\" is a placeholder that "
                                          "only the Hugging Face Trainer "
                                          "fills in; ",
                                          fix));
      return;
    }
    double d = 0;
    const std::string lower = absl::AsciiStrToLower(s);
    if (numeric && (lower == "nan" || lower == "inf" || lower == "-inf" ||
                    lower == "infinity" || lower == "-infinity")) {
      diag->ValueError(path, absl::StrCat("must be a finite number, found ",
                                          DescribeValue(value)));
      return;
    }
    if (numeric && absl::SimpleAtod(s, &d)) {
      diag->ValueError(path, absl::StrCat("expected ", expected, ", found ",
                                          DescribeValue(value),
                                          "; write the number without "
                                          "quotes"));
      return;
    }
    if (type == FieldDescriptor::CPPTYPE_BOOL &&
        (lower == "true" || lower == "false")) {
      diag->ValueError(path, absl::StrCat("expected true or false, found ",
                                          DescribeValue(value), "; write ",
                                          lower, " without quotes"));
      return;
    }
  }
  diag->ValueError(path, absl::StrCat("expected ", expected, ", found ",
                                      DescribeValue(value)));
}

std::vector<DeprecatedUse> ConvertSettings(const JsonValue& settings,
                                           Config* config, Diagnostics* diag) {
  Converter converter(diag, OtherOptimizer(settings));
  converter.ConvertSection(settings, "", config);
  converter.ReportUncounted();
  return std::move(converter.deprecated());
}

}  // namespace config
}  // namespace zero3
