// Copyright 2026 The zero3 Authors.

#include "core/config/json.h"

#include <cstdint>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace config {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::zero3::testing::StatusIs;

TEST(JsonTest, ParsesScalars) {
  ASSERT_OK_AND_ASSIGN(JsonValue t, ParseJson("true"));
  EXPECT_TRUE(t.bool_value());
  ASSERT_OK_AND_ASSIGN(JsonValue n, ParseJson("  null "));
  EXPECT_TRUE(n.is_null());
  ASSERT_OK_AND_ASSIGN(JsonValue s,
                       ParseJson(R"("a\"b\\c\n\u00e9\ud83d\ude00")"));
  EXPECT_EQ(s.string_value(), "a\"b\\c\n\xC3\xA9\xF0\x9F\x98\x80");
  ASSERT_OK_AND_ASSIGN(JsonValue x, ParseJson("-12.5e-1"));
  EXPECT_EQ(x.number_text(), "-12.5e-1");
  EXPECT_DOUBLE_EQ(x.number_value(), -1.25);
}

TEST(JsonTest, KeepsKeyOrderAndPositions) {
  const char* text =
      "{\n"
      "  \"b\": 1,\n"
      "  \"a\": {\"c\": [1, 2]}\n"
      "}\n";
  ASSERT_OK_AND_ASSIGN(JsonValue v, ParseJson(text));
  ASSERT_EQ(v.members().size(), 2u);
  EXPECT_EQ(v.members()[0].key, "b");
  EXPECT_EQ(v.members()[1].key, "a");
  EXPECT_EQ(v.members()[0].key_position.line, 2);
  EXPECT_EQ(v.members()[0].key_position.column, 3);
  const JsonValue* b = v.Find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->position().line, 2);
  EXPECT_EQ(b->position().column, 8);
  const JsonValue* c = v.Find("a")->Find("c");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->array()[1].position().column, 18);
}

struct ExactIntCase {
  const char* literal;
  bool exact;
  int64_t value;
};

TEST(JsonTest, AsExactInt64) {
  const ExactIntCase cases[] = {
      {"500000000", true, 500000000},
      {"5e8", true, 500000000},
      {"5E+8", true, 500000000},
      {"2.0", true, 2},
      {"-3", true, -3},
      {"0.0", true, 0},
      {"1.5", false, 0},
      {"1e-3", false, 0},
      {"9223372036854775807", true, INT64_MAX},
      {"-9223372036854775808", true, INT64_MIN},
      {"9223372036854775808", false, 0},
      {"1e19", false, 0},
      {"9.3e18", false, 0},
  };
  for (const ExactIntCase& c : cases) {
    SCOPED_TRACE(c.literal);
    ASSERT_OK_AND_ASSIGN(JsonValue v, ParseJson(c.literal));
    const absl::optional<int64_t> got = v.AsExactInt64();
    EXPECT_EQ(got.has_value(), c.exact);
    if (c.exact && got.has_value()) {
      EXPECT_EQ(*got, c.value);
    }
  }
}

TEST(JsonTest, AcceptsCommentsAndTrailingCommas) {
  // DeepSpeed reads configs with hjson, so users' files may have these.
  const char* text =
      "// leading comment\n"
      "{ # hash comment\n"
      "  \"a\": [1, 2,], /* block\n comment */\n"
      "  \"b\": 2,\n"
      "}\n";
  ASSERT_OK_AND_ASSIGN(JsonValue v, ParseJson(text));
  EXPECT_EQ(v.Find("a")->array().size(), 2u);
  EXPECT_EQ(v.Find("b")->number_text(), "2");
}

struct ErrorCase {
  const char* name;
  const char* text;
  const char* message_prefix;  // "line L, column C: ..." as printed
};

TEST(JsonTest, ErrorsNameLineAndColumn) {
  const ErrorCase cases[] = {
      {"empty", "", "line 1, column 1: expected a JSON value, found end"},
      {"missing comma", "{\n  \"a\": 1\n  \"b\": 2\n}",
       "line 3, column 3: expected ',' or '}' after an object member, "
       "found '\"'"},
      {"missing colon", "{\"a\" 1}",
       "line 1, column 6: expected ':' after key"},
      {"unclosed object", "{\"a\": 1", "line 1, column 8: expected ',' or '}'"},
      {"unclosed string", "{\"a\": \"x}", "line 1, column 7: string is never"},
      {"newline in string", "[\"a\nb\"]",
       "line 1, column 4: string is not closed"},
      {"duplicate key", "{\"stage\": 3,\n \"stage\": 2}",
       "line 2, column 2: duplicate key \"stage\" (first given at line 1, "
       "column 2)"},
      {"single quotes", "{'a': 1}", "line 1, column 2: keys must be in double"},
      {"python true", "{\"a\": True}",
       "line 1, column 7: 'True' is Python, not JSON: write true"},
      {"nan", "[NaN]", "line 1, column 2: 'NaN' is not a JSON number"},
      {"minus infinity", "[-Infinity]",
       "line 1, column 2: '-Infinity' is not a JSON number"},
      {"leading zero", "[01]", "line 1, column 2: malformed number '01'"},
      {"bare dot", "[1.]", "line 1, column 2: malformed number '1.'"},
      {"overflow", "[1e309]", "line 1, column 2: number 1e309 is out of range"},
      {"unquoted word", "{\"device\": cpu}",
       "line 1, column 12: expected a JSON value, found 'cpu'"},
      {"trailing garbage", "{} x",
       "line 1, column 4: expected end of input after the JSON value"},
      {"lone comma", "[,]", "line 1, column 2: expected a value before ','"},
      {"bad escape", "[\"\\q\"]", "line 1, column 3: invalid escape '\\q'"},
      {"lone surrogate", "[\"\\udc00\"]", "line 1, column 3: unpaired low"},
      {"unclosed comment", "/* x", "line 1, column 1: comment '/*' is never"},
      {"control char", "[\"a\tb\"]", "line 1, column 4: control character"},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_THAT(ParseJson(c.text), StatusIs(absl::StatusCode::kInvalidArgument,
                                            StartsWith(c.message_prefix)));
  }
}

TEST(JsonTest, DepthIsLimited) {
  const std::string deep = std::string(10000, '[') + std::string(10000, ']');
  EXPECT_THAT(ParseJson(deep), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("nested deeper than 64")));
  const std::string ok = std::string(64, '[') + std::string(64, ']');
  EXPECT_TRUE(ParseJson(ok).ok());
  const std::string objects =
      std::string(5000, '{') + "\"a\":" + std::string(5000, '}');
  EXPECT_FALSE(ParseJson(objects).ok());
}

TEST(JsonTest, WritesPretty) {
  JsonValue v = JsonValue::Object();
  v.Set("lr", JsonValue::Double(1e-3));
  JsonValue betas = JsonValue::Array();
  betas.Append(JsonValue::Double(0.9));
  betas.Append(JsonValue::Double(0.999));
  v.Set("betas", std::move(betas));
  JsonValue inner = JsonValue::Object();
  inner.Set("device", JsonValue::String("cpu"));
  inner.Set("size", JsonValue::Int(500000000));
  v.Set("inner", std::move(inner));
  v.Set("empty", JsonValue::Object());
  v.Set("flag", JsonValue::Bool(false));
  v.Set("none", JsonValue::Null());
  EXPECT_EQ(WriteJson(v),
            "{\n"
            "  \"lr\": 0.001,\n"
            "  \"betas\": [0.9, 0.999],\n"
            "  \"inner\": {\n"
            "    \"device\": \"cpu\",\n"
            "    \"size\": 500000000\n"
            "  },\n"
            "  \"empty\": {},\n"
            "  \"flag\": false,\n"
            "  \"none\": null\n"
            "}");
  EXPECT_EQ(WriteJson(v, JsonStyle::kCompact),
            "{\"lr\": 0.001, \"betas\": [0.9, 0.999], \"inner\": {\"device\": "
            "\"cpu\", \"size\": 500000000}, \"empty\": {}, \"flag\": false, "
            "\"none\": null}");
}

TEST(JsonTest, RoundTripsThroughWriter) {
  const char* text =
      R"({"a": [1, {"b": "x\"y\u0001"}, [], 5e8, -0.5], "c": {"d": null}})";
  ASSERT_OK_AND_ASSIGN(JsonValue v, ParseJson(text));
  ASSERT_OK_AND_ASSIGN(JsonValue back, ParseJson(WriteJson(v)));
  EXPECT_EQ(v, back);
  EXPECT_THAT(WriteJson(v), HasSubstr("\\u0001"));
  EXPECT_THAT(WriteJson(v), HasSubstr("5e8"));  // literal text is kept
}

TEST(JsonTest, SetReplacesInPlaceAndRemove) {
  ASSERT_OK_AND_ASSIGN(JsonValue v, ParseJson(R"({"a": 1, "b": 2})"));
  v.Set("a", JsonValue::Int(3));
  v.Set("c", JsonValue::Int(4));
  EXPECT_EQ(WriteJson(v, JsonStyle::kCompact), R"({"a": 3, "b": 2, "c": 4})");
  EXPECT_TRUE(v.Remove("b"));
  EXPECT_FALSE(v.Remove("b"));
  EXPECT_EQ(WriteJson(v, JsonStyle::kCompact), R"({"a": 3, "c": 4})");
}

TEST(JsonTest, EqualityComparesNumbersByValue) {
  EXPECT_EQ(JsonValue::Number("5e8"), JsonValue::Int(500000000));
  EXPECT_NE(JsonValue::Number("1.5"), JsonValue::Int(1));
  EXPECT_NE(JsonValue::Int(1), JsonValue::Bool(true));
  EXPECT_EQ(JsonValue::Number("9223372036854775807"),
            JsonValue::Int(INT64_MAX));
  EXPECT_NE(JsonValue::Number("9223372036854775807"),
            JsonValue::Int(INT64_MAX - 1));
}

TEST(JsonTest, FormatsDoublesShortestAndAsFloats) {
  EXPECT_EQ(FormatJsonDouble(1.0), "1.0");
  EXPECT_EQ(FormatJsonDouble(0.001), "0.001");
  EXPECT_EQ(FormatJsonDouble(1e-8), "1e-8");
  EXPECT_EQ(FormatJsonDouble(5e8), "5e8");
  EXPECT_EQ(FormatJsonDouble(0.999), "0.999");
  EXPECT_EQ(FormatJsonDouble(-2.5), "-2.5");
  EXPECT_EQ(FormatJsonDouble(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(FormatJsonDouble(1.7976931348623157e308), "1.7976931348623157e308");
}

TEST(JsonTest, QuotesStrings) {
  EXPECT_EQ(QuoteJsonString("a\"b\\\n"), R"("a\"b\\\n")");
}

}  // namespace
}  // namespace config
}  // namespace zero3
