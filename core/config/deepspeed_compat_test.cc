// Copyright 2026 The zero3 Authors.
//
// The DeepSpeed compatibility suite: every config of
// testdata/deepspeed_compat.json is loaded and zero3's verdict (accept or
// reject) compared with DeepSpeed's; for a config both accept, the resolved
// values the table gives (DeepSpeed's) are compared with zero3's. A case
// with "kept" is a disagreement on purpose and must still disagree (so the
// table stays true); every other case must agree. The table's cases are our
// own, written from DeepSpeed's config tests and docs and transformers'
// DeepSpeed test configs; each names its source.

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/config/config.pb.h"
#include "core/config/config_loader.h"
#include "core/config/json.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace config {
namespace {

constexpr char kTable[] = "core/config/testdata/deepspeed_compat.json";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const JsonValue* AtPath(const JsonValue& root, const std::string& dotted) {
  const JsonValue* node = &root;
  for (absl::string_view part : absl::StrSplit(dotted, '.')) {
    if (node == nullptr || !node->is_object()) return nullptr;
    node = node->Find(part);
  }
  return node;
}

// Numbers compare by value (500000000 == 5e8), everything else exactly.
bool SameValue(const JsonValue& a, const JsonValue& b) {
  if (a.is_number() && b.is_number()) {
    const absl::optional<int64_t> ia = a.AsExactInt64();
    const absl::optional<int64_t> ib = b.AsExactInt64();
    if (ia.has_value() && ib.has_value()) return *ia == *ib;
    return a.number_value() == b.number_value();
  }
  return a == b;
}

struct Outcome {
  bool agrees = true;
  // Why not, for the report.
  std::string difference;
};

// Runs one case of the table.
Outcome RunCase(const JsonValue& c) {
  LoadOptions options;
  if (const JsonValue* ws = c.Find("world_size")) {
    options.world_size = *ws->AsExactInt64();
  }
  const JsonValue* text = c.Find("config_text");
  const std::string input =
      text != nullptr ? text->string_value() : WriteJson(*c.Find("config"));
  const absl::StatusOr<LoadedConfig> loaded =
      LoadConfigText(input, ConfigFormat::kJson, options);
  const bool ds_accepts = c.Find("deepspeed")->string_value() == "accept";
  Outcome out;
  if (loaded.ok() != ds_accepts) {
    out.agrees = false;
    out.difference = loaded.ok() ? "zero3 accepts"
                                 : absl::StrCat("zero3 rejects: ",
                                                loaded.status().message());
    return out;
  }
  if (!loaded.ok()) {
    // Both reject: zero3's error must say the expected thing.
    if (const JsonValue* want = c.Find("zero3_error")) {
      EXPECT_NE(loaded.status().message().find(want->string_value()),
                std::string::npos)
          << loaded.status().message();
    }
    return out;
  }
  const JsonValue resolved = ConfigToJsonValue(loaded->config);
  if (const JsonValue* want = c.Find("resolved")) {
    for (const JsonValue::Member& m : want->members()) {
      const JsonValue* got = AtPath(resolved, m.key);
      if (got == nullptr || !SameValue(*got, m.value)) {
        out.agrees = false;
        absl::StrAppend(&out.difference, m.key, ": DeepSpeed ",
                        WriteJson(m.value), ", zero3 ",
                        got == nullptr ? "(none)" : WriteJson(*got), "; ");
      }
    }
  }
  return out;
}

TEST(DeepSpeedCompatTest, EveryCaseAgreesOrSaysWhyNot) {
  const absl::StatusOr<JsonValue> table = ParseJson(ReadFile(kTable));
  ASSERT_TRUE(table.ok()) << table.status();
  const std::vector<JsonValue>& cases = table->Find("cases")->array();
  int agree = 0, kept = 0, accepted = 0;
  for (const JsonValue& c : cases) {
    const std::string name = c.Find("name")->string_value();
    SCOPED_TRACE(name);
    ASSERT_NE(c.Find("source"), nullptr) << "every case names its source";
    const bool ds_rejects = c.Find("deepspeed")->string_value() == "reject";
    EXPECT_TRUE(!ds_rejects || c.Find("why") != nullptr)
        << "a DeepSpeed rejection says why";
    accepted += !ds_rejects;
    const Outcome o = RunCase(c);
    const JsonValue* reason = c.Find("kept");
    if (reason == nullptr) {
      EXPECT_TRUE(o.agrees) << name << ": " << o.difference;
    } else {
      EXPECT_FALSE(o.agrees) << name << " agrees now; remove its \"kept\"";
      EXPECT_FALSE(reason->string_value().empty());
      ++kept;
    }
    agree += o.agrees;
  }
  std::cout << "DeepSpeed compatibility suite: " << cases.size() << " configs ("
            << accepted << " DeepSpeed accepts, " << cases.size() - accepted
            << " it rejects); zero3 agrees on " << agree << " ("
            << (100 * agree / cases.size()) << "%); " << kept
            << " disagreements kept on purpose, each with its reason"
            << std::endl;
  EXPECT_GE(cases.size(), 100u);
}

}  // namespace
}  // namespace config
}  // namespace zero3
