// Copyright 2026 The zero3 Authors.
//
// swap_file.h: a scratch file of fixed size under a directory (ZeRO-
// Infinity's nvme_path), read and written asynchronously in large aligned
// transfers, the way DeepSpeed's swap_tensor/ drives a drive through
// libaio, here through io_uring.
//
//   ZR_ASSIGN_OR_RETURN(auto f, SwapFile::Create(dir, "rank0.swap", bytes,
//                                                 SwapOptions()));
//   ZR_ASSIGN_OR_RETURN(int64_t r, f->Read(0, buffer, n));    // starts it
//   ...                                                       // overlaps it
//   ZR_RETURN_IF_ERROR(f->Wait(r));                           // done, or why
//
// Each transfer is cut into requests of block_size bytes, at most
// queue_depth of them in flight (DeepSpeed's aio.block_size and
// aio.queue_depth). A thread of the file's own reaps completions and
// submits the queued requests as others finish, so a transfer keeps going
// at the drive's pace while the caller computes (DeepSpeed's aio keeps
// its own threads for the same reason). The file is opened with O_DIRECT, so
// transfers bypass the page cache and run at the drive's speed; offsets, sizes
// and buffer addresses are then multiples of kAlignment. A file system without
// O_DIRECT (tmpfs) gets buffered I/O (direct() false: the caller says so).
// Where io_uring is not available (a kernel without it, a sandbox that
// forbids it) each transfer runs synchronously when it is started
// (uring() false).
//
// The file is created with its space reserved (no space left is an error
// at creation, naming the path and what is free, not halfway through a
// run), locked (flock) for as long as it exists, and removed when the
// SwapFile goes, after the transfers in flight. A file of the same name
// left by a run that was killed (so unlocked) is removed first; one still
// locked by a running process is an error naming it. Errors of a transfer
// (EIO, ENOSPC) name the path, the operation, the offset and the system's
// reason. Not thread-safe: one thread calls it (its completion thread is
// its own business).

#ifndef ZERO3_CORE_RUNTIME_SWAP_FILE_H_
#define ZERO3_CORE_RUNTIME_SWAP_FILE_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace zero3 {
namespace runtime {

struct SwapOptions {
  int64_t block_size = int64_t{1} << 20;  // aio.block_size, bytes
  int queue_depth = 8;                    // aio.queue_depth
  // O_DIRECT where the file system supports it; false always buffers.
  bool direct = true;
  // false runs every transfer synchronously (as without io_uring).
  bool use_uring = true;
};

class SwapFile {
 public:
  // Offsets, sizes and buffers of O_DIRECT transfers are multiples of this.
  static constexpr int64_t kAlignment = 4096;
  // `n` rounded up to a multiple of kAlignment.
  static int64_t AlignUp(int64_t n) {
    return (n + kAlignment - 1) / kAlignment * kAlignment;
  }
  // Bytes from `p` to the next multiple of kAlignment (0 for null): where
  // an aligned transfer buffer starts inside a buffer allocated that much
  // larger.
  static int64_t AlignmentGap(const void* p) {
    const int64_t at = static_cast<int64_t>(reinterpret_cast<uintptr_t>(p));
    return at == 0 ? 0 : AlignUp(at) - at;
  }

  // `dir`/`name`, `bytes` long (rounded up to kAlignment), created as the
  // file comment says. InvalidArgument for a `dir` that is not a directory
  // or bad options, ResourceExhausted when the space cannot be reserved,
  // FailedPrecondition when another process holds the file.
  static absl::StatusOr<std::unique_ptr<SwapFile>> Create(
      const std::string& dir, const std::string& name, int64_t bytes,
      const SwapOptions& options);
  // Waits for the transfers in flight, then closes and removes the file.
  ~SwapFile();

  const std::string& path() const { return path_; }
  int64_t size() const { return size_; }
  bool direct() const { return direct_; }
  bool uring() const { return uring_ != nullptr; }
  // Whether Create removed a file of the same name left by an earlier run.
  bool removed_stale() const { return removed_stale_; }

  // Starts a transfer of `bytes` between [offset, offset + bytes) of the
  // file and `buffer`, which stays untouched (a write) or unread (a read)
  // until Wait returns for it. Returns its ticket. InvalidArgument outside
  // the file or, with direct(), not aligned.
  absl::StatusOr<int64_t> Read(int64_t offset, void* buffer, int64_t bytes);
  absl::StatusOr<int64_t> Write(int64_t offset, const void* buffer,
                                int64_t bytes);
  // Waits for the transfer; OK, or its first error (a ticket is waited for
  // once).
  absl::Status Wait(int64_t ticket);
  // Waits for every transfer; the first error among them.
  absl::Status WaitAll();

  // For tests: the `nth` request (0: the next) of a read (or write) from
  // now fails with errno `error` instead of reaching the drive.
  void InjectFault(bool write, int nth, int error);

 private:
  struct Request {
    int64_t ticket = 0;
    bool write = false;
    int64_t offset = 0;
    char* buffer = nullptr;
    int64_t bytes = 0;
  };
  struct Transfer {
    bool write = false;
    int64_t offset = 0;
    int64_t requests_left = 0;
    absl::Status status;
  };
  struct Ring;

  SwapFile() = default;
  absl::StatusOr<int64_t> Start(bool write, int64_t offset, char* buffer,
                                int64_t bytes);
  absl::Status Check(int64_t offset, const void* buffer, int64_t bytes) const;
  // Submits queued requests up to the queue depth. Holding mu_.
  void Submit();
  // The completion thread: reaps each finished request, submits the next
  // queued ones, wakes Wait; ends at the no-op the destructor submits.
  void Reap();
  // Runs one request synchronously (no ring).
  void RunNow(const Request& r);
  // A request finished with `result` (bytes, or -errno).
  void Finish(const Request& r, int64_t result);
  // Whether an injected fault takes this request; its errno then.
  int TakeFault(bool write);
  absl::Status ErrorOf(const Transfer& t, int error) const;

  std::string path_;
  int fd_ = -1;
  int64_t size_ = 0;
  bool direct_ = false;
  bool removed_stale_ = false;
  SwapOptions options_;
  std::unique_ptr<Ring> uring_;
  // Guards what follows, which the completion thread (reaper_) shares.
  std::mutex mu_;
  std::condition_variable finished_;  // a request finished
  int64_t next_ticket_ = 1;
  std::map<int64_t, Transfer> transfers_;
  std::deque<Request> queued_;
  int in_flight_ = 0;
  // The ring failed (the completion thread ended): every wait says so.
  absl::Status ring_error_;
  // Injected faults: requests to let pass before one fails, and its errno.
  int fault_after_[2] = {-1, -1};
  int fault_error_[2] = {0, 0};
  std::thread reaper_;
};

}  // namespace runtime
}  // namespace zero3

#endif  // ZERO3_CORE_RUNTIME_SWAP_FILE_H_
