// Copyright 2026 The zero3 Authors.
//
// LaunchLocal with /bin/sh scripts standing in for ranks: they read the
// rank variables, print, sleep, exit with codes or get killed.

#include "tools/cli/launch_command.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "core/util/cpu_binding.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace cli {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::zero3::testing::StatusIs;

LaunchOptions Shell(int nprocs, const std::string& script) {
  LaunchOptions options;
  options.argv = {"/bin/sh", "-c", script};
  options.nprocs = nprocs;
  options.grace = absl::Seconds(5);
  return options;
}

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  std::string path =
      absl::StrCat(dir != nullptr ? dir : "/tmp", "/launch.", getpid(), ".",
                   absl::ToUnixNanos(absl::Now()));
  EXPECT_EQ(system(absl::StrCat("mkdir -p ", path).c_str()), 0);
  return path;
}

TEST(LaunchLocalTest, EveryRankGetsItsOwnVariables) {
  std::ostringstream out, err;
  ASSERT_OK_AND_ASSIGN(
      LaunchResult result,
      LaunchLocal(Shell(3,
                        "echo \"rank=$RANK local=$LOCAL_RANK world=$WORLD_SIZE "
                        "lws=$LOCAL_WORLD_SIZE group=$GROUP_RANK "
                        "addr=$MASTER_ADDR port=$MASTER_PORT\"; "
                        "echo \"note from $RANK\" >&2"),
                  out, err));
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.failed_rank, -1);
  EXPECT_TRUE(result.message.empty()) << result.message;
  EXPECT_GT(result.master_port, 0);
  ASSERT_EQ(result.ranks.size(), 3u);
  std::set<pid_t> pids;
  for (int r = 0; r < 3; ++r) {
    EXPECT_THAT(out.str(), HasSubstr(absl::StrCat(
                               "[rank ", r, "] rank=", r, " local=", r,
                               " world=3 lws=3 group=0 addr=127.0.0.1 port=",
                               result.master_port, "\n")));
    EXPECT_THAT(err.str(),
                HasSubstr(absl::StrCat("[rank ", r, "] note from ", r, "\n")));
    EXPECT_EQ(result.ranks[r].rank, r);
    EXPECT_FALSE(result.ranks[r].signaled);
    EXPECT_EQ(result.ranks[r].code, 0);
    pids.insert(result.ranks[r].pid);
  }
  EXPECT_EQ(pids.size(), 3u);
}

// Each rank runs on its own share of the launcher's cores; together they
// cover them all.
TEST(LaunchLocalTest, BoundRanksGetDisjointCpus) {
  const std::vector<std::vector<int>> slices = CpuSlices(AllowedCpus(), 2);
  if (slices.empty()) GTEST_SKIP() << "fewer than 2 cores";
  LaunchOptions options =
      Shell(2, "grep Cpus_allowed_list /proc/self/status | tr -d '\\t '");
  options.bind_cpus = true;
  std::ostringstream out, err;
  ASSERT_OK_AND_ASSIGN(LaunchResult result, LaunchLocal(options, out, err));
  EXPECT_EQ(result.exit_code, 0) << err.str();
  for (int r = 0; r < 2; ++r) {
    const std::string cpus = CpuListText(slices[r]);
    EXPECT_THAT(out.str(),
                HasSubstr(absl::StrCat("[rank ", r,
                                       "] Cpus_allowed_list:", cpus, "\n")));
    EXPECT_THAT(err.str(), HasSubstr(absl::StrCat("zero3 launch: rank ", r,
                                                  " on CPUs ", cpus, "\n")));
  }
}

TEST(LaunchLocalTest, GivenPortAndNoPrefix) {
  LaunchOptions options =
      Shell(2, "echo \"$MASTER_PORT\"; printf 'no newline'");
  options.master_port = 23456;
  options.prefix_output = false;
  std::ostringstream out, err;
  ASSERT_OK_AND_ASSIGN(LaunchResult result, LaunchLocal(options, out, err));
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.master_port, 23456);
  std::vector<std::string> lines = absl::StrSplit(out.str(), '\n');
  EXPECT_EQ(std::count(lines.begin(), lines.end(), "23456"), 2);
  EXPECT_EQ(std::count(lines.begin(), lines.end(), "no newline"), 2);
}

// Node 1 of 2 with two processes each: global ranks 2 and 3, local 0 and
// 1, the given master address; a failure names the global rank.
TEST(LaunchLocalTest, SecondNodeRunsTheUpperRanks) {
  // Rank 3 fails only once rank 2 has printed its line (a file says so),
  // or the launcher could stop rank 2 before it ever ran.
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string printed =
      absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/second_node_rank2_printed");
  std::remove(printed.c_str());
  LaunchOptions options = Shell(
      2, absl::StrCat(
             "echo \"rank=$RANK local=$LOCAL_RANK world=$WORLD_SIZE "
             "lws=$LOCAL_WORLD_SIZE group=$GROUP_RANK addr=$MASTER_ADDR\"; "
             "if [ \"$RANK\" = 3 ]; then i=0; while [ ! -e '",
             printed,
             "' ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); "
             "done; exit 7; fi; touch '",
             printed, "'; sleep 30"));
  options.nnodes = 2;
  options.node_rank = 1;
  options.master_addr = "10.0.0.1";
  options.master_port = 29500;
  options.grace = absl::Seconds(2);
  std::ostringstream out, err;
  ASSERT_OK_AND_ASSIGN(LaunchResult result, LaunchLocal(options, out, err));
  for (int local = 0; local < 2; ++local) {
    EXPECT_THAT(out.str(),
                HasSubstr(absl::StrCat("[rank ", 2 + local,
                                       "] rank=", 2 + local, " local=", local,
                                       " world=4 lws=2 group=1 "
                                       "addr=10.0.0.1\n")));
  }
  EXPECT_EQ(result.failed_rank, 3);
  EXPECT_EQ(result.exit_code, 7);
  EXPECT_THAT(result.message, HasSubstr("rank 3 (pid"));
}

TEST(LaunchLocalTest, NodeRankOutsideTheNodesIsRefused) {
  LaunchOptions options = Shell(1, "true");
  options.nnodes = 2;
  options.node_rank = 2;
  std::ostringstream out, err;
  EXPECT_FALSE(LaunchLocal(options, out, err).ok());
}

TEST(LaunchLocalTest, FailingRankStopsTheOthers) {
  std::ostringstream out, err;
  const absl::Time start = absl::Now();
  ASSERT_OK_AND_ASSIGN(
      LaunchResult result,
      LaunchLocal(Shell(3,
                        "if [ \"$RANK\" = 1 ]; then sleep 0.2; "
                        "echo 'early line' >&2; "
                        "echo 'CUDA error: out of memory' >&2; "
                        "echo 'step 3 failed' >&2; exit 3; fi; "
                        "sleep 60"),
                  out, err));
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));
  EXPECT_EQ(result.failed_rank, 1);
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(result.ranks[1].code, 3);
  EXPECT_FALSE(result.ranks[1].signaled);
  EXPECT_FALSE(result.ranks[1].stopped);
  for (int r : {0, 2}) {
    EXPECT_TRUE(result.ranks[r].stopped) << r;
    EXPECT_TRUE(result.ranks[r].signaled) << r;
    EXPECT_EQ(result.ranks[r].code, SIGTERM) << r;
  }
  EXPECT_THAT(result.message,
              AllOf(HasSubstr("rank 1 (pid "), HasSubstr("exited with code 3"),
                    HasSubstr("the other ranks were stopped"),
                    HasSubstr("of rank 1's stderr"),
                    HasSubstr("  CUDA error: out of memory\n"),
                    HasSubstr("  step 3 failed\n"),
                    HasSubstr("rank 0: stopped (SIGTERM)"),
                    HasSubstr("rank 1: exit code 3")));
  EXPECT_THAT(err.str(), HasSubstr("[rank 1] step 3 failed"));
}

TEST(LaunchLocalTest, TailIsLimited) {
  LaunchOptions options =
      Shell(1, "for i in 1 2 3 4 5 6; do echo \"line $i\" >&2; done; exit 9");
  options.tail_lines = 2;
  std::ostringstream out, err;
  ASSERT_OK_AND_ASSIGN(LaunchResult result, LaunchLocal(options, out, err));
  EXPECT_EQ(result.exit_code, 9);
  EXPECT_THAT(result.message,
              AllOf(HasSubstr("last 2 lines of rank 0's"), HasSubstr("line 5"),
                    HasSubstr("line 6"), Not(HasSubstr("line 4"))));
}

TEST(LaunchLocalTest, KilledRankIsNamedWithItsSignal) {
  std::ostringstream out, err;
  ASSERT_OK_AND_ASSIGN(
      LaunchResult result,
      LaunchLocal(Shell(3,
                        "if [ \"$RANK\" = 2 ]; then echo dying >&2; "
                        "kill -KILL $$; fi; sleep 60"),
                  out, err));
  EXPECT_EQ(result.failed_rank, 2);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(result.ranks[2].signaled);
  EXPECT_EQ(result.ranks[2].code, SIGKILL);
  EXPECT_THAT(result.message,
              AllOf(HasSubstr("rank 2"), HasSubstr("was killed by SIGKILL"),
                    HasSubstr("  dying\n")));
}

// A rank that ignores SIGTERM is killed once the grace period is over.
TEST(LaunchLocalTest, StubbornRankIsKilledAfterTheGracePeriod) {
  LaunchOptions options =
      Shell(2,
            "if [ \"$RANK\" = 0 ]; then sleep 0.3; exit 5; fi; "
            "trap '' TERM; while true; do sleep 0.1; done");
  options.grace = absl::Milliseconds(500);
  std::ostringstream out, err;
  const absl::Time start = absl::Now();
  ASSERT_OK_AND_ASSIGN(LaunchResult result, LaunchLocal(options, out, err));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_EQ(result.failed_rank, 0);
  EXPECT_EQ(result.exit_code, 5);
  EXPECT_TRUE(result.ranks[1].signaled);
  EXPECT_EQ(result.ranks[1].code, SIGKILL);
}

class ForwardedSignalTest : public ::testing::TestWithParam<int> {};

TEST_P(ForwardedSignalTest, ReachesEveryRank) {
  const int sig = GetParam();
  const std::string dir = TempDir();
  LaunchOptions options = Shell(
      3, absl::StrCat("trap 'echo \"rank $RANK got the signal\" >&2; exit 0' ",
                      sig == SIGINT ? "INT" : "TERM", "; touch ", dir,
                      "/ready.$RANK; while true; do sleep 0.1; done"));
  // Once every rank is up, signal this process, as a user or a scheduler
  // would signal the launcher.
  std::thread sender([&] {
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    for (;;) {
      bool all = true;
      for (int r = 0; r < 3; ++r) {
        all &= access(absl::StrCat(dir, "/ready.", r).c_str(), F_OK) == 0;
      }
      if (all || absl::Now() > deadline) break;
      absl::SleepFor(absl::Milliseconds(20));
    }
    kill(getpid(), sig);
  });
  std::ostringstream out, err;
  absl::StatusOr<LaunchResult> result = LaunchLocal(options, out, err);
  sender.join();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->forwarded_signal, sig);
  EXPECT_EQ(result->exit_code, 128 + sig);
  EXPECT_EQ(result->failed_rank, -1);
  for (int r = 0; r < 3; ++r) {
    EXPECT_THAT(err.str(), HasSubstr(absl::StrCat("[rank ", r, "] rank ", r,
                                                  " got the signal")));
    EXPECT_TRUE(result->ranks[r].stopped);
    EXPECT_EQ(result->ranks[r].code, 0);  // the trap exited cleanly
  }
  EXPECT_THAT(err.str(), HasSubstr("forwarding it to every rank"));
  EXPECT_THAT(result->message,
              AllOf(HasSubstr("stopped by SIG"),
                    HasSubstr("rank 2: exit code 0 after being stopped")));
}

INSTANTIATE_TEST_SUITE_P(IntAndTerm, ForwardedSignalTest,
                         ::testing::Values(SIGINT, SIGTERM),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return info.param == SIGINT ? "SIGINT" : "SIGTERM";
                         });

TEST(LaunchLocalTest, ProgramThatCannotRun) {
  LaunchOptions options;
  options.argv = {"/nonexistent/zero3-helper", "x"};
  options.nprocs = 2;
  std::ostringstream out, err;
  ASSERT_OK_AND_ASSIGN(LaunchResult result, LaunchLocal(options, out, err));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_GE(result.failed_rank, 0);
  EXPECT_THAT(result.message,
              AllOf(HasSubstr("could not start"),
                    HasSubstr("cannot run '/nonexistent/zero3-helper'"),
                    HasSubstr("No such file or directory")));
}

TEST(LaunchLocalTest, FindsProgramsInPath) {
  LaunchOptions options;
  options.argv = {"sh", "-c", "exit 0"};
  std::ostringstream out, err;
  ASSERT_OK_AND_ASSIGN(LaunchResult result, LaunchLocal(options, out, err));
  EXPECT_EQ(result.exit_code, 0) << result.message;
}

// Ranks that print a lot while the launcher reads every pipe.
TEST(LaunchLocalTest, LargeOutputIsPassedThrough) {
  std::ostringstream out, err;
  ASSERT_OK_AND_ASSIGN(
      LaunchResult result,
      LaunchLocal(Shell(3,
                        "i=0; while [ $i -lt 20000 ]; do echo \"out $i\"; "
                        "echo \"err $i\" >&2; i=$((i+1)); done"),
                  out, err));
  EXPECT_EQ(result.exit_code, 0);
  const std::string o = out.str();
  EXPECT_EQ(std::count(o.begin(), o.end(), '\n'), 3 * 20000);
  EXPECT_THAT(o, HasSubstr("[rank 2] out 19999\n"));
}

TEST(LaunchLocalTest, BadOptions) {
  std::ostringstream out, err;
  LaunchOptions none;
  EXPECT_THAT(LaunchLocal(none, out, err),
              StatusIs(absl::StatusCode::kInvalidArgument));
  LaunchOptions zero = Shell(0, "true");
  EXPECT_THAT(LaunchLocal(zero, out, err),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("at least one process")));
  LaunchOptions port = Shell(1, "true");
  port.master_port = 70000;
  EXPECT_THAT(LaunchLocal(port, out, err),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

// The command line, in process: usage errors only (a real launch would
// start copies of this test binary).
int RunLaunch(const std::vector<std::string>& args, std::string* err_text) {
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(NewLaunchCommand());
  std::ostringstream out, err;
  const int code = RunCommandLine("zero3", commands, args, out, err);
  *err_text = err.str() + out.str();
  return code;
}

TEST(LaunchCommandTest, UsageErrors) {
  std::string text;
  EXPECT_EQ(RunLaunch({"launch"}, &text), kExitUsage);
  EXPECT_THAT(text, HasSubstr("give the zero3 command after --"));
  EXPECT_EQ(
      RunLaunch({"launch", "--nproc-per-node", "0", "--", "train"}, &text),
      kExitUsage);
  EXPECT_THAT(text, HasSubstr("--nproc-per-node must be between 1 and 1024"));
  EXPECT_EQ(RunLaunch({"launch", "--", "launch", "--", "train"}, &text),
            kExitUsage);
  // Without --, the command's flags are taken for the launcher's.
  EXPECT_EQ(
      RunLaunch({"launch", "--nproc-per-node", "2", "train", "--steps", "3"},
                &text),
      kExitUsage);
  EXPECT_THAT(text, HasSubstr("unknown flag --steps"));
  EXPECT_EQ(RunLaunch({"launch", "--help"}, &text), kExitOk);
  EXPECT_THAT(text, AllOf(HasSubstr("--nproc-per-node N"),
                          HasSubstr("[-- COMMAND...]")));
}

}  // namespace
}  // namespace cli
}  // namespace zero3
