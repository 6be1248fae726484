// Copyright 2026 The zero3 Authors.
//
// regular_file.h: opening a file a user named for reading, refusing what
// is not a regular file. A FIFO would block the open (or the read) until
// another process wrote to it, a device could be read without end, a
// directory cannot be read: each is an error naming the path and what it
// is, before anything is read.
//
//   ZR_ASSIGN_OR_RETURN(const int fd, OpenRegularFile(path));  // caller closes
//   ZR_RETURN_IF_ERROR(CheckRegularFile(path));  // before an ifstream
//
// Thread-safe (plain functions).

#ifndef ZERO3_CORE_UTIL_REGULAR_FILE_H_
#define ZERO3_CORE_UTIL_REGULAR_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace zero3 {

// A read-only descriptor of the regular file at `path` (links followed).
// NotFound "cannot open PATH: reason" when it cannot be opened;
// InvalidArgument "PATH is a KIND, not a regular file" when it is another
// kind of file.
absl::StatusOr<int> OpenRegularFile(const std::string& path);

// The same check without keeping the descriptor.
absl::Status CheckRegularFile(const std::string& path);

}  // namespace zero3

#endif  // ZERO3_CORE_UTIL_REGULAR_FILE_H_
