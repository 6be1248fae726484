// Copyright 2026 The zero3 Authors.

#include "tools/cli/flags.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::zero3::testing::IsOk;
using ::zero3::testing::StatusIs;

// A FlagSet with one flag of each kind, bound to public members.
struct Fixture {
  FlagSet flags{"zero3 demo", "Does a demonstration."};
  std::string name = "x";
  int64_t count = 1;
  double ratio = 0.5;
  bool verbose = false;
  bool pinned = true;
  std::vector<std::string> sets;

  Fixture() {
    flags.AddPositional("FILE", "input file");
    flags.AddPositional("OUT", "output file", /*required=*/false);
    flags.AddString("name", &name, "NAME", "a name");
    flags.AddInt("world-size", &count, "N", "ranks");
    flags.AddDouble("ratio", &ratio, "R", "a fraction");
    flags.AddBool("verbose", &verbose, "say more");
    flags.AddBool("pin", &pinned, "pin memory");
    flags.AddRepeated("set", &sets, "KEY=VALUE", "override a key");
  }
};

TEST(FlagSetTest, ParsesEveryForm) {
  Fixture f;
  const std::vector<std::string> args = {
      "in.json",     "--name",    "abc",      "--world-size=8", "--ratio",
      "-0.25",       "--verbose", "--no-pin", "--set",          "a.b=1",
      "--set=c.d=e", "--",        "--literal"};
  ASSERT_THAT(f.flags.Parse(args), IsOk());
  EXPECT_EQ(f.name, "abc");
  EXPECT_EQ(f.count, 8);
  EXPECT_DOUBLE_EQ(f.ratio, -0.25);
  EXPECT_TRUE(f.verbose);
  EXPECT_FALSE(f.pinned);
  EXPECT_THAT(f.sets, ElementsAre("a.b=1", "c.d=e"));
  EXPECT_THAT(f.flags.positional(), ElementsAre("in.json", "--literal"));
  EXPECT_FALSE(f.flags.help_requested());
}

TEST(FlagSetTest, AnAliasSetsItsFlagAndShowsInHelp) {
  Fixture f;
  f.flags.AddAlias("world-size", "world_size");
  const std::vector<std::string> args = {"in.json", "--world_size", "4"};
  ASSERT_THAT(f.flags.Parse(args), IsOk());
  EXPECT_EQ(f.count, 4);
  EXPECT_THAT(f.flags.Help(), HasSubstr("(also --world_size)"));
}

// Flags declared after Section are listed under its heading, after the
// flags of no section and --help; sections in the order they were opened.
TEST(FlagSetTest, SectionsGroupTheHelp) {
  FlagSet flags("zero3 x", "");
  std::string a, b, c;
  bool d = false;
  flags.AddString("plain", &a, "V", "no section");
  flags.Section("Simulator only");
  flags.AddString("sim", &b, "V", "a simulator flag");
  flags.Section("GPU only");
  flags.AddBool("gpu", &d, "a GPU flag");
  flags.Section("Simulator only");
  flags.AddString("sim2", &c, "V", "another simulator flag");
  const std::string help = flags.Help();
  const size_t plain = help.find("--plain"), h = help.find("-h, --help"),
               sim = help.find("\nSimulator only:\n  --sim "),
               sim2 = help.find("--sim2"),
               gpu = help.find("\nGPU only:\n  --gpu");
  ASSERT_NE(sim, std::string::npos) << help;
  ASSERT_NE(gpu, std::string::npos) << help;
  EXPECT_LT(plain, h);
  EXPECT_LT(h, sim);
  EXPECT_LT(sim, sim2);
  EXPECT_LT(sim2, gpu);
  std::vector<std::string> args = {"--sim2", "x", "--gpu"};
  ASSERT_TRUE(flags.Parse(args).ok());
  EXPECT_EQ(c, "x");
  EXPECT_TRUE(d);
}

TEST(FlagSetTest, BooleansTakeValuesOnlyAfterEquals) {
  Fixture f;
  ASSERT_THAT(f.flags.Parse({"--verbose=true", "--pin=false", "in"}), IsOk());
  EXPECT_TRUE(f.verbose);
  EXPECT_FALSE(f.pinned);
  EXPECT_THAT(f.flags.positional(), ElementsAre("in"));
}

TEST(FlagSetTest, IntegersAsConfigsWriteThem) {
  Fixture f;
  ASSERT_THAT(f.flags.Parse({"in", "--world-size", "5e2"}), IsOk());
  EXPECT_EQ(f.count, 500);
}

TEST(FlagSetTest, IntegersOutsideTheirRangeNameTheLimits) {
  FlagSet flags("zero3 demo", "");
  int64_t ranks = 2;
  flags.AddInt("ranks", &ranks, "N", "ranks", {1, 1024});
  // Beyond 32 bits, beyond 64 bits, negative, and written as a double.
  for (const char* bad : {"4294967298", "2147483648", "9223372036854775808",
                          "1e30", "-1", "0", "2e3"}) {
    EXPECT_THAT(flags.Parse({"--ranks", bad}),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("--ranks: must be from 1 to 1024, got")))
        << bad;
    EXPECT_EQ(ranks, 2) << bad;
  }
  ASSERT_THAT(flags.Parse({"--ranks=1024"}), IsOk());
  EXPECT_EQ(ranks, 1024);
  EXPECT_THAT(flags.Help(), HasSubstr("ranks (from 1 to 1024; default: 2)"));
}

TEST(FlagSetTest, OneSidedRangesAndDefaultText) {
  FlagSet flags("zero3 demo", "");
  int64_t keep = 0, gpus = 0;
  flags.AddInt("keep", &keep, "N", "keep", {0});
  flags.AddInt("gpus", &gpus, "N", "gpus", {1, 64});
  flags.SetDefaultText("gpus", "8");
  EXPECT_THAT(flags.Parse({"--keep", "-3"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("must be at least 0")));
  const std::string help = flags.Help();
  EXPECT_THAT(help, HasSubstr("keep (at least 0; default: 0)"));
  EXPECT_THAT(help, HasSubstr("gpus (from 1 to 64; default: 8)"));
}

TEST(FlagSetTest, StringsMustNotBeEmpty) {
  Fixture f;
  EXPECT_THAT(f.flags.Parse({"in", "--name", ""}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--name: expected a value, got \"\"")));
  EXPECT_THAT(f.flags.Parse({"in", "--name="}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--name: expected a value")));
  EXPECT_EQ(f.name, "x");
}

TEST(FlagSetTest, HelpTakesNoValue) {
  Fixture f;
  EXPECT_THAT(f.flags.Parse({"--help=3"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--help takes no value, got --help=3")));
  EXPECT_FALSE(f.flags.help_requested());
}

TEST(FlagSetTest, SaysWhichFlagsWereGiven) {
  Fixture f;
  ASSERT_THAT(f.flags.Parse({"in", "--no-pin", "--world-size=3"}), IsOk());
  EXPECT_TRUE(f.flags.given("pin"));
  EXPECT_TRUE(f.flags.given("world-size"));
  EXPECT_FALSE(f.flags.given("verbose"));
  EXPECT_FALSE(f.flags.given("name"));
}

TEST(FlagSetTest, LastValueWins) {
  Fixture f;
  ASSERT_THAT(f.flags.Parse({"in", "--name=a", "--name=b"}), IsOk());
  EXPECT_EQ(f.name, "b");
}

TEST(FlagSetTest, HelpStopsParsing) {
  Fixture f;
  ASSERT_THAT(f.flags.Parse({"--help", "--bogus"}), IsOk());
  EXPECT_TRUE(f.flags.help_requested());
  Fixture g;
  ASSERT_THAT(g.flags.Parse({"-h"}), IsOk());
  EXPECT_TRUE(g.flags.help_requested());
}

struct ErrorCase {
  std::vector<std::string> args;
  const char* message;
};

TEST(FlagSetTest, Errors) {
  const ErrorCase cases[] = {
      {{"in", "--wrold-size", "2"},
       "unknown flag --wrold-size; did you mean --world-size? (zero3 demo "
       "--help lists the flags)"},
      {{"in", "--world_size=2"}, "did you mean --world-size?"},
      {{"in", "--no-verbos"}, "did you mean --no-verbose?"},
      {{"in", "--frobnicate"}, "unknown flag --frobnicate (zero3 demo"},
      {{"in", "-v"}, "unknown flag -v; flags start with --"},
      {{"in", "--world-size"}, "--world-size needs a value: --world-size N"},
      {{"in", "--world-size", "two"},
       "--world-size: expected an integer, found \"two\""},
      {{"in", "--world-size=1.5"}, "expected an integer, found \"1.5\""},
      {{"in", "--ratio=x"}, "--ratio: expected a number, found \"x\""},
      {{"in", "--verbose=maybe"},
       "--verbose: expected true or false, found \"maybe\""},
      {{}, "missing argument FILE (usage: zero3 demo FILE [OUT] [flags])"},
      {{"a", "b", "c"},
       "unexpected argument \"c\": zero3 demo takes at most 2 arguments"},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.message);
    Fixture f;
    EXPECT_THAT(
        f.flags.Parse(c.args),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)));
  }
}

TEST(FlagSetTest, HelpDescribesEveryFlag) {
  Fixture f;
  EXPECT_EQ(f.flags.Help(),
            "Usage: zero3 demo FILE [OUT] [flags]\n"
            "\n"
            "Does a demonstration.\n"
            "\n"
            "Arguments:\n"
            "  FILE             input file\n"
            "  OUT              output file\n"
            "\n"
            "Flags:\n"
            "  --name NAME      a name (default: \"x\")\n"
            "  --world-size N   ranks (default: 1)\n"
            "  --ratio R        a fraction (default: 0.5)\n"
            "  --verbose        say more (default: off)\n"
            "  --pin            pin memory (default: on; --no-pin turns it "
            "off)\n"
            "  --set KEY=VALUE  override a key (repeatable)\n"
            "  -h, --help       print this help and exit\n");
}

TEST(FlagSetTest, RemainingPositionalsTakeAnotherCommandLine) {
  FlagSet flags("zero3 run", "Runs a command.");
  int64_t copies = 1;
  std::vector<std::string> command;
  flags.AddInt("copies", &copies, "N", "how many");
  flags.AddRemainingPositionals("COMMAND", &command, "what to run");
  ASSERT_THAT(
      flags.Parse({"--copies", "3", "--", "train", "--steps", "2", "-h"}),
      IsOk());
  EXPECT_EQ(copies, 3);
  EXPECT_THAT(command, ElementsAre("train", "--steps", "2", "-h"));
  EXPECT_FALSE(flags.help_requested());
  EXPECT_THAT(flags.Help(),
              HasSubstr("Usage: zero3 run [flags] [-- COMMAND...]"));
  EXPECT_THAT(flags.Help(), HasSubstr("COMMAND     what to run"));

  // None is fine; flags before `--` are still this command's.
  FlagSet none("zero3 run", "");
  std::vector<std::string> empty;
  none.AddRemainingPositionals("COMMAND", &empty, "what to run");
  ASSERT_THAT(none.Parse({}), IsOk());
  EXPECT_TRUE(empty.empty());
  FlagSet unknown("zero3 run", "");
  unknown.AddRemainingPositionals("COMMAND", &empty, "what to run");
  EXPECT_THAT(unknown.Parse({"train", "--steps", "2"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown flag --steps")));
}

}  // namespace
}  // namespace cli
}  // namespace zero3
