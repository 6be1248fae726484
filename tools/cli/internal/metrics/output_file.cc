// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/metrics/output_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace metrics {

absl::StatusOr<OutputFile> OutputFile::Create(const std::string& path,
                                              absl::string_view what) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    const int error = errno;
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": cannot write ", path, ": ", std::strerror(error),
                     "; give a path in an existing, writable directory"));
  }
  return OutputFile(path, std::string(what), f);
}

absl::Status OutputFile::Append(absl::string_view bytes) {
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_.get()) != bytes.size() ||
      std::fflush(file_.get()) != 0) {
    const int error = errno;
    return absl::DataLossError(absl::StrCat(what_, ": writing ", path_,
                                            " failed: ", std::strerror(error)));
  }
  return absl::OkStatus();
}

absl::Status CreateDirectories(const std::string& dir, absl::string_view what) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error || !std::filesystem::is_directory(dir)) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": cannot create directory ", dir, ": ",
        error ? error.message() : std::string("a file of that name exists"),
        "; set ", what, ".output_path to a writable directory"));
  }
  return absl::OkStatus();
}

std::string JoinPath(absl::string_view dir, absl::string_view name) {
  if (dir.empty()) return std::string(name);
  if (absl::EndsWith(dir, "/")) return absl::StrCat(dir, name);
  return absl::StrCat(dir, "/", name);
}

}  // namespace metrics
}  // namespace internal
}  // namespace cli
}  // namespace zero3
