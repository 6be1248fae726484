// Copyright 2026 The zero3 Authors.
//
// json.h: a small JSON reader and writer for configuration files.
//
// DeepSpeed configurations are JSON. The loader needs more than a generic JSON
// library gives: the line and column of every value (errors name them), the
// order of object keys (printed configs keep it), and the literal text of
// every number, so that `5e8` can be accepted for an integer field while
// `1.5` is rejected, and so that integers beyond 2^53 are not rounded through
// a double. Hence this parser of our own.
//
//   absl::StatusOr<JsonValue> tree = ParseJson(text);
//   if (!tree.ok()) ...   // "line 3, column 14: expected ',' or '}' ..."
//   const JsonValue* zero = tree->Find("zero_optimization");
//   std::string out = WriteJson(*tree);   // pretty, 2-space indent
//
// What is accepted: RFC 8259 JSON, plus what DeepSpeed's reader (hjson)
// tolerates and users therefore have in their files: `//`, `#` and `/* */`
// comments and a trailing comma before `]` or `}`. Rejected with a message
// that names the line and column: everything else, including duplicate keys
// in one object (DeepSpeed rejects them too), NaN and Infinity, numbers beyond
// the range of a double, and nesting deeper than JsonParseOptions::max_depth
// (so adversarial input cannot overflow the stack).
//
// JsonValue is a plain value type: copyable, movable, not thread-safe for
// concurrent mutation (like std::vector). The functions here are thread-safe.

#ifndef ZERO3_CORE_CONFIG_JSON_H_
#define ZERO3_CORE_CONFIG_JSON_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"

namespace zero3 {
namespace config {

// Where a value or key starts in the source text. Lines and columns count
// from 1; columns count bytes. line == 0 means the value was not read from
// text (built in code, or set by a KEY=VALUE override).
struct SourcePosition {
  int line = 0;
  int column = 0;

  bool known() const { return line > 0; }
};

// "line 3, column 14", or "" when the position is unknown.
std::string FormatPosition(SourcePosition position);

class JsonValue {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };

  // One key of an object, in source order.
  struct Member;

  // A null value.
  JsonValue();

  static JsonValue Null();
  static JsonValue Bool(bool value);
  // `literal` must be a valid JSON number literal whose value is finite
  // (checked: a bad literal is a programming error).
  static JsonValue Number(absl::string_view literal);
  static JsonValue Int(int64_t value);
  // `value` must be finite (checked). Written back as the shortest text that
  // reads back to the same double.
  static JsonValue Double(double value);
  static JsonValue String(std::string value);
  static JsonValue Array();
  static JsonValue Object();

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_number() const { return kind_ == Kind::kNumber; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_object() const { return kind_ == Kind::kObject; }

  // Accessors check the kind (a mismatch is a programming error).
  bool bool_value() const;
  // The number as written in the source, e.g. "5e8" or "1.0".
  const std::string& number_text() const;
  // The number as the nearest double.
  double number_value() const;
  // The number as an exact int64 when it has an integral value that fits:
  // "500000000", "5e8" and "2.0" do; "1.5", "1e19" and "-0.5" do not.
  // Integer literals are read exactly, not through a double.
  absl::optional<int64_t> AsExactInt64() const;
  const std::string& string_value() const;

  const std::vector<JsonValue>& array() const;
  std::vector<JsonValue>& mutable_array();
  void Append(JsonValue value);

  const std::vector<Member>& members() const;
  std::vector<Member>& mutable_members();
  // The member named `key`, or null. Objects never hold a key twice.
  const Member* FindMember(absl::string_view key) const;
  Member* FindMember(absl::string_view key);
  // The value of member `key`, or null.
  const JsonValue* Find(absl::string_view key) const;
  JsonValue* Find(absl::string_view key);
  // Replaces the value of `key` in place (keeping its place in the key order
  // and its key position) or appends a new member. Returns the stored value.
  JsonValue& Set(absl::string_view key, JsonValue value);
  // Removes member `key`; returns whether it was there.
  bool Remove(absl::string_view key);

  SourcePosition position() const { return position_; }
  void set_position(SourcePosition position) { position_ = position; }

  // "null", "a boolean", "a number", "a string", "an array", "an object":
  // for messages such as "expected a number, found a string".
  static absl::string_view KindName(Kind kind);

 private:
  Kind kind_ = Kind::kNull;
  bool bool_ = false;
  double number_ = 0;
  // The number literal for kNumber; the decoded text for kString.
  std::string text_;
  std::vector<JsonValue> array_;
  std::vector<Member> members_;
  SourcePosition position_;
};

struct JsonValue::Member {
  std::string key;
  SourcePosition key_position;
  JsonValue value;
};

// Deep equality of kind and value; positions are ignored. Numbers compare by
// value, so 5e8 equals 500000000.
bool operator==(const JsonValue& a, const JsonValue& b);
inline bool operator!=(const JsonValue& a, const JsonValue& b) {
  return !(a == b);
}

struct JsonParseOptions {
  // Arrays and objects nested deeper than this are an error. Configurations
  // nest four levels; the limit only guards the recursion.
  int max_depth = 64;
};

// Parses one JSON value (any kind) that spans all of `text` apart from white
// space and comments. On failure, returns InvalidArgumentError whose message
// starts with the position: "line 3, column 14: expected ',' or '}' after an
// object member, found '\"'".
absl::StatusOr<JsonValue> ParseJson(absl::string_view text,
                                    const JsonParseOptions& options = {});

enum class JsonStyle {
  // Objects and arrays one member per line, 2-space indent; arrays holding
  // only scalars stay on one line ("[0.9, 0.999]").
  kPretty,
  // Everything on one line with single spaces, for messages.
  kCompact,
};

// Writes `value` as JSON text without a trailing newline. Numbers keep their
// literal text; strings are escaped as JSON requires.
std::string WriteJson(const JsonValue& value,
                      JsonStyle style = JsonStyle::kPretty);

// `text` as a quoted, escaped JSON string literal.
std::string QuoteJsonString(absl::string_view text);

// The shortest decimal text that reads back to `value` (which must be finite),
// in JSON number syntax and always marked as a float: 1.0, 0.001, 1e-8, 5e8.
std::string FormatJsonDouble(double value);

}  // namespace config
}  // namespace zero3

#endif  // ZERO3_CORE_CONFIG_JSON_H_
