// Copyright 2026 The zero3 Authors.
//
// write_file.h: a whole output file written at once, so that readers see
// all of it or none of it, gzip-compressed when its name ends in ".gz".
//
//   ZR_RETURN_IF_ERROR(io::WriteWholeFile("trace.json.gz", json));
//
// The bytes go through io::AtomicFile (a temporary file beside `path`,
// removed on every failure, then renamed over `path`); the file gets the
// permissions a newly created file gets under the process's umask.

#ifndef ZERO3_CORE_IO_WRITE_FILE_H_
#define ZERO3_CORE_IO_WRITE_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace zero3 {
namespace io {

// Replaces `path` with `bytes` (gzip-compressed when `path` ends in ".gz").
// Errors name the file and the system's reason.
absl::Status WriteWholeFile(const std::string& path, absl::string_view bytes);

// `bytes` as a gzip stream (RFC 1952), as `gzip` writes it.
absl::StatusOr<std::string> Gzip(absl::string_view bytes);

}  // namespace io
}  // namespace zero3

#endif  // ZERO3_CORE_IO_WRITE_FILE_H_
