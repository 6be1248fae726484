// Copyright 2026 The zero3 Authors.

#include "core/config/coerce.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "core/config/schema.h"

namespace zero3 {
namespace config {
namespace {

// Python and pydantic allow single underscores between digits ("1_000").
absl::optional<std::string> StripUnderscores(absl::string_view s) {
  if (!absl::StrContains(s, '_')) return std::string(s);
  if (absl::StartsWith(s, "_") || absl::EndsWith(s, "_") ||
      absl::StrContains(s, "__")) {
    return absl::nullopt;
  }
  return absl::StrReplaceAll(s, {{"_", ""}});
}

bool AllDigits(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// An integer string as Python's int() reads it ([+-]digits, white space
// around, single underscores between digits), or with `decimal_zeros` as
// pydantic also reads it, with a fraction of zeros ("3.0"; not "3.").
absl::optional<int64_t> ParseInt(absl::string_view text, bool decimal_zeros) {
  absl::string_view s = absl::StripAsciiWhitespace(text);
  if (decimal_zeros) {
    const size_t dot = s.find('.');
    if (dot != absl::string_view::npos) {
      const absl::string_view fraction = s.substr(dot + 1);
      if (fraction.empty() ||
          fraction.find_first_not_of('0') != absl::string_view::npos) {
        return absl::nullopt;
      }
      s = s.substr(0, dot);
    }
  }
  const absl::optional<std::string> stripped = StripUnderscores(s);
  if (!stripped.has_value()) return absl::nullopt;
  absl::string_view digits = *stripped;
  if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
    digits.remove_prefix(1);
  }
  int64_t v = 0;
  if (!AllDigits(digits) || !absl::SimpleAtoi(*stripped, &v)) {
    return absl::nullopt;
  }
  return v;
}

// A decimal number string ("3", "-1.5e3", ".5", "1."), white space around.
absl::optional<double> ParseFloat(absl::string_view text) {
  const absl::optional<std::string> stripped =
      StripUnderscores(absl::StripAsciiWhitespace(text));
  if (!stripped.has_value() || stripped->empty()) return absl::nullopt;
  const std::string& s = *stripped;
  size_t i = (s[0] == '+' || s[0] == '-') ? 1 : 0;
  size_t mantissa_digits = 0;
  for (; i < s.size() && absl::ascii_isdigit(s[i]); ++i) ++mantissa_digits;
  if (i < s.size() && s[i] == '.') {
    for (++i; i < s.size() && absl::ascii_isdigit(s[i]); ++i) {
      ++mantissa_digits;
    }
  }
  if (mantissa_digits == 0) return absl::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (i == s.size()) return absl::nullopt;
    for (; i < s.size() && absl::ascii_isdigit(s[i]); ++i) {
    }
  }
  if (i != s.size()) return absl::nullopt;
  const double v = std::strtod(s.c_str(), nullptr);
  if (!std::isfinite(v)) return absl::nullopt;
  return v;
}

absl::optional<bool> ParseBool(absl::string_view text) {
  const std::string s = absl::AsciiStrToLower(text);
  for (const char* t : {"1", "on", "t", "true", "y", "yes"}) {
    if (s == t) return true;
  }
  for (const char* f : {"0", "off", "f", "false", "n", "no"}) {
    if (s == f) return false;
  }
  return absl::nullopt;
}

}  // namespace

bool IsPydanticPath(absl::string_view path) {
  for (absl::string_view section :
       {"fp16.", "bf16.", "bfloat16.", "zero_optimization.", "csv_monitor.",
        "tensorboard."}) {
    if (absl::StartsWith(path, section)) return true;
  }
  return false;
}

absl::optional<JsonValue> CoerceLax(const JsonValue& value, LaxType type,
                                    absl::string_view path) {
  // DeepSpeed's own validators (runtime/precision_config.py) run first.
  const bool python_int =
      path == "fp16.loss_scale_window" || path == "fp16.min_loss_scale";
  const bool no_bool = python_int || path == "fp16.loss_scale";
  switch (type) {
    case LaxType::kBool:
      if (value.is_number()) {
        const double d = value.number_value();
        if (d == 0 || d == 1) return JsonValue::Bool(d == 1);
      } else if (value.is_string()) {
        if (const auto b = ParseBool(value.string_value())) {
          return JsonValue::Bool(*b);
        }
      }
      return absl::nullopt;
    case LaxType::kInt:
    case LaxType::kFloat: {
      const bool is_int = type == LaxType::kInt;
      if (value.is_bool() && !no_bool) {
        const int v = value.bool_value() ? 1 : 0;
        return is_int ? JsonValue::Int(v) : JsonValue::Double(v);
      }
      if (!value.is_string()) return absl::nullopt;
      if (is_int) {
        const auto v = ParseInt(value.string_value(), !python_int);
        if (v.has_value()) return JsonValue::Int(*v);
      } else if (const auto v = ParseFloat(value.string_value())) {
        return JsonValue::Double(*v);
      }
      return absl::nullopt;
    }
  }
  return absl::nullopt;
}

absl::optional<bool> LaxBool(const JsonValue& value, absl::string_view path) {
  if (value.is_bool()) return value.bool_value();
  const absl::optional<JsonValue> c = CoerceLax(value, LaxType::kBool, path);
  if (!c.has_value()) return absl::nullopt;
  return c->bool_value();
}

std::string CoercionNotice(const JsonValue& from, const JsonValue& to) {
  const std::string written = WriteJson(to);
  return absl::StrCat(DescribeValue(from), " is read as ", written,
                      ", as DeepSpeed's pydantic reads it; write ", written);
}

}  // namespace config
}  // namespace zero3
