// Copyright 2026 The zero3 Authors.
//
// A time-bounded fuzz run of `zero3 config FILE`: random mutations of the
// shipped configurations, written to a file and loaded through the
// command, for ZERO3_FUZZ_SECONDS (default 3) with the seed in
// ZERO3_FUZZ_SEED (default: from the clock; printed, so that a failure
// reproduces). Every input must end with exit 0 or 2, never a crash, and
// every error line must name the file, a key, or a line and column.

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/config/config.pb.h"
#include "core/config/deepspeed_keys.h"
#include "gtest/gtest.h"
#include "tools/cli/command.h"
#include "tools/cli/config_command.h"

namespace zero3 {
namespace cli {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  int64_t n = 0;
  return v != nullptr && absl::SimpleAtoi(v, &n) ? n : fallback;
}

// What a mutation splices in: JSON punctuation, odd numbers and every key
// zero3 knows.
std::vector<std::string> Splices() {
  std::vector<std::string> s = {"{",
                                "}",
                                "[",
                                "]",
                                ",",
                                ":",
                                "\"",
                                "null",
                                "-1",
                                "1e400",
                                "1e-400",
                                "\"auto\"",
                                "0.5",
                                "true",
                                "[]",
                                "{}",
                                "\\u0000",
                                "\xfe",
                                "999999999999999999999"};
  for (const config::DeepSpeedKey& k : config::DeepSpeedKeys()) {
    s.push_back(absl::StrCat("\"", k.name, "\": "));
  }
  return s;
}

std::string Mutated(std::string text, const std::vector<std::string>& splices,
                    std::mt19937_64& rng) {
  for (int n = 1 + static_cast<int>(rng() % 4); n > 0; --n) {
    const size_t at = text.empty() ? 0 : rng() % (text.size() + 1);
    const uint64_t kind = rng() % 4;
    if (kind == 0 && !text.empty()) {
      text[rng() % text.size()] = static_cast<char>(rng() % 256);
    } else if (kind == 1 && at < text.size()) {
      text.erase(at, 1 + rng() % 24);
    } else if (kind == 2 && !text.empty()) {
      text.insert(at, text.substr(rng() % text.size(), 1 + rng() % 48));
    } else {
      text.insert(at, splices[rng() % splices.size()]);
    }
  }
  return text;
}

// The names of the configuration's fields, at every depth.
void AddFieldNames(const google::protobuf::Descriptor* message,
                   std::set<std::string>* names) {
  for (int i = 0; i < message->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = message->field(i);
    if (!names->insert(f->name()).second) continue;
    if (f->message_type() != nullptr) AddFieldNames(f->message_type(), names);
  }
}

// Whether an error line names the file, a position, or a key: a dotted
// path of words that ends in a field or DeepSpeed key name.
bool NamesWhere(const std::string& line, const std::string& path) {
  static const std::regex kPosition("line [0-9]+, column [0-9]+");
  static const std::regex kKey("[A-Za-z_][A-Za-z0-9_]*");
  static const std::set<std::string>* const kNames = [] {
    auto* names = new std::set<std::string>;
    AddFieldNames(config::Config::descriptor(), names);
    for (const config::DeepSpeedKey& k : config::DeepSpeedKeys()) {
      names->insert(std::string(k.name));
    }
    return names;
  }();
  if (line.find(path) != std::string::npos) return true;
  if (std::regex_search(line, kPosition)) return true;
  for (std::sregex_iterator it(line.begin(), line.end(), kKey), end; it != end;
       ++it) {
    if (kNames->count(it->str()) > 0) return true;
  }
  return false;
}

TEST(ConfigCommandFuzzTest, MutatedFilesEndInAnAnswer) {
  const int64_t seconds = EnvInt("ZERO3_FUZZ_SECONDS", 3);
  const uint64_t seed = static_cast<uint64_t>(
      EnvInt("ZERO3_FUZZ_SEED",
             std::chrono::system_clock::now().time_since_epoch().count()));
  std::cout << "ZERO3_FUZZ_SEED=" << seed << " ZERO3_FUZZ_SECONDS=" << seconds
            << "\n";
  std::vector<std::string> samples;
  for (const char* name : {"zero3_offload.json", "legacy_cpu_offload.json",
                           "hf_zero3_offload_filled.json",
                           "zero3_offload.textproto", "warmup_offload.json"}) {
    samples.push_back(Slurp(absl::StrCat("testing/testdata/configs/", name)));
    ASSERT_FALSE(samples.back().empty()) << name;
  }
  const std::vector<std::string> splices = Splices();
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(NewConfigCommand());
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = tmp != nullptr ? tmp : "/tmp";
  std::mt19937_64 rng(seed);
  const auto end =
      std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int runs = 0;
  while (std::chrono::steady_clock::now() < end) {
    const size_t which = rng() % samples.size();
    const std::string path =
        absl::StrCat(dir, "/input", which == 3 ? ".textproto" : ".json");
    const std::string input = Mutated(samples[which], splices, rng);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << input;
    std::ostringstream out, err;
    const int code =
        RunCommandLine("zero3", commands, {"config", path}, out, err);
    ++runs;
    ASSERT_TRUE(code == kExitOk || code == kExitUsage)
        << "exit " << code << " on run " << runs << ":\n"
        << err.str() << "\ninput:\n"
        << input;
    for (absl::string_view line : absl::StrSplit(err.str(), '\n')) {
      if (!absl::StartsWith(line, "error: ")) continue;
      EXPECT_TRUE(NamesWhere(std::string(line), path))
          << "an error naming no file, key or position: " << line
          << "\ninput:\n"
          << input;
    }
    if (HasFailure()) return;
  }
  std::cout << runs << " inputs\n";
  EXPECT_GT(runs, 0);
}

}  // namespace
}  // namespace cli
}  // namespace zero3
