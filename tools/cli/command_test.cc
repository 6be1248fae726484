// Copyright 2026 The zero3 Authors.

#include "tools/cli/command.h"

#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace cli {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Records how it was run.
class EchoCommand : public Command {
 public:
  absl::string_view name() const override { return "echo"; }
  absl::string_view summary() const override { return "print the words"; }
  absl::string_view description() const override {
    return "Prints its arguments.";
  }
  void DefineFlags(FlagSet& flags) override {
    flags.AddPositional("WORD", "a word");
    flags.AddBool("shout", &shout_, "upper case");
  }
  int Run(const std::vector<std::string>& positional, std::ostream& out,
          std::ostream& err) override {
    out << (shout_ ? "SHOUT " : "") << absl::StrJoin(positional, " ");
    err << "ran";
    return 7;
  }

 private:
  bool shout_ = false;
};

struct Result {
  int code;
  std::string out;
  std::string err;
};

Result RunZero3(const std::vector<std::string>& args) {
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(std::make_unique<EchoCommand>());
  std::ostringstream out, err;
  const int code = RunCommandLine("zero3", commands, args, out, err);
  return {code, out.str(), err.str()};
}

TEST(RunCommandLineTest, DispatchesToTheCommand) {
  const Result r = RunZero3({"echo", "hi", "--shout"});
  EXPECT_EQ(r.code, 7);
  EXPECT_EQ(r.out, "SHOUT hi");
  EXPECT_EQ(r.err, "ran");
}

TEST(RunCommandLineTest, TopLevelHelpListsCommands) {
  for (const char* help : {"--help", "-h", "help"}) {
    const Result r = RunZero3({help});
    EXPECT_EQ(r.code, kExitOk);
    EXPECT_THAT(r.out, HasSubstr("Usage: zero3 COMMAND"));
    EXPECT_THAT(r.out, HasSubstr("  echo  print the words\n"));
    EXPECT_THAT(r.err, IsEmpty());
  }
  const Result none = RunZero3({});
  EXPECT_EQ(none.code, kExitUsage);
  EXPECT_THAT(none.err, HasSubstr("Usage: zero3 COMMAND"));
  EXPECT_THAT(none.out, IsEmpty());
}

TEST(RunCommandLineTest, CommandHelp) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"echo", "--help"},
        std::vector<std::string>{"help", "echo"}}) {
    const Result r = RunZero3(args);
    EXPECT_EQ(r.code, kExitOk);
    EXPECT_THAT(r.out, HasSubstr("Usage: zero3 echo WORD [flags]"));
    EXPECT_THAT(r.out, HasSubstr("--shout"));
    EXPECT_THAT(r.err, IsEmpty());
  }
}

TEST(RunCommandLineTest, UsageErrorsExitTwoOnStderr) {
  Result r = RunZero3({"ehco"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(r.err,
            "zero3: unknown command \"ehco\"; did you mean \"echo\"? ('zero3 "
            "--help' lists the commands)\n");
  EXPECT_THAT(r.out, IsEmpty());

  r = RunZero3({"echo", "hi", "--shuot"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(r.err,
            "zero3 echo: unknown flag --shuot; did you mean --shout? (zero3 "
            "echo --help lists the flags)\n");

  r = RunZero3({"--shout"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("expected a command before --shout"));

  r = RunZero3({"--help=3"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("--help takes no value, got --help=3"));

  r = RunZero3({"help", "nope"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("unknown command \"nope\""));

  r = RunZero3({"echo"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("missing argument WORD"));
}

TEST(ResolveUserPathTest, FollowsBazelRun) {
  unsetenv("BUILD_WORKING_DIRECTORY");
  EXPECT_EQ(ResolveUserPath("a/b.json"), "a/b.json");
  setenv("BUILD_WORKING_DIRECTORY", "/home/me", 1);
  EXPECT_EQ(ResolveUserPath("a/b.json"), "/home/me/a/b.json");
  EXPECT_EQ(ResolveUserPath("/abs/b.json"), "/abs/b.json");
  unsetenv("BUILD_WORKING_DIRECTORY");
}

}  // namespace
}  // namespace cli
}  // namespace zero3
