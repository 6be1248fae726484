// Copyright 2026 The zero3 Authors.

#include "core/util/key_value.h"

#include "gtest/gtest.h"

namespace zero3 {
namespace {

TEST(SplitKeyValueTest, SplitsAtTheFirstEquals) {
  const absl::optional<KeyValue> kv = SplitKeyValue("a.b=x=y");
  ASSERT_TRUE(kv.has_value());
  EXPECT_EQ(kv->key, "a.b");
  EXPECT_EQ(kv->value, "x=y");
}

TEST(SplitKeyValueTest, KeepsEmptySidesAndSpaces) {
  absl::optional<KeyValue> kv = SplitKeyValue("=v");
  ASSERT_TRUE(kv.has_value());
  EXPECT_EQ(kv->key, "");
  EXPECT_EQ(kv->value, "v");
  kv = SplitKeyValue(" k = ");
  ASSERT_TRUE(kv.has_value());
  EXPECT_EQ(kv->key, " k ");
  EXPECT_EQ(kv->value, " ");
}

TEST(SplitKeyValueTest, NoEqualsIsNoSetting) {
  EXPECT_FALSE(SplitKeyValue("tp").has_value());
  EXPECT_FALSE(SplitKeyValue("").has_value());
}

}  // namespace
}  // namespace zero3
