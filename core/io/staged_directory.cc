// Copyright 2026 The zero3 Authors.

#include "core/io/staged_directory.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/io/atomic_file.h"

namespace zero3 {
namespace io {
namespace {

namespace fs = std::filesystem;

absl::Status Errno(absl::string_view what, absl::string_view path) {
  return absl::InvalidArgumentError(
      absl::StrCat("cannot ", what, " ", path, ": ", std::strerror(errno)));
}

// The names in `dir`, sorted; empty where it is missing.
std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

absl::StatusOr<std::unique_ptr<StagedDirectory>> StagedDirectory::Create(
    const std::string& dir, bool replace) {
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      return absl::InvalidArgumentError(absl::StrCat(
          dir, " exists and is not a directory; name a new or empty one"));
    }
    const std::vector<std::string> names = Entries(dir);
    if (!names.empty() && !replace) {
      const std::vector<std::string> some(
          names.begin(), names.begin() + std::min<size_t>(names.size(), 3));
      return absl::InvalidArgumentError(absl::StrCat(
          dir, " is not empty (", names.size(), " entries: ",
          absl::StrJoin(some, ", "), names.size() > 3 ? ", ..." : "",
          "); name a new or empty directory, or pass --overwrite to replace "
          "its model files"));
    }
  } else if (errno != ENOENT) {
    return Errno("read", dir);
  }
  const fs::path target(dir);
  const fs::path parent =
      target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string pattern = (parent / absl::StrCat(".", target.filename().string(),
                                               ".staging.XXXXXX"))
                            .string();
  if (mkdtemp(pattern.data()) == nullptr) {
    return Errno("create a staging folder in", parent.string());
  }
  // mkdtemp makes it 0700; the directory it becomes follows the umask.
  ::chmod(pattern.c_str(), 0777 & ~ProcessUmask());
  return std::unique_ptr<StagedDirectory>(new StagedDirectory(dir, pattern));
}

StagedDirectory::~StagedDirectory() {
  if (published_) return;
  std::error_code ec;
  fs::remove_all(staging_, ec);
}

absl::Status StagedDirectory::Publish(
    const std::function<bool(const std::string&)>& stale) {
  const std::vector<std::string> existing = Entries(dir_);
  if (existing.empty()) {
    ::rmdir(dir_.c_str());  // an empty directory is replaced whole
    if (::rename(staging_.c_str(), dir_.c_str()) != 0) {
      return Errno(absl::StrCat("rename ", staging_, " to"), dir_);
    }
    published_ = true;
    return absl::OkStatus();
  }
  const std::vector<std::string> staged = Entries(staging_);
  const std::set<std::string> replaced(staged.begin(), staged.end());
  for (const std::string& name : existing) {
    if (replaced.count(name) == 0 && stale(name)) {
      const std::string path = absl::StrCat(dir_, "/", name);
      if (::unlink(path.c_str()) != 0) return Errno("remove", path);
    }
  }
  for (const std::string& name : staged) {
    const std::string from = absl::StrCat(staging_, "/", name);
    const std::string to = absl::StrCat(dir_, "/", name);
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return Errno(absl::StrCat("rename ", from, " to"), to);
    }
  }
  published_ = true;
  ::rmdir(staging_.c_str());
  return absl::OkStatus();
}

}  // namespace io
}  // namespace zero3
