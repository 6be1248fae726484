// Copyright 2026 The zero3 Authors.
//
// run_lock.h: one run per checkpoint directory.
//
//   ZR_ASSIGN_OR_RETURN(std::unique_ptr<RunLock> lock,
//                       RunLock::Acquire(dir, "--save"));
//   ... train and save; the lock goes with `lock` or with the process ...
//
// The lock is an exclusive flock(2) on DIR/.zero3.lock, which the kernel
// releases when the process ends however it ends (kill -9 included), so a
// crashed run never leaves the directory locked. The file says who holds it
// (pid, host, start time), for the error a second run gets. Not
// thread-safe.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_RUN_LOCK_H_
#define ZERO3_TOOLS_CLI_INTERNAL_RUN_LOCK_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace zero3 {
namespace cli {
namespace internal {

class RunLock {
 public:
  // The name of the lock file in a locked directory.
  static constexpr const char* kFileName = ".zero3.lock";

  // Locks `dir` (which must exist) for this process. Held by another run:
  // InvalidArgument naming `flag`, the directory and the holder.
  static absl::StatusOr<std::unique_ptr<RunLock>> Acquire(
      const std::string& dir, absl::string_view flag);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

 private:
  explicit RunLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_RUN_LOCK_H_
