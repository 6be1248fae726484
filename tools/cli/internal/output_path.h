// Copyright 2026 The zero3 Authors.
//
// output_path.h: checks, before a command's long work, that the files and
// directories it was asked to write can be written, so that a bad path
// fails the command at once instead of after the run.
//
//   ZR_RETURN_IF_ERROR(CheckOutputFile("--trace", path));
//   ZR_RETURN_IF_ERROR(PrepareOutputDir("--trace-dir", dir));
//
// Errors are InvalidArgumentError (exit status 2) naming the flag, the path,
// what is wrong and the fix.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_OUTPUT_PATH_H_
#define ZERO3_TOOLS_CLI_INTERNAL_OUTPUT_PATH_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace zero3 {
namespace cli {
namespace internal {

// `path` (the value of `flag`) names a file that can be replaced: not empty,
// not a directory or a device, in an existing writable directory, and
// writable where it exists.
absl::Status CheckOutputFile(absl::string_view flag, const std::string& path);

// Creates `dir` (the value of `flag`) and its missing parents, and checks
// that it is a writable directory.
absl::Status PrepareOutputDir(absl::string_view flag, const std::string& dir);

}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_OUTPUT_PATH_H_
