// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/run_lock.h"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::zero3::testing::StatusIs;

std::string Fresh(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(RunLockTest, ASecondRunIsRefusedNamingTheHolder) {
  const std::string dir = Fresh("locked");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RunLock> first,
                       RunLock::Acquire(dir, "--save"));
  EXPECT_THAT(
      RunLock::Acquire(dir, "--save"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("--save " + dir + " is in use by another run"),
                     HasSubstr(absl::StrCat("pid ", getpid())))));
  first.reset();  // released
  EXPECT_OK(RunLock::Acquire(dir, "--save").status());
}

// The kernel releases the lock of a process that dies without unlocking.
TEST(RunLockTest, ADeadHoldersLockIsFree) {
  const std::string dir = Fresh("dead");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto lock = RunLock::Acquire(dir, "--save");
    _exit(lock.ok() ? 0 : 1);  // no destructor runs
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_OK(RunLock::Acquire(dir, "--save").status());
}

TEST(RunLockTest, AMissingDirectoryIsAnError) {
  EXPECT_THAT(RunLock::Acquire(::testing::TempDir() + "/none/x", "--save"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("cannot create the lock file")));
}

}  // namespace
}  // namespace internal
}  // namespace cli
}  // namespace zero3
