// Copyright 2026 The zero3 Authors.
//
// atomic_file.h: write a file so that readers see all of it or none of it.
//
//   ZR_ASSIGN_OR_RETURN(std::unique_ptr<io::AtomicFile> f,
//                       io::AtomicFile::Create(path));
//   ZR_RETURN_IF_ERROR(f->Write(header));
//   ZR_RETURN_IF_ERROR(f->Write(data));
//   ZR_RETURN_IF_ERROR(f->Commit());
//
// Bytes go to a temporary file beside `path` (same directory, so the rename
// stays on one file system). Commit gives it the permissions a new file
// gets under the process's umask (0644 under 022; the umask is read once),
// flushes it to disk (fsync), renames it over `path` and flushes the
// directory. Destroying an AtomicFile that was
// not committed removes the temporary file: an error at any point leaves
// `path` as it was. Errors name the file and the system's reason. The
// size and CRC-32C of the bytes written are kept as they pass, so a caller
// that records a checksum need not read the file back. Not thread-safe.

#ifndef ZERO3_CORE_IO_ATOMIC_FILE_H_
#define ZERO3_CORE_IO_ATOMIC_FILE_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace zero3 {
namespace io {

// What a written file holds: its size and CRC-32C (core/util/crc32c.h).
struct FileDigest {
  int64_t bytes = 0;
  uint32_t crc32c = 0;
};

// The process's umask, read without changing it (umask(2) would, for a
// moment, under other threads creating files): /proc/self/status's Umask
// line, else the umask(2) pair. Read once, on the first call.
mode_t ProcessUmask();

class AtomicFile {
 public:
  // Creates the temporary file for `path`; fails naming the directory when
  // it cannot be written.
  static absl::StatusOr<std::unique_ptr<AtomicFile>> Create(
      const std::string& path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Appends `bytes`.
  absl::Status Write(absl::string_view bytes);
  // Makes the file visible at `path`. Call once; no Write afterwards.
  absl::Status Commit();

  const std::string& path() const { return path_; }
  // The bytes written so far.
  const FileDigest& digest() const { return digest_; }

 private:
  AtomicFile(std::string path, std::string temp, int fd)
      : path_(std::move(path)), temp_(std::move(temp)), fd_(fd) {}

  std::string path_;
  std::string temp_;
  int fd_;
  bool committed_ = false;
  FileDigest digest_;
};

}  // namespace io
}  // namespace zero3

#endif  // ZERO3_CORE_IO_ATOMIC_FILE_H_
