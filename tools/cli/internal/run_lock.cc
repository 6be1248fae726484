// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace {

// What the lock file says of its holder, on one line.
std::string Holder(int fd) {
  char text[512];
  const ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
  if (n <= 0) return "another run";
  std::string s(text, static_cast<size_t>(n));
  return std::string(absl::StripTrailingAsciiWhitespace(s));
}

}  // namespace

absl::StatusOr<std::unique_ptr<RunLock>> RunLock::Acquire(
    const std::string& dir, absl::string_view flag) {
  const std::string path = absl::StrCat(dir, "/", kFileName);
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": cannot create the lock file ", path, ": ",
                     std::strerror(errno)));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    const std::string holder = Holder(fd);
    close(fd);
    if (error == EWOULDBLOCK) {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, " ", dir, " is in use by another run (", holder,
          "): two runs saving into one directory would overwrite each "
          "other's checkpoints; wait for it, or give ",
          flag, " another directory"));
    }
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": cannot lock ", path, ": ", std::strerror(error)));
  }
  char host[256] = "?";
  gethostname(host, sizeof(host) - 1);
  const std::string who =
      absl::StrCat("pid ", getpid(), " on ", host, ", since ",
                   absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", absl::Now(),
                                    absl::UTCTimeZone()),
                   "\n");
  if (ftruncate(fd, 0) != 0 || pwrite(fd, who.data(), who.size(), 0) !=
                                   static_cast<ssize_t>(who.size())) {
    // The lock holds without the note; the note only helps the error.
  }
  return std::unique_ptr<RunLock>(new RunLock(fd));
}

RunLock::~RunLock() { close(fd_); }

}  // namespace internal
}  // namespace cli
}  // namespace zero3
