// Copyright 2026 The zero3 Authors.
//
// output_file.h: a file that a run writes as it goes: created (or truncated)
// when opened, each Append flushed to the operating system before it
// returns, so that a crash keeps what was appended.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_METRICS_OUTPUT_FILE_H_
#define ZERO3_TOOLS_CLI_INTERNAL_METRICS_OUTPUT_FILE_H_

#include <cstdio>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace metrics {

class OutputFile {
 public:
  // Creates or truncates `path`. `what` names the file's purpose in errors
  // ("--metrics", "csv_monitor"); an error names the path, the reason and
  // the fix.
  static absl::StatusOr<OutputFile> Create(const std::string& path,
                                           absl::string_view what);

  // Writes `bytes` and flushes them.
  absl::Status Append(absl::string_view bytes);

  const std::string& path() const { return path_; }

 private:
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  OutputFile(std::string path, std::string what, std::FILE* file)
      : path_(std::move(path)), what_(std::move(what)), file_(file) {}

  std::string path_;
  std::string what_;
  std::unique_ptr<std::FILE, Closer> file_;
};

// Creates `dir` and its missing parents; an error names `what`, the
// directory and the reason.
absl::Status CreateDirectories(const std::string& dir, absl::string_view what);

// `dir`/`name` as Python's os.path.join joins two parts: `name` alone when
// `dir` is empty, no second '/' when `dir` ends with one.
std::string JoinPath(absl::string_view dir, absl::string_view name);

}  // namespace metrics
}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_METRICS_OUTPUT_FILE_H_
