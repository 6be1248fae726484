// Copyright 2026 The zero3 Authors.

#include "sim/internal/drive_file.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "sim/activity.h"

namespace zero3 {
namespace sim {
namespace internal {
namespace {

class SimDriveFile final : public runtime::DriveFile {
 public:
  SimDriveFile(RankState* rank, std::string name,
               std::unique_ptr<runtime::SwapFile> file, int64_t size)
      : rank_(rank),
        name_(std::move(name)),
        file_(std::move(file)),
        size_(size) {
    // Reads and writes run side by side (each direction at its own rate):
    // one agent each. The file's bytes are a buffer of their own to the
    // detector, so a read of a range whose write the host has not waited
    // for is a race too.
    reader_ =
        rank_->races().AddAgent(absl::StrCat("drive '", name_, "' reads"));
    writer_ =
        rank_->races().AddAgent(absl::StrCat("drive '", name_, "' writes"));
    track_ = rank_->NewStreamTrack(absl::StrCat("NVMe ", name_));
    if (rank_->detect()) {
      contents_ = runtime::Buffer(rank_->NextBufferId(), size_,
                                  runtime::MemorySpace::kPageableHost, nullptr);
      rank_->races().OnAllocate(contents_.id(),
                                absl::StrCat("drive file ", name_), size_,
                                /*initialized=*/true);
    }
  }
  ~SimDriveFile() override {
    (void)WaitAll();
    if (contents_.valid()) {
      rank_->races().OnFree(
          contents_.id(), 0,
          OpInfo{"remove drive file", 0, rank_->now(), rank_->now()});
    }
  }

  std::string path() const override {
    return file_ != nullptr ? file_->path() : std::string();
  }
  bool direct() const override { return file_ == nullptr || file_->direct(); }
  absl::StatusOr<int64_t> Read(int64_t offset, const runtime::BufferSlice& into,
                               absl::string_view label) override {
    return Start(false, offset, into, label);
  }
  absl::StatusOr<int64_t> Write(int64_t offset,
                                const runtime::BufferSlice& from,
                                absl::string_view label) override {
    return Start(true, offset, from, label);
  }
  absl::Status Wait(int64_t ticket) override {
    auto it = transfers_.find(ticket);
    if (it == transfers_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("no transfer ", ticket, " on drive file '", name_, "'"));
    }
    const Transfer t = std::move(it->second);
    transfers_.erase(it);
    rank_->BlockUntil(t.end_ns, absl::StrCat("NVMe ", t.label));
    rank_->HostJoinClock(t.clock);
    return t.real != 0 ? file_->Wait(t.real) : absl::OkStatus();
  }
  absl::Status WaitAll() override {
    absl::Status first;
    while (!transfers_.empty()) {
      const absl::Status s = Wait(transfers_.begin()->first);
      if (first.ok()) first = s;
    }
    return first;
  }
  void InjectFault(bool write, int nth, int error) override {
    if (file_ != nullptr) file_->InjectFault(write, nth, error);
  }

 private:
  struct Transfer {
    int64_t end_ns = 0;
    VectorClock clock;  // the transfer's, for the host's Wait
    int64_t real = 0;   // the real file's ticket (data mode)
    std::string label;
  };

  absl::StatusOr<int64_t> Start(bool write, int64_t offset,
                                const runtime::BufferSlice& buffer,
                                absl::string_view label) {
    RankState* r = rank_;
    const int64_t bytes = buffer.bytes();
    if (offset < 0 || offset + bytes > size_) {
      return absl::InvalidArgumentError(
          absl::StrCat("transfer of ", bytes, " bytes at ", offset,
                       " outside the drive file '", name_, "' of ", size_));
    }
    r->CountOp();
    r->HostCost(r->cost().copy_call_nanos());
    int64_t& tail = r->drive_tail_ns(write);
    const int64_t start = std::max(r->now(), tail);
    const int64_t end = start + r->Jitter(r->cost().DriveNanos(bytes, write));
    tail = end;
    r->Span(track_, label, start, end, bytes,
            write ? "nvme write" : "nvme read");
    r->RecordActivity(write ? ActivityInterval::Kind::kDriveWrite
                            : ActivityInterval::Kind::kDriveRead,
                      start, end);
    Transfer t;
    t.end_ns = end;
    t.label = std::string(label);
    if (r->detect()) {
      const int agent = write ? writer_ : reader_;
      r->StreamAccesses(
          agent, {{buffer, !write}, {contents_.Slice(offset, bytes), write}},
          label, start, end);
      t.clock = r->races().clock(agent);
    }
    if (file_ != nullptr) {
      ZR_ASSIGN_OR_RETURN(t.real,
                          write ? file_->Write(offset, buffer.data(), bytes)
                                : file_->Read(offset, buffer.data(), bytes));
    }
    const int64_t ticket = next_ticket_++;
    transfers_.emplace(ticket, std::move(t));
    return ticket;
  }

  RankState* rank_;
  std::string name_;
  std::unique_ptr<runtime::SwapFile> file_;
  int64_t size_ = 0;
  int reader_ = 0, writer_ = 0;
  runtime::Buffer contents_;  // the file's bytes, to the race detector
  int track_ = 0;
  int64_t next_ticket_ = 1;
  std::map<int64_t, Transfer> transfers_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<runtime::DriveFile>> OpenSimDriveFile(
    RankState* rank, const runtime::DriveFileOptions& options) {
  if (rank->cost().DriveNanos(0, false) < 0 ||
      rank->cost().DriveNanos(0, true) < 0) {
    return absl::FailedPreconditionError(
        "the hardware profile has no NVMe figures "
        "(host.nvme_read_gbps_per_node, host.nvme_write_gbps_per_node) to "
        "time the optimizer state on NVMe: set them (zero3 calibrate "
        "--nvme-path DIR measures them; --set hardware.host.KEY=VALUE in "
        "whatif)");
  }
  std::unique_ptr<runtime::SwapFile> file;
  if (rank->data_mode()) {
    // The bytes, synchronously: the model says when they arrive.
    runtime::SwapOptions swap = options.swap;
    swap.use_uring = false;
    ZR_ASSIGN_OR_RETURN(file,
                        runtime::SwapFile::Create(options.dir, options.name,
                                                  options.bytes, swap));
  }
  return std::unique_ptr<runtime::DriveFile>(std::make_unique<SimDriveFile>(
      rank, options.name, std::move(file),
      runtime::SwapFile::AlignUp(options.bytes)));
}

}  // namespace internal
}  // namespace sim
}  // namespace zero3
