// Copyright 2026 The zero3 Authors.

#include "core/config/json.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/check.h"

namespace zero3 {
namespace config {
namespace {

// True when `text` matches the JSON number grammar:
//   -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
bool IsJsonNumberLiteral(absl::string_view text) {
  size_t i = 0;
  const size_t n = text.size();
  auto digit = [&](size_t k) { return k < n && absl::ascii_isdigit(text[k]); };
  if (i < n && text[i] == '-') ++i;
  if (!digit(i)) return false;
  if (text[i] == '0') {
    ++i;
  } else {
    while (digit(i)) ++i;
  }
  if (i < n && text[i] == '.') {
    ++i;
    if (!digit(i)) return false;
    while (digit(i)) ++i;
  }
  if (i < n && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < n && (text[i] == '+' || text[i] == '-')) ++i;
    if (!digit(i)) return false;
    while (digit(i)) ++i;
  }
  return i == n;
}

// Appends the UTF-8 encoding of code point `cp` (<= 0x10FFFF, not a
// surrogate).
void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Recursive-descent parser over one text. Positions are tracked
// incrementally: `line_start_` is the offset of the current line's first byte.
class Parser {
 public:
  Parser(absl::string_view text, const JsonParseOptions& options)
      : text_(text), options_(options) {}

  absl::StatusOr<JsonValue> ParseDocument() {
    // A UTF-8 byte order mark is not JSON, but editors write it; skip it.
    if (absl::StartsWith(text_, "\xEF\xBB\xBF")) {
      pos_ = 3;
      line_start_ = 3;
    }
    absl::Status status = SkipSpace();
    if (!status.ok()) return status;
    if (AtEnd()) {
      return Error("expected a JSON value, found end of input (empty file?)");
    }
    JsonValue value;
    status = ParseValue(0, &value);
    if (!status.ok()) return status;
    status = SkipSpace();
    if (!status.ok()) return status;
    if (!AtEnd()) {
      return Error(
          absl::StrCat("expected end of input after the JSON value, "
                       "found ",
                       Describe()));
    }
    return value;
  }

 private:
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return text_[pos_]; }

  SourcePosition Here() const {
    return SourcePosition{line_, static_cast<int>(pos_ - line_start_) + 1};
  }

  // Advances one byte, tracking lines.
  void Advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      line_start_ = pos_ + 1;
    }
    ++pos_;
  }

  // How the byte at the current position reads in a message.
  std::string Describe() const {
    if (AtEnd()) return "end of input";
    const unsigned char c = static_cast<unsigned char>(Peek());
    if (c == '\'') return "\"'\"";
    if (c >= 0x20 && c < 0x7F) return absl::StrCat("'", std::string(1, c), "'");
    if (c == '\n') return "end of line";
    return absl::StrFormat("byte 0x%02X", c);
  }

  absl::Status Error(absl::string_view message) const {
    return ErrorAt(Here(), message);
  }
  static absl::Status ErrorAt(SourcePosition at, absl::string_view message) {
    return absl::InvalidArgumentError(
        absl::StrCat(FormatPosition(at), ": ", message));
  }

  // Skips white space and comments.
  absl::Status SkipSpace() {
    while (!AtEnd()) {
      const char c = Peek();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        Advance();
      } else if (c == '#' || (c == '/' && pos_ + 1 < text_.size() &&
                              text_[pos_ + 1] == '/')) {
        while (!AtEnd() && Peek() != '\n') Advance();
      } else if (c == '/' && pos_ + 1 < text_.size() &&
                 text_[pos_ + 1] == '*') {
        const SourcePosition start = Here();
        Advance();
        Advance();
        bool closed = false;
        while (!AtEnd()) {
          if (Peek() == '*' && pos_ + 1 < text_.size() &&
              text_[pos_ + 1] == '/') {
            Advance();
            Advance();
            closed = true;
            break;
          }
          Advance();
        }
        if (!closed) return ErrorAt(start, "comment '/*' is never closed");
      } else {
        break;
      }
    }
    return absl::OkStatus();
  }

  absl::Status ParseValue(int depth, JsonValue* out) {
    const SourcePosition start = Here();
    const char c = Peek();
    absl::Status status;
    switch (c) {
      case '{':
        status = ParseObject(depth + 1, out);
        break;
      case '[':
        status = ParseArray(depth + 1, out);
        break;
      case '"': {
        std::string s;
        status = ParseString(&s);
        if (status.ok()) *out = JsonValue::String(std::move(s));
        break;
      }
      case '\'':
        return Error("strings must be in double quotes (\"...\") in JSON");
      default:
        if (c == '-' || absl::ascii_isdigit(c)) {
          status = ParseNumber(out);
        } else if (absl::ascii_isalpha(c)) {
          status = ParseWord(out);
        } else {
          return Error(
              absl::StrCat("expected a JSON value, found ", Describe()));
        }
    }
    if (!status.ok()) return status;
    out->set_position(start);
    return absl::OkStatus();
  }

  // true, false, null; and a helpful message for anything else spelled with
  // letters (NaN, Infinity, None, True, an unquoted string).
  absl::Status ParseWord(JsonValue* out) {
    const SourcePosition start = Here();
    size_t end = pos_;
    while (end < text_.size() &&
           (absl::ascii_isalnum(text_[end]) || text_[end] == '_')) {
      ++end;
    }
    const absl::string_view word = text_.substr(pos_, end - pos_);
    if (word == "true" || word == "false") {
      *out = JsonValue::Bool(word == "true");
    } else if (word == "null") {
      *out = JsonValue::Null();
    } else if (word == "True" || word == "False" || word == "None") {
      return ErrorAt(
          start,
          absl::StrCat(
              "'", word, "' is Python, not JSON: write ",
              word == "None" ? "null" : (word == "True" ? "true" : "false")));
    } else if (word == "NaN" || word == "Infinity") {
      return ErrorAt(start, absl::StrCat("'", word,
                                         "' is not a JSON number; write a "
                                         "finite number"));
    } else {
      return ErrorAt(start,
                     absl::StrCat("expected a JSON value, found '", word,
                                  "' (strings must be in double quotes)"));
    }
    while (pos_ < end) Advance();
    return absl::OkStatus();
  }

  absl::Status ParseNumber(JsonValue* out) {
    const SourcePosition start = Here();
    size_t end = pos_;
    // Take the longest run of characters that can belong to a number, then
    // check it against the grammar, so "01" or "1.e5" get one clear error.
    while (end < text_.size()) {
      const char c = text_[end];
      if (absl::ascii_isalnum(c) || c == '.' || c == '+' || c == '-') {
        ++end;
      } else {
        break;
      }
    }
    const absl::string_view literal = text_.substr(pos_, end - pos_);
    if (literal == "-Infinity") {
      return ErrorAt(start,
                     "'-Infinity' is not a JSON number; write a finite number");
    }
    if (!IsJsonNumberLiteral(literal)) {
      return ErrorAt(start, absl::StrCat("malformed number '", literal, "'"));
    }
    double value = 0;
    if (!absl::SimpleAtod(literal, &value) || !std::isfinite(value)) {
      return ErrorAt(start, absl::StrCat("number ", literal,
                                         " is out of range of a double"));
    }
    *out = JsonValue::Number(literal);
    while (pos_ < end) Advance();
    return absl::OkStatus();
  }

  // Reads 4 hex digits after "\u".
  absl::Status ReadHex4(uint32_t* out) {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      if (AtEnd() || !absl::ascii_isxdigit(Peek())) {
        return Error("expected 4 hex digits after \\u");
      }
      const char c = Peek();
      v = v * 16 + (absl::ascii_isdigit(c) ? c - '0'
                                           : absl::ascii_tolower(c) - 'a' + 10);
      Advance();
    }
    *out = v;
    return absl::OkStatus();
  }

  absl::Status ParseString(std::string* out) {
    const SourcePosition start = Here();
    Advance();  // the opening quote
    while (true) {
      if (AtEnd()) return ErrorAt(start, "string is never closed");
      const unsigned char c = static_cast<unsigned char>(Peek());
      if (c == '"') {
        Advance();
        return absl::OkStatus();
      }
      if (c == '\n') {
        return Error("string is not closed before the end of the line");
      }
      if (c < 0x20) {
        return Error(absl::StrFormat(
            "control character 0x%02X in a string; escape it", c));
      }
      if (c != '\\') {
        out->push_back(static_cast<char>(c));
        Advance();
        continue;
      }
      const SourcePosition escape = Here();
      Advance();
      if (AtEnd()) return ErrorAt(start, "string is never closed");
      const char e = Peek();
      Advance();
      switch (e) {
        case '"':
          out->push_back('"');
          break;
        case '\\':
          out->push_back('\\');
          break;
        case '/':
          out->push_back('/');
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'u': {
          uint32_t cp = 0;
          absl::Status status = ReadHex4(&cp);
          if (!status.ok()) return status;
          if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return ErrorAt(escape, "unpaired low surrogate in \\u escape");
          }
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (pos_ + 1 >= text_.size() || text_[pos_] != '\\' ||
                text_[pos_ + 1] != 'u') {
              return ErrorAt(escape, "unpaired high surrogate in \\u escape");
            }
            Advance();
            Advance();
            uint32_t low = 0;
            status = ReadHex4(&low);
            if (!status.ok()) return status;
            if (low < 0xDC00 || low > 0xDFFF) {
              return ErrorAt(escape, "unpaired high surrogate in \\u escape");
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          AppendUtf8(cp, out);
          break;
        }
        default:
          return ErrorAt(escape,
                         absl::StrCat("invalid escape '\\", std::string(1, e),
                                      "' in a string"));
      }
    }
  }

  absl::Status CheckDepth(int depth) const {
    if (depth > options_.max_depth) {
      return Error(absl::StrCat("arrays and objects nested deeper than ",
                                options_.max_depth, " levels"));
    }
    return absl::OkStatus();
  }

  absl::Status ParseArray(int depth, JsonValue* out) {
    absl::Status status = CheckDepth(depth);
    if (!status.ok()) return status;
    *out = JsonValue::Array();
    Advance();  // '['
    while (true) {
      status = SkipSpace();
      if (!status.ok()) return status;
      if (AtEnd()) return Error("expected a value or ']', found end of input");
      if (Peek() == ']') {
        // Reached directly after '[' or after a trailing comma.
        Advance();
        return absl::OkStatus();
      }
      if (Peek() == ',') {
        return Error("expected a value before ','");
      }
      JsonValue element;
      status = ParseValue(depth, &element);
      if (!status.ok()) return status;
      out->Append(std::move(element));
      status = SkipSpace();
      if (!status.ok()) return status;
      if (AtEnd()) return Error("expected ',' or ']', found end of input");
      if (Peek() == ',') {
        Advance();
        continue;
      }
      if (Peek() == ']') {
        Advance();
        return absl::OkStatus();
      }
      return Error(
          absl::StrCat("expected ',' or ']' after an array element, "
                       "found ",
                       Describe()));
    }
  }

  absl::Status ParseObject(int depth, JsonValue* out) {
    absl::Status status = CheckDepth(depth);
    if (!status.ok()) return status;
    *out = JsonValue::Object();
    // Key -> index in members, for the duplicate check without a quadratic
    // scan on large objects.
    absl::flat_hash_map<std::string, size_t> seen;
    Advance();  // '{'
    while (true) {
      status = SkipSpace();
      if (!status.ok()) return status;
      if (AtEnd()) return Error("expected a key or '}', found end of input");
      if (Peek() == '}') {
        Advance();
        return absl::OkStatus();
      }
      if (Peek() != '"') {
        if (Peek() == '\'') {
          return Error("keys must be in double quotes (\"...\") in JSON");
        }
        if (Peek() == ',') return Error("expected a key before ','");
        return Error(
            absl::StrCat("expected a key in double quotes or '}', "
                         "found ",
                         Describe()));
      }
      const SourcePosition key_position = Here();
      std::string key;
      status = ParseString(&key);
      if (!status.ok()) return status;
      auto [it, inserted] = seen.emplace(key, out->members().size());
      if (!inserted) {
        const SourcePosition first = out->members()[it->second].key_position;
        return ErrorAt(
            key_position,
            absl::StrCat("duplicate key ", QuoteJsonString(key),
                         " (first given at ", FormatPosition(first), ")"));
      }
      status = SkipSpace();
      if (!status.ok()) return status;
      if (AtEnd() || Peek() != ':') {
        return Error(absl::StrCat("expected ':' after key ",
                                  QuoteJsonString(key), ", found ",
                                  Describe()));
      }
      Advance();
      status = SkipSpace();
      if (!status.ok()) return status;
      if (AtEnd()) {
        return Error(absl::StrCat("expected a value for key ",
                                  QuoteJsonString(key),
                                  ", found end of input"));
      }
      JsonValue value;
      status = ParseValue(depth, &value);
      if (!status.ok()) return status;
      out->mutable_members().push_back(
          JsonValue::Member{std::move(key), key_position, std::move(value)});
      status = SkipSpace();
      if (!status.ok()) return status;
      if (AtEnd()) return Error("expected ',' or '}', found end of input");
      if (Peek() == ',') {
        Advance();
        continue;
      }
      if (Peek() == '}') {
        Advance();
        return absl::OkStatus();
      }
      return Error(
          absl::StrCat("expected ',' or '}' after an object member, "
                       "found ",
                       Describe()));
    }
  }

  absl::string_view text_;
  const JsonParseOptions& options_;
  size_t pos_ = 0;
  int line_ = 1;
  size_t line_start_ = 0;
};

bool IsScalar(const JsonValue& v) { return !v.is_array() && !v.is_object(); }

void Write(const JsonValue& value, JsonStyle style, int indent,
           std::string* out) {
  switch (value.kind()) {
    case JsonValue::Kind::kNull:
      out->append("null");
      return;
    case JsonValue::Kind::kBool:
      out->append(value.bool_value() ? "true" : "false");
      return;
    case JsonValue::Kind::kNumber:
      out->append(value.number_text());
      return;
    case JsonValue::Kind::kString:
      out->append(QuoteJsonString(value.string_value()));
      return;
    case JsonValue::Kind::kArray: {
      const auto& elements = value.array();
      if (elements.empty()) {
        out->append("[]");
        return;
      }
      bool inline_array = style == JsonStyle::kCompact;
      if (!inline_array) {
        inline_array = true;
        for (const JsonValue& e : elements) inline_array &= IsScalar(e);
      }
      if (inline_array) {
        out->push_back('[');
        for (size_t i = 0; i < elements.size(); ++i) {
          if (i > 0) out->append(", ");
          Write(elements[i], style, indent, out);
        }
        out->push_back(']');
        return;
      }
      out->append("[\n");
      for (size_t i = 0; i < elements.size(); ++i) {
        out->append(indent + 2, ' ');
        Write(elements[i], style, indent + 2, out);
        if (i + 1 < elements.size()) out->push_back(',');
        out->push_back('\n');
      }
      out->append(indent, ' ');
      out->push_back(']');
      return;
    }
    case JsonValue::Kind::kObject: {
      const auto& members = value.members();
      if (members.empty()) {
        out->append("{}");
        return;
      }
      if (style == JsonStyle::kCompact) {
        out->append("{");
        for (size_t i = 0; i < members.size(); ++i) {
          out->append(i > 0 ? ", " : "");
          out->append(QuoteJsonString(members[i].key));
          out->append(": ");
          Write(members[i].value, style, indent, out);
        }
        out->append("}");
        return;
      }
      out->append("{\n");
      for (size_t i = 0; i < members.size(); ++i) {
        out->append(indent + 2, ' ');
        out->append(QuoteJsonString(members[i].key));
        out->append(": ");
        Write(members[i].value, style, indent + 2, out);
        if (i + 1 < members.size()) out->push_back(',');
        out->push_back('\n');
      }
      out->append(indent, ' ');
      out->push_back('}');
      return;
    }
  }
}

}  // namespace

std::string FormatPosition(SourcePosition position) {
  if (!position.known()) return "";
  return absl::StrCat("line ", position.line, ", column ", position.column);
}

JsonValue::JsonValue() = default;

JsonValue JsonValue::Null() { return JsonValue(); }

JsonValue JsonValue::Bool(bool value) {
  JsonValue v;
  v.kind_ = Kind::kBool;
  v.bool_ = value;
  return v;
}

JsonValue JsonValue::Number(absl::string_view literal) {
  ZR_CHECK(IsJsonNumberLiteral(literal)) << "not a JSON number: " << literal;
  JsonValue v;
  v.kind_ = Kind::kNumber;
  v.text_ = std::string(literal);
  ZR_CHECK(absl::SimpleAtod(literal, &v.number_) && std::isfinite(v.number_))
      << "number out of range: " << literal;
  return v;
}

JsonValue JsonValue::Int(int64_t value) {
  JsonValue v;
  v.kind_ = Kind::kNumber;
  v.text_ = absl::StrCat(value);
  v.number_ = static_cast<double>(value);
  return v;
}

JsonValue JsonValue::Double(double value) {
  ZR_CHECK(std::isfinite(value)) << "JSON numbers are finite: " << value;
  JsonValue v;
  v.kind_ = Kind::kNumber;
  v.text_ = FormatJsonDouble(value);
  v.number_ = value;
  return v;
}

JsonValue JsonValue::String(std::string value) {
  JsonValue v;
  v.kind_ = Kind::kString;
  v.text_ = std::move(value);
  return v;
}

JsonValue JsonValue::Array() {
  JsonValue v;
  v.kind_ = Kind::kArray;
  return v;
}

JsonValue JsonValue::Object() {
  JsonValue v;
  v.kind_ = Kind::kObject;
  return v;
}

bool JsonValue::bool_value() const {
  ZR_CHECK(is_bool()) << "JSON value is " << KindName(kind_);
  return bool_;
}

const std::string& JsonValue::number_text() const {
  ZR_CHECK(is_number()) << "JSON value is " << KindName(kind_);
  return text_;
}

double JsonValue::number_value() const {
  ZR_CHECK(is_number()) << "JSON value is " << KindName(kind_);
  return number_;
}

absl::optional<int64_t> JsonValue::AsExactInt64() const {
  ZR_CHECK(is_number()) << "JSON value is " << KindName(kind_);
  const bool integer_literal = text_.find_first_of(".eE") == std::string::npos;
  if (integer_literal) {
    int64_t v = 0;
    if (absl::SimpleAtoi(text_, &v)) return v;
    return absl::nullopt;  // beyond int64
  }
  // A float literal: exact when its double value is integral and in range.
  // 2^63 itself is out of range; -2^63 is in range.
  if (std::floor(number_) != number_) return absl::nullopt;
  if (number_ >= 9223372036854775808.0 || number_ < -9223372036854775808.0) {
    return absl::nullopt;
  }
  return static_cast<int64_t>(number_);
}

const std::string& JsonValue::string_value() const {
  ZR_CHECK(is_string()) << "JSON value is " << KindName(kind_);
  return text_;
}

const std::vector<JsonValue>& JsonValue::array() const {
  ZR_CHECK(is_array()) << "JSON value is " << KindName(kind_);
  return array_;
}

std::vector<JsonValue>& JsonValue::mutable_array() {
  ZR_CHECK(is_array()) << "JSON value is " << KindName(kind_);
  return array_;
}

void JsonValue::Append(JsonValue value) {
  mutable_array().push_back(std::move(value));
}

const std::vector<JsonValue::Member>& JsonValue::members() const {
  ZR_CHECK(is_object()) << "JSON value is " << KindName(kind_);
  return members_;
}

std::vector<JsonValue::Member>& JsonValue::mutable_members() {
  ZR_CHECK(is_object()) << "JSON value is " << KindName(kind_);
  return members_;
}

const JsonValue::Member* JsonValue::FindMember(absl::string_view key) const {
  for (const Member& m : members()) {
    if (m.key == key) return &m;
  }
  return nullptr;
}

JsonValue::Member* JsonValue::FindMember(absl::string_view key) {
  for (Member& m : mutable_members()) {
    if (m.key == key) return &m;
  }
  return nullptr;
}

const JsonValue* JsonValue::Find(absl::string_view key) const {
  const Member* m = FindMember(key);
  return m == nullptr ? nullptr : &m->value;
}

JsonValue* JsonValue::Find(absl::string_view key) {
  Member* m = FindMember(key);
  return m == nullptr ? nullptr : &m->value;
}

JsonValue& JsonValue::Set(absl::string_view key, JsonValue value) {
  if (Member* m = FindMember(key)) {
    m->value = std::move(value);
    return m->value;
  }
  mutable_members().push_back(
      Member{std::string(key), SourcePosition(), std::move(value)});
  return members_.back().value;
}

bool JsonValue::Remove(absl::string_view key) {
  auto& members = mutable_members();
  for (auto it = members.begin(); it != members.end(); ++it) {
    if (it->key == key) {
      members.erase(it);
      return true;
    }
  }
  return false;
}

absl::string_view JsonValue::KindName(Kind kind) {
  switch (kind) {
    case Kind::kNull:
      return "null";
    case Kind::kBool:
      return "a boolean";
    case Kind::kNumber:
      return "a number";
    case Kind::kString:
      return "a string";
    case Kind::kArray:
      return "an array";
    case Kind::kObject:
      return "an object";
  }
  return "?";
}

bool operator==(const JsonValue& a, const JsonValue& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case JsonValue::Kind::kNull:
      return true;
    case JsonValue::Kind::kBool:
      return a.bool_value() == b.bool_value();
    case JsonValue::Kind::kNumber: {
      // Exact integers compare exactly (beyond 2^53 doubles would not).
      const absl::optional<int64_t> ia = a.AsExactInt64();
      const absl::optional<int64_t> ib = b.AsExactInt64();
      if (ia.has_value() && ib.has_value()) return *ia == *ib;
      return a.number_value() == b.number_value();
    }
    case JsonValue::Kind::kString:
      return a.string_value() == b.string_value();
    case JsonValue::Kind::kArray:
      return a.array() == b.array();
    case JsonValue::Kind::kObject: {
      const auto& ma = a.members();
      const auto& mb = b.members();
      if (ma.size() != mb.size()) return false;
      for (size_t i = 0; i < ma.size(); ++i) {
        if (ma[i].key != mb[i].key || ma[i].value != mb[i].value) return false;
      }
      return true;
    }
  }
  return false;
}

absl::StatusOr<JsonValue> ParseJson(absl::string_view text,
                                    const JsonParseOptions& options) {
  return Parser(text, options).ParseDocument();
}

std::string WriteJson(const JsonValue& value, JsonStyle style) {
  std::string out;
  Write(value, style, 0, &out);
  return out;
}

std::string QuoteJsonString(absl::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back('"');
  for (const char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\b':
        out.append("\\b");
        break;
      case '\f':
        out.append("\\f");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          out.append(absl::StrFormat("\\u%04x", c));
        } else {
          out.push_back(ch);
        }
    }
  }
  out.push_back('"');
  return out;
}

std::string FormatJsonDouble(double value) {
  ZR_CHECK(std::isfinite(value)) << "JSON numbers are finite: " << value;
  char buffer[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    double back = 0;
    if (absl::SimpleAtod(buffer, &back) && back == value) break;
  }
  // Tidy the exponent the way configs are written: "5e+08" -> "5e8",
  // "1e-08" -> "1e-8".
  std::string text = buffer;
  const size_t e = text.find('e');
  if (e != std::string::npos) {
    std::string mantissa = text.substr(0, e);
    std::string exponent = text.substr(e + 1);
    std::string sign;
    if (!exponent.empty() && (exponent[0] == '+' || exponent[0] == '-')) {
      if (exponent[0] == '-') sign = "-";
      exponent.erase(0, 1);
    }
    while (exponent.size() > 1 && exponent[0] == '0') exponent.erase(0, 1);
    return absl::StrCat(mantissa, "e", sign, exponent);
  }
  if (text.find('.') == std::string::npos) text.append(".0");
  return text;
}

}  // namespace config
}  // namespace zero3
