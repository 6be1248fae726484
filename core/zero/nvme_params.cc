// Copyright 2026 The zero3 Authors.

#include "core/zero/nvme_params.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/kernels/dtype.h"
#include "core/util/status_macros.h"
#include "core/zero/nvme_state.h"

namespace zero3 {
namespace zero {

using runtime::BufferSlice;
using runtime::SwapFile;

NvmeParams::NvmeParams(runtime::Runtime& rt, const ZeroOptions& options,
                       const ShardLayout& layout,
                       const std::vector<HostPiece>& pieces)
    : rt_(rt),
      options_(options),
      layout_(layout),
      pieces_(pieces),
      esize_(kernels::DTypeSize(options.dtype)) {}

NvmeParams::~NvmeParams() {
  if (file_ != nullptr) (void)file_->WaitAll();
}

int64_t NvmeParams::FileBytes(const std::vector<HostPiece>& pieces,
                              int64_t esize) {
  int64_t bytes = 0;
  for (const HostPiece& piece : pieces) {
    bytes += SwapFile::AlignUp(piece.elements * esize);
  }
  return bytes;
}

std::string NvmeParams::path() const {
  return file_ != nullptr ? file_->path() : std::string();
}

absl::StatusOr<std::unique_ptr<NvmeParams>> NvmeParams::Create(
    runtime::Runtime& rt, const ZeroOptions& options, const ShardLayout& layout,
    const std::vector<HostPiece>& pieces) {
  std::unique_ptr<NvmeParams> s(new NvmeParams(rt, options, layout, pieces));
  int64_t next = 0, largest_piece = 0;
  for (const HostPiece& piece : pieces) {
    if (piece.offset != next) {
      return absl::InternalError(absl::StrCat(
          "parameters on NVMe: the pieces do not cover the shard (", piece.name,
          " starts at ", piece.offset, ", expected ", next, ")"));
    }
    s->file_offset_.push_back(s->file_bytes_);
    s->file_bytes_ += SwapFile::AlignUp(piece.elements * s->esize_);
    largest_piece = std::max(largest_piece, piece.elements);
    next += piece.elements;
  }
  if (next != layout.total()) {
    return absl::InternalError(
        absl::StrCat("parameters on NVMe: the pieces cover ", next,
                     " of the shard's ", layout.total(), " elements"));
  }
  // A window holds the largest partition's extents.
  int64_t window = 0, largest = 0;
  int largest_param = 0;
  for (int p = 0; p < layout.num_params(); ++p) {
    int64_t bytes = 0;
    for (const Extent& e : s->ExtentsOf(p)) bytes += e.bytes;
    window = std::max(window, bytes);
    if (layout.param(p).partition > largest) {
      largest = layout.param(p).partition;
      largest_param = p;
    }
  }
  if (largest > options.param_nvme_buffer_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "zero_optimization.offload_param.buffer_size is ",
        options.param_nvme_buffer_size, " elements, smaller than parameter ",
        largest_param, "'s partition of ", largest,
        " elements: set it to at least ", largest,
        " (a window holds one partition, as in DeepSpeed)"));
  }
  for (int k = 0; k < std::max(2, options.param_nvme_buffers); ++k) {
    ReadWindow& w = s->reads_.emplace_back();
    ZR_ASSIGN_OR_RETURN(
        w.buffer, runtime::AllocateHost(
                      rt, std::max<int64_t>(1, window) + SwapFile::kAlignment,
                      runtime::PinnedIf(options.param_pin_memory),
                      absl::StrCat("NVMe parameter window ", k)));
    w.base = SwapFile::AlignmentGap(w.buffer.data());
    ZR_ASSIGN_OR_RETURN(w.copied, rt.device().CreateEvent());
  }
  const int64_t piece_bytes = SwapFile::AlignUp(largest_piece * s->esize_);
  for (int k = 0; k < 2; ++k) {
    WriteWindowState& w = s->writes_.emplace_back();
    // Pageable: only the host and the drive touch it.
    ZR_ASSIGN_OR_RETURN(
        w.buffer,
        runtime::AllocateHost(
            rt, std::max<int64_t>(1, piece_bytes) + SwapFile::kAlignment,
            runtime::HostMemoryKind::kPageable,
            absl::StrCat("NVMe parameter write window ", k)));
    w.base = SwapFile::AlignmentGap(w.buffer.data());
  }
  s->window_of_.assign(layout.num_params(), -1);
  ZR_ASSIGN_OR_RETURN(
      s->file_,
      OpenRankSwapFile(rt, options, options.param_nvme_path, "zero3_params",
                       s->file_bytes_, options.param_nvme_fault));
  return s;
}

std::vector<int> NvmeParams::PiecesOf(int p) const {
  const ParamShard& shard = layout_.param(p);
  const int64_t begin = shard.offset, end = shard.offset + shard.partition;
  std::vector<int> out;
  // The last piece starting at or before `begin`, then on while they start
  // before `end`.
  auto it = std::upper_bound(
      pieces_.begin(), pieces_.end(), begin,
      [](int64_t x, const HostPiece& piece) { return x < piece.offset; });
  int k = std::max<int>(0, static_cast<int>(it - pieces_.begin()) - 1);
  for (; k < static_cast<int>(pieces_.size()) && pieces_[k].offset < end; ++k) {
    if (pieces_[k].offset + pieces_[k].elements > begin) out.push_back(k);
  }
  return out;
}

std::vector<NvmeParams::Extent> NvmeParams::ExtentsOf(int p) const {
  const ParamShard& shard = layout_.param(p);
  std::vector<Extent> out;
  for (int k : PiecesOf(p)) {
    const HostPiece& piece = pieces_[k];
    const int64_t from = std::max(shard.offset, piece.offset);
    const int64_t to =
        std::min(shard.offset + shard.partition, piece.offset + piece.elements);
    const int64_t first = file_offset_[k] + (from - piece.offset) * esize_;
    const int64_t last = first + (to - from) * esize_;
    Extent e;
    e.file_offset = first - first % SwapFile::kAlignment;
    e.bytes = SwapFile::AlignUp(last) - e.file_offset;
    e.skip = first - e.file_offset;
    e.elements = to - from;
    e.at = from - shard.offset;
    out.push_back(e);
  }
  return out;
}

std::vector<NvmeParams::Segment> NvmeParams::SegmentsOf(
    int p, const ReadWindow& w) const {
  std::vector<Segment> out;
  int64_t at = w.base;
  for (const Extent& e : ExtentsOf(p)) {
    out.push_back({w.buffer.Slice(at + e.skip, e.elements * esize_), e.at});
    at += e.bytes;
  }
  return out;
}

// Writes --------------------------------------------------------------------

absl::StatusOr<BufferSlice> NvmeParams::WriteWindow(int k) {
  WriteWindowState& w = writes_[k % writes_.size()];
  // Without the wait (a test's dropped synchronization) the ticket stays
  // the file's, which waits for it at the end.
  const int64_t ticket = std::exchange(w.writing, 0);
  if (ticket != 0 && options_.syncs.enabled(Sync::kNvmeParamWriteBeforeReuse)) {
    ZR_RETURN_IF_ERROR(file_->Wait(ticket));
  }
  w.piece = k;
  return w.buffer.Slice(w.base, pieces_[k].elements * esize_);
}

absl::Status NvmeParams::Write(int k) {
  WriteWindowState& w = writes_[k % writes_.size()];
  if (w.piece != k) {
    return absl::InternalError(absl::StrCat(
        "NVMe parameters: ", pieces_[k].name, " written without its window"));
  }
  // A window still holding (or reading) a partition of this piece holds
  // stale bytes now.
  const HostPiece& piece = pieces_[k];
  for (ReadWindow& r : reads_) {
    if (r.param < 0) continue;
    const ParamShard& shard = layout_.param(r.param);
    if (shard.offset >= piece.offset + piece.elements ||
        shard.offset + shard.partition <= piece.offset) {
      continue;
    }
    if (r.state == State::kAcquired) {
      return absl::InternalError(absl::StrCat(
          "NVMe parameters: ", piece.name, " written while parameter ", r.param,
          "'s partition is being copied"));
    }
    ZR_RETURN_IF_ERROR(WaitReads(r));
    window_of_[r.param] = -1;
    r.param = -1;
    if (r.state == State::kLoaded) r.state = State::kEmpty;
  }
  ZR_ASSIGN_OR_RETURN(
      w.writing,
      file_->Write(
          file_offset_[k],
          w.buffer.Slice(w.base, SwapFile::AlignUp(piece.elements * esize_)),
          absl::StrCat("NVMe parameter write ", piece.name)));
  return absl::OkStatus();
}

absl::Status NvmeParams::WaitWritesOf(int p) {
  if (!options_.syncs.enabled(Sync::kNvmeParamWriteBeforeRead)) {
    return absl::OkStatus();
  }
  for (int k : PiecesOf(p)) {
    for (WriteWindowState& w : writes_) {
      if (w.piece == k && w.writing != 0) {
        ZR_RETURN_IF_ERROR(file_->Wait(std::exchange(w.writing, 0)));
      }
    }
  }
  return absl::OkStatus();
}

// Reads ---------------------------------------------------------------------

absl::Status NvmeParams::WaitReads(ReadWindow& w) {
  std::vector<int64_t> tickets = std::move(w.reading);
  w.reading.clear();
  if (!options_.syncs.enabled(Sync::kNvmeParamReadBeforeCopy)) {
    return absl::OkStatus();
  }
  absl::Status first;
  for (int64_t t : tickets) {
    const absl::Status s = file_->Wait(t);
    if (first.ok()) first = s;
  }
  if (!first.ok() && w.param >= 0) {
    window_of_[w.param] = -1;  // what it holds is not the partition
    w.param = -1;
    w.state = State::kEmpty;
  }
  return first;
}

int NvmeParams::OldestOrNewest(State state, bool newest) const {
  int pick = -1;
  for (int i = 0; i < read_windows(); ++i) {
    if (reads_[i].state != state) continue;
    if (pick < 0 || (newest ? reads_[i].age > reads_[pick].age
                            : reads_[i].age < reads_[pick].age)) {
      pick = i;
    }
  }
  return pick;
}

absl::StatusOr<int> NvmeParams::FreeWindow(bool wait) {
  const bool ordered = options_.syncs.enabled(Sync::kNvmeParamCopyBeforeReuse);
  int best = -1;
  for (int i = 0; i < read_windows(); ++i) {
    ReadWindow& w = reads_[i];
    if (w.state == State::kEmpty) return i;
    if (w.state != State::kCopying) continue;
    if (ordered) {
      ZR_ASSIGN_OR_RETURN(const bool done, w.copied->Query());
      if (!done) continue;
    }
    if (best < 0 || w.age < reads_[best].age) best = i;
  }
  if (best >= 0 || !wait) return best;
  // Waiting: the oldest window still copying (its copy ends first), else
  // the newest read nobody has used yet (reads go out in the order of the
  // gathers, so the newest is needed last).
  if (const int i = OldestOrNewest(State::kCopying, /*newest=*/false); i >= 0) {
    ZR_RETURN_IF_ERROR(reads_[i].copied->Synchronize());
    return i;
  }
  if (const int i = OldestOrNewest(State::kLoaded, /*newest=*/true); i >= 0) {
    ZR_RETURN_IF_ERROR(WaitReads(reads_[i]));
    return i;
  }
  return absl::InternalError(
      "NVMe parameters: every read window is in use at once");
}

absl::Status NvmeParams::Read(int p, int i) {
  ReadWindow& w = reads_[i];
  if (w.param >= 0) window_of_[w.param] = -1;
  w.param = -1;
  ZR_RETURN_IF_ERROR(WaitWritesOf(p));
  int64_t at = w.base;
  for (const Extent& e : ExtentsOf(p)) {
    ZR_ASSIGN_OR_RETURN(const int64_t ticket,
                        file_->Read(e.file_offset, w.buffer.Slice(at, e.bytes),
                                    absl::StrCat("NVMe parameter read ", p)));
    w.reading.push_back(ticket);
    at += e.bytes;
  }
  w.param = p;
  w.state = State::kLoaded;
  w.age = ++clock_;
  window_of_[p] = i;
  return absl::OkStatus();
}

absl::StatusOr<bool> NvmeParams::Prefetch(int p) {
  if (window_of_[p] >= 0) return true;
  ZR_ASSIGN_OR_RETURN(const int i, FreeWindow(/*wait=*/false));
  if (i < 0) return false;
  ZR_RETURN_IF_ERROR(Read(p, i));
  return true;
}

absl::StatusOr<std::vector<NvmeParams::Segment>> NvmeParams::Acquire(int p) {
  if (window_of_[p] < 0) {
    ZR_ASSIGN_OR_RETURN(const int i, FreeWindow(/*wait=*/true));
    ZR_RETURN_IF_ERROR(Read(p, i));
  }
  ReadWindow& w = reads_[window_of_[p]];
  ZR_RETURN_IF_ERROR(WaitReads(w));
  w.state = State::kAcquired;
  return SegmentsOf(p, w);
}

absl::Status NvmeParams::Release(int p, runtime::Stream& copied_on) {
  const int i = window_of_[p];
  if (i < 0 || reads_[i].state != State::kAcquired) {
    return absl::InternalError(absl::StrCat("NVMe parameters: parameter ", p,
                                            " released without Acquire"));
  }
  ReadWindow& w = reads_[i];
  ZR_RETURN_IF_ERROR(copied_on.Record(*w.copied));
  w.state = State::kCopying;
  return absl::OkStatus();
}

}  // namespace zero
}  // namespace zero3
