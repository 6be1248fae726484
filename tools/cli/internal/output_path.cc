// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/output_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace {

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

absl::Status Error(absl::string_view flag, absl::string_view path,
                   absl::string_view problem, absl::string_view fix) {
  return absl::InvalidArgumentError(
      absl::StrCat(flag, ": cannot write ", path, ": ", problem, "; ", fix));
}

// `dir` exists, is a directory and can take new files.
absl::Status CheckWritableDirectory(absl::string_view flag,
                                    const std::string& path,
                                    const std::string& dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    return Error(flag, path, absl::StrCat("directory ", dir, " does not exist"),
                 "create it first or choose another path");
  }
  if (!S_ISDIR(st.st_mode)) {
    return Error(flag, path, absl::StrCat(dir, " is not a directory"),
                 "choose another path");
  }
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    return Error(flag, path,
                 absl::StrCat("cannot create files in ", dir, ": ",
                              std::strerror(errno)),
                 "choose a writable directory");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckOutputFile(absl::string_view flag, const std::string& path) {
  if (path.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " needs a file name, got an empty one"));
  }
  struct stat st;
  if (stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      return Error(flag, path, "it is a directory",
                   "give the name of a file (in it, or elsewhere)");
    }
    if (!S_ISREG(st.st_mode)) {
      return Error(flag, path, "it is not a regular file",
                   "give the name of a file to create or replace");
    }
    if (access(path.c_str(), W_OK) != 0) {
      return Error(flag, path, std::strerror(errno),
                   "choose another path or change its permissions");
    }
  }
  return CheckWritableDirectory(flag, path, DirectoryOf(path));
}

absl::Status PrepareOutputDir(absl::string_view flag, const std::string& dir) {
  if (dir.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " needs a directory name, got an empty one"));
  }
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return Error(flag, dir,
                 absl::StrCat("cannot create the directory: ", error.message()),
                 "choose a writable location");
  }
  return CheckWritableDirectory(flag, dir, dir);
}

}  // namespace internal
}  // namespace cli
}  // namespace zero3
