// Copyright 2026 The zero3 Authors.
//
// drive_file.h: a scratch file on a drive that a rank reads and writes
// asynchronously from host memory (the NVMe swapper's, ZeRO-Infinity's
// nvme_path). Part of the backend interface (Runtime::OpenDriveFile): on
// real hardware the file itself (swap_file.h: io_uring, O_DIRECT, its space
// reserved, locked, removed at the end); on the simulator a model of the
// node's drives that times each transfer and shows the race detector its
// access to its host buffer from the call until the host's Wait, so a
// buffer touched before its transfer is waited for is a race.
//
//   ZR_ASSIGN_OR_RETURN(auto f, rt.OpenDriveFile(options));
//   ZR_ASSIGN_OR_RETURN(int64_t r, f->Read(0, window, "read piece 3"));
//   ...
//   ZR_RETURN_IF_ERROR(f->Wait(r));  // the window holds the bytes now
//
// Not thread-safe: the rank's host thread drives it.

#ifndef ZERO3_CORE_RUNTIME_DRIVE_FILE_H_
#define ZERO3_CORE_RUNTIME_DRIVE_FILE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/runtime/buffer.h"
#include "core/runtime/swap_file.h"

namespace zero3 {
namespace runtime {

struct DriveFileOptions {
  std::string dir;   // an existing directory on the drive
  std::string name;  // the file's name in it
  int64_t bytes = 0;
  SwapOptions swap;  // block size and queue depth
};

class DriveFile {
 public:
  // Waits for the transfers in flight; the file is removed.
  virtual ~DriveFile() = default;

  // dir/name ("" where there is no file: the simulator's timing mode).
  virtual std::string path() const = 0;
  // Whether transfers bypass the page cache (O_DIRECT); false on a file
  // system without it (tmpfs before Linux 6.6), which gets buffered I/O.
  virtual bool direct() const = 0;
  // Starts a transfer between [offset, offset + buffer.bytes()) of the file
  // and `buffer` (host memory; with O_DIRECT, offset, size and address
  // multiples of SwapFile::kAlignment); returns its ticket. The buffer is
  // the transfer's until Wait returns for it.
  virtual absl::StatusOr<int64_t> Read(int64_t offset, const BufferSlice& into,
                                       absl::string_view label) = 0;
  virtual absl::StatusOr<int64_t> Write(int64_t offset, const BufferSlice& from,
                                        absl::string_view label) = 0;
  // The host waits for the transfer: OK, or its error naming the file, the
  // operation and the reason. A ticket is waited for once.
  virtual absl::Status Wait(int64_t ticket) = 0;
  // Every transfer: the first error among them.
  virtual absl::Status WaitAll() = 0;
  // For tests: SwapFile::InjectFault.
  virtual void InjectFault(bool write, int nth, int error) = 0;
};

// The real file (swap_file.h), as a backend on real hardware opens it.
absl::StatusOr<std::unique_ptr<DriveFile>> OpenRealDriveFile(
    const DriveFileOptions& options);

}  // namespace runtime
}  // namespace zero3

#endif  // ZERO3_CORE_RUNTIME_DRIVE_FILE_H_
