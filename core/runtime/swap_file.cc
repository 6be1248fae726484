// Copyright 2026 The zero3 Authors.

#include "core/runtime/swap_file.h"

#include <fcntl.h>
#include <liburing.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace zero3 {
namespace runtime {

struct SwapFile::Ring {
  io_uring ring;
  bool ready = false;
  ~Ring() {
    if (ready) io_uring_queue_exit(&ring);
  }
};

namespace {

std::string Reason(int error) {
  return absl::StrCat(std::strerror(error), " (errno ", error, ")");
}

// Opens `path` new, O_DIRECT when asked and the file system allows it.
int OpenNew(const std::string& path, bool direct, bool* got_direct) {
  const int flags = O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC;
  if (direct) {
    const int fd = open(path.c_str(), flags | O_DIRECT, 0600);
    if (fd >= 0 || errno != EINVAL) {
      *got_direct = fd >= 0;
      return fd;
    }
  }
  *got_direct = false;
  return open(path.c_str(), flags, 0600);
}

}  // namespace

absl::StatusOr<std::unique_ptr<SwapFile>> SwapFile::Create(
    const std::string& dir, const std::string& name, int64_t bytes,
    const SwapOptions& options) {
  if (options.block_size < kAlignment || options.block_size % kAlignment) {
    return absl::InvalidArgumentError(
        absl::StrCat("aio.block_size must be a multiple of ", kAlignment,
                     ", found ", options.block_size));
  }
  if (options.queue_depth < 1 || options.queue_depth > 4096) {
    return absl::InvalidArgumentError(absl::StrCat(
        "aio.queue_depth must be 1 to 4096, found ", options.queue_depth));
  }
  if (bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("swap file of ", bytes, " bytes"));
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("nvme_path '", dir, "' is not a directory",
                     errno != 0 ? absl::StrCat(" (", Reason(errno), ")") : "",
                     ": create it on the drive to swap to, or set nvme_path"));
  }
  std::unique_ptr<SwapFile> f(new SwapFile());
  f->options_ = options;
  f->path_ = absl::StrCat(dir, "/", name);
  f->size_ = AlignUp(bytes);
  // A file of this name: a running process's (locked), or a killed run's.
  const int old = open(f->path_.c_str(), O_RDWR | O_CLOEXEC);
  if (old >= 0) {
    const bool held = flock(old, LOCK_EX | LOCK_NB) != 0;
    close(old);
    if (held) {
      return absl::FailedPreconditionError(
          absl::StrCat("swap file '", f->path_,
                       "' is in use by another running process: "
                       "give each job its own nvme_path"));
    }
    if (unlink(f->path_.c_str()) != 0) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot remove the stale swap file '", f->path_,
                       "' of an earlier "
                       "run: ",
                       Reason(errno)));
    }
    f->removed_stale_ = true;
  }
  f->fd_ = OpenNew(f->path_, options.direct, &f->direct_);
  if (f->fd_ < 0) {
    return absl::PermissionDeniedError(absl::StrCat(
        "cannot create the swap file '", f->path_, "': ", Reason(errno)));
  }
  if (flock(f->fd_, LOCK_EX | LOCK_NB) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot lock the swap file '", f->path_, "': ", Reason(errno)));
  }
  if (f->size_ > 0) {
    const int error = posix_fallocate(f->fd_, 0, f->size_);
    if (error == ENOSPC) {
      struct statvfs vfs;
      const int64_t free_bytes =
          statvfs(dir.c_str(), &vfs) == 0
              ? static_cast<int64_t>(vfs.f_bavail) * vfs.f_frsize
              : -1;
      return absl::ResourceExhaustedError(absl::StrFormat(
          "no space for the swap file '%s': it needs %d bytes and %s has %d "
          "free; free space there or set nvme_path to a larger drive",
          f->path_, f->size_, dir, free_bytes));
    }
    if (error != 0 && ftruncate(f->fd_, f->size_) != 0) {
      return absl::InternalError(absl::StrCat("cannot size the swap file '",
                                              f->path_, "': ", Reason(errno)));
    }
  }
  if (options.use_uring) {
    auto ring = std::make_unique<Ring>();
    ring->ready = io_uring_queue_init(options.queue_depth, &ring->ring, 0) == 0;
    if (ring->ready) {
      f->uring_ = std::move(ring);
      SwapFile* self = f.get();
      f->reaper_ = std::thread([self] { self->Reap(); });
    }
  }
  return f;
}

SwapFile::~SwapFile() {
  (void)WaitAll();
  if (reaper_.joinable()) {
    {
      // A no-op without a request: the completion thread's sign to end.
      std::lock_guard<std::mutex> lock(mu_);
      io_uring_sqe* sqe = io_uring_get_sqe(&uring_->ring);
      if (sqe != nullptr) {
        io_uring_prep_nop(sqe);
        io_uring_sqe_set_data(sqe, nullptr);
        io_uring_submit(&uring_->ring);
      }
    }
    reaper_.join();
  }
  uring_.reset();
  if (fd_ >= 0) {
    unlink(path_.c_str());
    close(fd_);
  }
}

absl::Status SwapFile::Check(int64_t offset, const void* buffer,
                             int64_t bytes) const {
  if (offset < 0 || bytes < 0 || offset + bytes > size_) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "transfer of %d bytes at %d outside the swap file '%s' of %d", bytes,
        offset, path_, size_));
  }
  if (direct_ && (offset % kAlignment || bytes % kAlignment ||
                  reinterpret_cast<uintptr_t>(buffer) % kAlignment)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "O_DIRECT transfer of %d bytes at %d from %p is not aligned to %d",
        bytes, offset, buffer, kAlignment));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> SwapFile::Read(int64_t offset, void* buffer,
                                       int64_t bytes) {
  return Start(false, offset, static_cast<char*>(buffer), bytes);
}

absl::StatusOr<int64_t> SwapFile::Write(int64_t offset, const void* buffer,
                                        int64_t bytes) {
  // The buffer is only read: the request keeps a mutable pointer for both
  // directions.
  return Start(true, offset, static_cast<char*>(const_cast<void*>(buffer)),
               bytes);
}

absl::StatusOr<int64_t> SwapFile::Start(bool write, int64_t offset,
                                        char* buffer, int64_t bytes) {
  if (absl::Status s = Check(offset, buffer, bytes); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t ticket = next_ticket_++;
  Transfer& t = transfers_[ticket];
  t.write = write;
  t.offset = offset;
  for (int64_t at = 0; at < bytes; at += options_.block_size) {
    Request r;
    r.ticket = ticket;
    r.write = write;
    r.offset = offset + at;
    r.buffer = buffer + at;
    r.bytes = std::min(options_.block_size, bytes - at);
    queued_.push_back(r);
    ++t.requests_left;
  }
  Submit();
  return ticket;
}

int SwapFile::TakeFault(bool write) {
  int& after = fault_after_[write ? 1 : 0];
  if (after < 0) return 0;
  if (after-- > 0) return 0;
  return fault_error_[write ? 1 : 0];
}

void SwapFile::Submit() {
  while (!queued_.empty()) {
    const Request r = queued_.front();
    if (const int error = TakeFault(r.write); error != 0) {
      queued_.pop_front();
      Finish(r, -error);
      continue;
    }
    if (uring_ == nullptr) {
      queued_.pop_front();
      RunNow(r);
      continue;
    }
    if (in_flight_ >= options_.queue_depth) break;
    io_uring_sqe* sqe = io_uring_get_sqe(&uring_->ring);
    if (sqe == nullptr) break;
    queued_.pop_front();
    if (r.write) {
      io_uring_prep_write(sqe, fd_, r.buffer, static_cast<unsigned>(r.bytes),
                          r.offset);
    } else {
      io_uring_prep_read(sqe, fd_, r.buffer, static_cast<unsigned>(r.bytes),
                         r.offset);
    }
    io_uring_sqe_set_data(sqe, new Request(r));
    ++in_flight_;
  }
  if (uring_ != nullptr && in_flight_ > 0) io_uring_submit(&uring_->ring);
}

void SwapFile::RunNow(const Request& r) {
  int64_t done = 0;
  while (done < r.bytes) {
    const ssize_t n =
        r.write ? pwrite(fd_, r.buffer + done, r.bytes - done, r.offset + done)
                : pread(fd_, r.buffer + done, r.bytes - done, r.offset + done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Finish(r, n < 0 ? -errno : -EIO);
      return;
    }
    done += n;
  }
  Finish(r, done);
}

void SwapFile::Finish(const Request& r, int64_t result) {
  auto it = transfers_.find(r.ticket);
  if (it == transfers_.end()) return;
  Transfer& t = it->second;
  if (result >= 0 && result < r.bytes) {
    // A short transfer: the rest goes again, first.
    Request rest = r;
    rest.offset += result;
    rest.buffer += result;
    rest.bytes -= result;
    if (result == 0) {
      result = -EIO;  // no progress: the file is shorter than asked
    } else {
      queued_.push_front(rest);
      return;
    }
  }
  if (result < 0 && t.status.ok()) {
    t.status = ErrorOf(t, static_cast<int>(-result));
  }
  --t.requests_left;
}

absl::Status SwapFile::ErrorOf(const Transfer& t, int error) const {
  const std::string what = absl::StrFormat(
      "%s the swap file '%s' at byte %d: %s", t.write ? "writing" : "reading",
      path_, t.offset, Reason(error));
  if (error == ENOSPC) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what,
                     "; free space on the drive or set nvme_path to a "
                     "larger one"));
  }
  return absl::DataLossError(what);
}

absl::Status SwapFile::Wait(int64_t ticket) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = transfers_.find(ticket);
  if (it == transfers_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("no transfer ", ticket, " on '", path_, "'"));
  }
  // Without a ring every request ran when it was started.
  finished_.wait(
      lock, [&] { return it->second.requests_left == 0 || !ring_error_.ok(); });
  absl::Status status = it->second.requests_left == 0
                            ? std::move(it->second.status)
                            : ring_error_;
  transfers_.erase(it);
  return status;
}

absl::Status SwapFile::WaitAll() {
  absl::Status first;
  for (;;) {
    int64_t ticket = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (transfers_.empty()) break;
      ticket = transfers_.begin()->first;
    }
    const absl::Status s = Wait(ticket);
    if (first.ok()) first = s;
  }
  return first;
}

void SwapFile::Reap() {
  for (;;) {
    io_uring_cqe* cqe = nullptr;
    const int error = io_uring_wait_cqe(&uring_->ring, &cqe);
    if (error == -EINTR) continue;
    std::lock_guard<std::mutex> lock(mu_);
    if (error < 0) {
      ring_error_ = absl::InternalError(absl::StrCat(
          "waiting for the swap file '", path_, "': ", Reason(-error)));
      finished_.notify_all();
      return;
    }
    bool stop = false;
    // This completion and any others already there, before refilling.
    do {
      std::unique_ptr<Request> r(
          static_cast<Request*>(io_uring_cqe_get_data(cqe)));
      const int64_t result = cqe->res;
      io_uring_cqe_seen(&uring_->ring, cqe);
      if (r == nullptr) {
        stop = true;  // the destructor's no-op
        continue;
      }
      --in_flight_;
      Finish(*r, result);
    } while (io_uring_peek_cqe(&uring_->ring, &cqe) == 0);
    Submit();
    finished_.notify_all();
    if (stop) return;
  }
}

void SwapFile::InjectFault(bool write, int nth, int error) {
  std::lock_guard<std::mutex> lock(mu_);
  fault_after_[write ? 1 : 0] = nth;
  fault_error_[write ? 1 : 0] = error;
}

}  // namespace runtime
}  // namespace zero3
