// Copyright 2026 The zero3 Authors.

#include "core/zero/nvme_state.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/kernels/dtype.h"
#include "core/util/status_macros.h"
#include "core/zero/host_adam.h"

namespace zero3 {
namespace zero {

using runtime::BufferSlice;
using runtime::HostTask;

namespace {
using runtime::SwapFile;
}  // namespace

absl::StatusOr<std::unique_ptr<runtime::DriveFile>> OpenRankSwapFile(
    runtime::Runtime& rt, const ZeroOptions& options, const std::string& dir,
    absl::string_view stem, int64_t bytes,
    const ZeroOptions::NvmeFault& fault) {
  runtime::DriveFileOptions file;
  file.dir = dir;
  file.name = absl::StrCat(stem, "_rank", rt.rank(), ".swap");
  file.bytes = bytes;
  file.swap.block_size = options.aio_block_size;
  file.swap.queue_depth = options.aio_queue_depth;
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<runtime::DriveFile> f,
                      rt.OpenDriveFile(file));
  if (fault.nth >= 0) f->InjectFault(fault.write, fault.nth, fault.error);
  return f;
}

NvmeState::NvmeState(runtime::Runtime& rt, const ZeroOptions& options,
                     const std::vector<HostPiece>& pieces, int64_t host_begin)
    : rt_(rt),
      options_(options),
      pieces_(pieces),
      host_begin_(host_begin),
      master_dtype_(options.host_master_dtype),
      moments_dtype_(options.host_moments_dtype) {}

NvmeState::~NvmeState() {
  if (file_ != nullptr) (void)file_->WaitAll();
}

int64_t NvmeState::TensorBytes(int p, int t) const {
  return SwapFile::AlignUp(
      pieces_[p].elements *
      kernels::DTypeSize(t == 0 ? master_dtype_ : moments_dtype_));
}

int64_t NvmeState::TensorOffset(int p, int t) const {
  return t == 0 ? 0 : TensorBytes(p, 0) + (t - 1) * TensorBytes(p, 1);
}

int64_t NvmeState::PieceBytes(int p) const { return TensorOffset(p, 3); }

std::string NvmeState::path() const {
  return file_ != nullptr ? file_->path() : std::string();
}

absl::StatusOr<std::unique_ptr<NvmeState>> NvmeState::Create(
    runtime::Runtime& rt, const ZeroOptions& options,
    const std::vector<HostPiece>& pieces, int64_t host_begin) {
  std::unique_ptr<NvmeState> s(new NvmeState(rt, options, pieces, host_begin));
  int64_t window = 0, largest = 0;
  for (int p = 0; p < static_cast<int>(pieces.size()); ++p) {
    s->file_offset_.push_back(s->file_bytes_);
    s->file_bytes_ += s->PieceBytes(p);
    window = std::max(window, s->PieceBytes(p));
    largest = std::max(largest, pieces[p].elements);
  }
  if (s->master_dtype_ != runtime::DType::kF32) {
    // The initial master in fp32 before it is rounded into a window.
    ZR_ASSIGN_OR_RETURN(s->scratch_, runtime::AllocateHost(
                                         rt, std::max<int64_t>(1, largest) * 4,
                                         runtime::HostMemoryKind::kPageable,
                                         "NVMe initial master scratch"));
  }
  const int count = std::max(3, options.nvme_buffers);
  for (int k = 0; k < count; ++k) {
    Window w;
    // Pageable: only the drive and the host touch it. Aligned inside.
    ZR_ASSIGN_OR_RETURN(
        w.buffer, runtime::AllocateHost(
                      rt, std::max<int64_t>(1, window + SwapFile::kAlignment),
                      runtime::HostMemoryKind::kPageable,
                      absl::StrCat("NVMe swap window ", k)));
    w.base = SwapFile::AlignmentGap(w.buffer.data());
    s->windows_.push_back(std::move(w));
  }
  ZR_ASSIGN_OR_RETURN(
      s->file_,
      OpenRankSwapFile(rt, options, options.nvme_path, "zero3_optimizer",
                       s->file_bytes_, options.nvme_fault));
  // Reserved space reads as zeros until the engine writes the initial
  // master (WriteMasterWith).
  return s;
}

BufferSlice NvmeState::WindowSlice(int p) const {
  const Window& w = windows_[p % windows()];
  return w.buffer.Slice(w.base, PieceBytes(p));
}

HostState::Set NvmeState::SetOf(int p) const {
  const Window& w = windows_[p % windows()];
  const int64_t n = pieces_[p].elements;
  auto tensor = [&](int t) {
    return w.buffer.Slice(
        w.base + TensorOffset(p, t),
        n * kernels::DTypeSize(t == 0 ? master_dtype_ : moments_dtype_));
  };
  return {tensor(0), tensor(1), tensor(2)};
}

absl::Status NvmeState::WaitWrite(Window& w) {
  const int64_t ticket = std::exchange(w.writing, 0);
  if (ticket == 0 || !options_.syncs.enabled(Sync::kNvmeWriteBeforeReuse)) {
    return absl::OkStatus();
  }
  return file_->Wait(ticket);
}

absl::Status NvmeState::WaitRead(Window& w) {
  const int64_t ticket = std::exchange(w.reading, 0);
  if (ticket == 0 || !options_.syncs.enabled(Sync::kNvmeReadBeforeStep)) {
    return absl::OkStatus();
  }
  const absl::Status s = file_->Wait(ticket);
  if (!s.ok()) w.piece = -1;  // what it holds is not the piece
  return s;
}

absl::Status NvmeState::Prefetch(int p) {
  if (p < 0 || p >= static_cast<int>(pieces_.size())) return absl::OkStatus();
  Window& w = windows_[p % windows()];
  if (w.piece == p) return absl::OkStatus();
  ZR_RETURN_IF_ERROR(WaitWrite(w));
  ZR_RETURN_IF_ERROR(WaitRead(w));  // a read nobody used (a failed step's)
  w.piece = p;
  ZR_ASSIGN_OR_RETURN(w.reading,
                      file_->Read(file_offset_[p], WindowSlice(p),
                                  absl::StrCat("NVMe read ", pieces_[p].name)));
  return absl::OkStatus();
}

absl::StatusOr<HostState::Set> NvmeState::Acquire(int p) {
  ZR_RETURN_IF_ERROR(Prefetch(p));
  Window& w = windows_[p % windows()];
  ZR_RETURN_IF_ERROR(WaitRead(w));
  // Still there from before (one piece per window): its last write-back
  // reads the window the caller is about to change.
  ZR_RETURN_IF_ERROR(WaitWrite(w));
  return SetOf(p);
}

absl::Status NvmeState::Release(int p, bool dirty) {
  if (!dirty) return absl::OkStatus();
  Window& w = windows_[p % windows()];
  ZR_ASSIGN_OR_RETURN(
      w.writing, file_->Write(file_offset_[p], WindowSlice(p),
                              absl::StrCat("NVMe write ", pieces_[p].name)));
  return absl::OkStatus();
}

absl::Status NvmeState::Flush() {
  for (Window& w : windows_) ZR_RETURN_IF_ERROR(WaitWrite(w));
  return absl::OkStatus();
}

absl::Status NvmeState::Read(int t, int64_t begin, int64_t n, float* out) {
  for (int p = 0; p < static_cast<int>(pieces_.size()); ++p) {
    const int64_t first = pieces_[p].offset - host_begin_;
    const int64_t from = std::max(begin, first);
    const int64_t to = std::min(begin + n, first + pieces_[p].elements);
    if (from >= to) continue;
    ZR_ASSIGN_OR_RETURN(const HostState::Set set, Acquire(p));
    const BufferSlice tensor = t == 0   ? set.master
                               : t == 1 ? set.exp_avg
                                        : set.exp_avg_sq;
    HostTask copy;
    copy.label = "read NVMe state";
    copy.reads = {tensor};
    const runtime::DType dtype = t == 0 ? master_dtype_ : moments_dtype_;
    copy.run = [&]() -> absl::Status {
      HostWidenToFloat(static_cast<const char*>(tensor.data()) +
                           (from - first) * kernels::DTypeSize(dtype),
                       dtype, out + (from - begin), to - from, 1);
      return absl::OkStatus();
    };
    ZR_RETURN_IF_ERROR(rt_.RunHostTask(copy));
    ZR_RETURN_IF_ERROR(Release(p, false));
  }
  return absl::OkStatus();
}

absl::Status NvmeState::Fill(int p, std::vector<BufferSlice> scratch,
                             const std::function<absl::Status(char*)>& fill) {
  Window& w = windows_[p % windows()];
  ZR_RETURN_IF_ERROR(WaitWrite(w));
  // A read in flight into the window is finished first (its bytes are
  // replaced).
  ZR_RETURN_IF_ERROR(WaitRead(w));
  w.piece = p;
  HostTask task;
  task.label = absl::StrCat("fill NVMe state ", pieces_[p].name);
  task.writes = {WindowSlice(p)};
  for (const BufferSlice& b : scratch) task.writes.push_back(b);
  task.memory_bytes = PieceBytes(p);
  task.run = [&]() -> absl::Status {
    return fill(static_cast<char*>(WindowSlice(p).data()));
  };
  ZR_RETURN_IF_ERROR(rt_.RunHostTask(task));
  return Release(p, true);
}

void NvmeState::Store(int t, const float* values, int64_t n, char* into) const {
  const runtime::DType dtype = t == 0 ? master_dtype_ : moments_dtype_;
  if (dtype == runtime::DType::kF32) {
    std::memcpy(into, values, n * 4);
  } else {
    HostCastFromFloat(values, dtype, into, n, 1);
  }
}

absl::Status NvmeState::Write(const float* const values[3]) {
  for (int p = 0; p < static_cast<int>(pieces_.size()); ++p) {
    const int64_t first = pieces_[p].offset - host_begin_;
    const int64_t n = pieces_[p].elements;
    ZR_RETURN_IF_ERROR(Fill(p, {}, [&](char* window) {
      std::memset(window, 0, PieceBytes(p));
      for (int t = 0; t < 3; ++t) {
        if (values[t] != nullptr) {
          Store(t, values[t] + first, n, window + TensorOffset(p, t));
        }
      }
      return absl::OkStatus();
    }));
  }
  return Flush();
}

absl::Status NvmeState::WriteMasterWith(
    const std::function<absl::Status(int64_t, int64_t, float*)>& fill) {
  const bool fp32 = master_dtype_ == runtime::DType::kF32;
  for (int p = 0; p < static_cast<int>(pieces_.size()); ++p) {
    const int64_t n = pieces_[p].elements;
    std::vector<BufferSlice> scratch;
    if (!fp32) scratch = {scratch_.Slice(0, n * 4)};
    ZR_RETURN_IF_ERROR(Fill(p, scratch, [&](char* window) {
      std::memset(window, 0, PieceBytes(p));
      if (fp32) {
        return fill(pieces_[p].offset, n, reinterpret_cast<float*>(window));
      }
      float* values = scratch[0].As<float>();
      ZR_RETURN_IF_ERROR(fill(pieces_[p].offset, n, values));
      Store(0, values, n, window);
      return absl::OkStatus();
    }));
  }
  return Flush();
}

}  // namespace zero
}  // namespace zero3
