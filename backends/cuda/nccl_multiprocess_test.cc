// Copyright 2026 The zero3 Authors.
//
// Two processes, one GPU each, started the way a launcher starts them
// (RANK, WORLD_SIZE, LOCAL_RANK and MASTER_ADDR/MASTER_PORT, or
// ZERO3_RENDEZVOUS_FILE): RunCudaRank bootstraps, joins NCCL, and the
// collectives give exact results across the processes. The test binary
// starts copies of itself that run only MultiProcessChild.*. Skips with
// fewer than two GPUs.

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "backends/cuda/collective_checks.h"
#include "backends/cuda/cuda_rank.h"
#include "backends/cuda/rendezvous.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

extern char** environ;

namespace zero3 {
namespace cuda {
namespace {

using ::zero3::testing::IsOk;

constexpr char kChildVariable[] = "ZERO3_MULTIPROCESS_CHILD";
constexpr int kRanks = 2;

// Starts this test binary as rank `rank` with `extra` added to the
// environment; returns its pid.
pid_t StartRank(int rank, const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.push_back(*e);
  env.push_back(absl::StrCat(kChildVariable, "=1"));
  env.push_back(absl::StrCat("RANK=", rank));
  env.push_back(absl::StrCat("LOCAL_RANK=", rank));
  env.push_back(absl::StrCat("WORLD_SIZE=", kRanks));
  env.insert(env.end(), extra.begin(), extra.end());
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string self = "/proc/self/exe";
  std::string filter = "--gtest_filter=MultiProcessChild.*";
  char* argv[] = {self.data(), filter.data(), nullptr};
  pid_t pid = -1;
  if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv,
                  envp.data()) != 0) {
    return -1;
  }
  return pid;
}

// Waits for every pid (killing all after `timeout`); true when all exited 0.
bool WaitAll(const std::vector<pid_t>& pids, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::vector<bool> done(pids.size(), false);
  bool all_ok = true;
  size_t remaining = pids.size();
  while (remaining > 0) {
    for (size_t i = 0; i < pids.size(); ++i) {
      if (done[i]) continue;
      int status = 0;
      if (waitpid(pids[i], &status, WNOHANG) == pids[i]) {
        done[i] = true;
        --remaining;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
          ADD_FAILURE() << "rank " << i << " ended with status " << status;
          all_ok = false;
        }
      }
    }
    if (remaining > 0 && absl::Now() > deadline) {
      ADD_FAILURE() << "ranks did not finish within the timeout";
      for (size_t i = 0; i < pids.size(); ++i) {
        if (!done[i]) {
          kill(pids[i], SIGKILL);
          waitpid(pids[i], nullptr, 0);
        }
      }
      return false;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return all_ok;
}

bool IsChild() { return std::getenv(kChildVariable) != nullptr; }

TEST(MultiProcessTest, TwoRanksOverTcp) {
  if (IsChild()) GTEST_SKIP() << "in a child process";
  if (VisibleCudaDevices() < kRanks) {
    GTEST_SKIP() << kRanks << " GPUs needed, " << VisibleCudaDevices()
                 << " visible";
  }
  ASSERT_OK_AND_ASSIGN(int port, PickFreePort());
  std::vector<pid_t> pids;
  for (int r = 0; r < kRanks; ++r) {
    pids.push_back(StartRank(
        r, {"MASTER_ADDR=127.0.0.1", absl::StrCat("MASTER_PORT=", port)}));
    ASSERT_GT(pids.back(), 0);
  }
  EXPECT_TRUE(WaitAll(pids, absl::Seconds(120)));
}

TEST(MultiProcessTest, TwoRanksOverAFile) {
  if (IsChild()) GTEST_SKIP() << "in a child process";
  if (VisibleCudaDevices() < kRanks) {
    GTEST_SKIP() << kRanks << " GPUs needed, " << VisibleCudaDevices()
                 << " visible";
  }
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string file =
      absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/nccl_id.", getpid());
  std::vector<pid_t> pids;
  for (int r = kRanks - 1; r >= 0; --r) {  // readers first
    pids.insert(pids.begin(),
                StartRank(r, {absl::StrCat("ZERO3_RENDEZVOUS_FILE=", file)}));
    ASSERT_GT(pids.front(), 0);
  }
  EXPECT_TRUE(WaitAll(pids, absl::Seconds(120)));
}

// Runs in the processes the tests above start.
TEST(MultiProcessChild, Collectives) {
  if (!IsChild()) GTEST_SKIP() << "runs in processes MultiProcessTest starts";
  for (kernels::DType dtype :
       {kernels::DType::kF32, kernels::DType::kBF16, kernels::DType::kF16}) {
    EXPECT_THAT(RunCudaRank([dtype](runtime::Runtime& rt) -> absl::Status {
                  if (rt.world_size() != kRanks) {
                    return absl::InternalError("wrong world size");
                  }
                  return CheckCollectivesExactly(rt, dtype);
                }),
                IsOk())
        << kernels::DTypeName(dtype);
  }
}

}  // namespace
}  // namespace cuda
}  // namespace zero3
