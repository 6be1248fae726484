// Copyright 2026 The zero3 Authors.

#include "core/io/atomic_file.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/util/crc32c.h"

namespace zero3 {
namespace io {
namespace {

absl::Status Errno(absl::string_view what, absl::string_view path) {
  return absl::InvalidArgumentError(
      absl::StrCat("cannot ", what, " ", path, ": ", std::strerror(errno)));
}

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

mode_t ProcessUmask() {
  static const mode_t mask = [] {
    FILE* f = std::fopen("/proc/self/status", "r");
    if (f != nullptr) {
      char line[256];
      unsigned int value = 0;
      bool found = false;
      while (std::fgets(line, sizeof(line), f) != nullptr) {
        if (std::sscanf(line, "Umask: %o", &value) == 1) {
          found = true;
          break;
        }
      }
      std::fclose(f);
      if (found) return static_cast<mode_t>(value);
    }
    const mode_t m = umask(022);
    umask(m);
    return m;
  }();
  return mask;
}

absl::StatusOr<std::unique_ptr<AtomicFile>> AtomicFile::Create(
    const std::string& path) {
  std::string temp = absl::StrCat(path, ".tmp.XXXXXX");
  std::vector<char> name(temp.begin(), temp.end());
  name.push_back('\0');
  const int fd = mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) {
    return Errno("create a file in", DirectoryOf(path));
  }
  return std::unique_ptr<AtomicFile>(
      new AtomicFile(path, std::string(name.data()), fd));
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) close(fd_);
  if (!committed_) unlink(temp_.c_str());
}

absl::Status AtomicFile::Write(absl::string_view bytes) {
  if (fd_ < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("write to ", path_, " after it was committed"));
  }
  digest_.bytes += static_cast<int64_t>(bytes.size());
  digest_.crc32c = ExtendCrc32c(digest_.crc32c, bytes);
  while (!bytes.empty()) {
    const ssize_t n = write(fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("write", temp_);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::Status AtomicFile::Commit() {
  if (fd_ < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(path_, " was already committed"));
  }
  if (fsync(fd_) != 0) return Errno("flush", temp_);
  // The temporary file is private (0600); the file is as the umask says,
  // as other tools' outputs are.
  if (fchmod(fd_, 0666 & ~ProcessUmask()) != 0) {
    return Errno("set the permissions of", temp_);
  }
  const int fd = fd_;
  fd_ = -1;
  if (close(fd) != 0) return Errno("close", temp_);
  if (rename(temp_.c_str(), path_.c_str()) != 0) {
    return Errno(absl::StrCat("rename ", temp_, " to"), path_);
  }
  committed_ = true;
  // The rename is durable once the directory is flushed.
  const std::string dir = DirectoryOf(path_);
  const int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return Errno("open", dir);
  const int synced = fsync(dir_fd);
  close(dir_fd);
  if (synced != 0) return Errno("flush", dir);
  return absl::OkStatus();
}

}  // namespace io
}  // namespace zero3
