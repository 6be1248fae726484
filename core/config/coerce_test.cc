// Copyright 2026 The zero3 Authors.
//
// The lax conversions of pydantic v2 (its conversion table for bool, int and
// float; pydantic-core's str_as_bool, str_as_int, str_as_float) and
// DeepSpeed's fp16 validators (runtime/precision_config.py).

#include "core/config/coerce.h"

#include <string>

#include "gtest/gtest.h"

namespace zero3 {
namespace config {
namespace {

std::string Lax(const JsonValue& v, LaxType type,
                absl::string_view path = "zero_optimization.x") {
  const absl::optional<JsonValue> c = CoerceLax(v, type, path);
  return c.has_value() ? WriteJson(*c) : "rejected";
}

JsonValue S(const char* s) { return JsonValue::String(s); }

TEST(CoerceTest, BoolFromTheStringsAndNumbersPydanticAccepts) {
  for (const char* t :
       {"true", "True", "TRUE", "1", "yes", "on", "t", "y", "Y", "On"}) {
    EXPECT_EQ(Lax(S(t), LaxType::kBool), "true") << t;
  }
  for (const char* f : {"false", "False", "0", "no", "off", "f", "n", "NO"}) {
    EXPECT_EQ(Lax(S(f), LaxType::kBool), "false") << f;
  }
  for (const char* bad : {"2", "", "truee", " true", "nope", "1.0"}) {
    EXPECT_EQ(Lax(S(bad), LaxType::kBool), "rejected") << bad;
  }
  EXPECT_EQ(Lax(JsonValue::Int(1), LaxType::kBool), "true");
  EXPECT_EQ(Lax(JsonValue::Int(0), LaxType::kBool), "false");
  EXPECT_EQ(Lax(JsonValue::Number("1.0"), LaxType::kBool), "true");
  EXPECT_EQ(Lax(JsonValue::Int(2), LaxType::kBool), "rejected");
  EXPECT_EQ(Lax(JsonValue::Number("0.5"), LaxType::kBool), "rejected");
}

TEST(CoerceTest, IntFromIntegralStringsAndBools) {
  EXPECT_EQ(Lax(S("3"), LaxType::kInt), "3");
  EXPECT_EQ(Lax(S(" +3 "), LaxType::kInt), "3");
  EXPECT_EQ(Lax(S("-7"), LaxType::kInt), "-7");
  EXPECT_EQ(Lax(S("1_000"), LaxType::kInt), "1000");
  EXPECT_EQ(Lax(S("3.0"), LaxType::kInt), "3");
  EXPECT_EQ(Lax(S("007"), LaxType::kInt), "7");
  EXPECT_EQ(Lax(JsonValue::Bool(true), LaxType::kInt), "1");
  for (const char* bad : {"3.5", "5e8", "", "three", "1__0", "_1", "0x10",
                          "99999999999999999999", "3.01", "3.", "+-3"}) {
    EXPECT_EQ(Lax(S(bad), LaxType::kInt), "rejected") << bad;
  }
  // A number is not converted here: json_to_config reads 2.0 and 5e8 as
  // integers and rejects 2.5 itself.
  EXPECT_EQ(Lax(JsonValue::Number("2.0"), LaxType::kInt), "rejected");
}

TEST(CoerceTest, FloatFromNumericStrings) {
  EXPECT_EQ(Lax(S("3"), LaxType::kFloat, "fp16.loss_scale"), "3.0");
  EXPECT_EQ(Lax(S("1e-3"), LaxType::kFloat), "0.001");
  EXPECT_EQ(Lax(S(" .5 "), LaxType::kFloat), "0.5");
  EXPECT_EQ(Lax(JsonValue::Bool(false), LaxType::kFloat), "0.0");
  for (const char* bad :
       {"", "e3", "1e", "inf", "nan", "1.5.0", "1e999", "abc"}) {
    EXPECT_EQ(Lax(S(bad), LaxType::kFloat), "rejected") << bad;
  }
}

TEST(CoerceTest, DeepSpeedsFp16ValidatorsRunFirst) {
  // _validate_loss_scale rejects bools; _reject_non_integer_scale_params
  // rejects bools and strings that Python's int() does not read.
  EXPECT_EQ(Lax(JsonValue::Bool(true), LaxType::kFloat, "fp16.loss_scale"),
            "rejected");
  EXPECT_EQ(Lax(JsonValue::Bool(true), LaxType::kInt, "fp16.loss_scale_window"),
            "rejected");
  EXPECT_EQ(Lax(S("3.0"), LaxType::kInt, "fp16.min_loss_scale"), "rejected");
  EXPECT_EQ(Lax(S("3.0"), LaxType::kInt, "fp16.hysteresis"), "3");
  EXPECT_EQ(Lax(S("500"), LaxType::kInt, "fp16.loss_scale_window"), "500");
}

TEST(CoerceTest, OnlyPydanticSectionsConvert) {
  EXPECT_TRUE(IsPydanticPath("fp16.enabled"));
  EXPECT_TRUE(IsPydanticPath("zero_optimization.offload_param.pin_memory"));
  EXPECT_TRUE(IsPydanticPath("csv_monitor.enabled"));
  EXPECT_FALSE(IsPydanticPath("train_batch_size"));
  EXPECT_FALSE(IsPydanticPath("optimizer.params.lr"));
  EXPECT_FALSE(IsPydanticPath("scheduler.params.warmup_num_steps"));
  EXPECT_FALSE(IsPydanticPath("zero3.optimizer_threads"));
}

TEST(CoerceTest, NoticeNamesValueAndResult) {
  EXPECT_EQ(CoercionNotice(S("3"), JsonValue::Int(3)),
            "the string \"3\" is read as 3, as DeepSpeed's pydantic reads "
            "it; write 3");
}

}  // namespace
}  // namespace config
}  // namespace zero3
