// Copyright 2026 The zero3 Authors.
//
// nvme_state.h: the host share's master and Adam moments on NVMe
// (offload_optimizer.device "nvme", DeepSpeed's ZeRO-Infinity): in one swap
// file per rank under nvme_path (core/runtime/swap_file.h), brought into host
// memory piece by piece through a few windows (offload_optimizer.
// buffer_count of them) for the host AdamW and written back after it.
//
// A piece's master, exp_avg and exp_avg_sq (fp32, or bf16 with bf16
// master weights and optimizer states) sit side by side in the file, each
// padded to the swap file's alignment, so one transfer moves a piece
// each way. A window holds one piece; piece p uses window p % windows().
// The host step reads pieces ahead (Prefetch) while it steps one (Acquire)
// and writes back the ones before (Release): the drive's reads, its writes
// and the host's AdamW overlap. The file is the runtime's
// (Runtime::OpenDriveFile): on the simulator the drives' rates time the
// transfers and the race detector sees each one's window.
//
// Its synchronizations (sync_points.h): nvme-read-before-step (the host
// waits for a piece's read before its AdamW, or anything else, touches the
// window) and nvme-write-before-reuse (the host waits for a window's
// write-back before reading another piece into it or filling it). Not
// thread-safe: the rank's host thread drives it.

#ifndef ZERO3_CORE_ZERO_NVME_STATE_H_
#define ZERO3_CORE_ZERO_NVME_STATE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/runtime/drive_file.h"
#include "core/runtime/owned_buffer.h"
#include "core/runtime/runtime.h"
#include "core/zero/host_pieces.h"
#include "core/zero/host_state.h"
#include "core/zero/options.h"

namespace zero3 {
namespace zero {

// This rank's swap file `stem`_rank<R>.swap of `bytes` under `dir`, with
// aio's block size and queue depth (options) and a test's `fault`; the
// errors name the path and the fix (DriveFile).
absl::StatusOr<std::unique_ptr<runtime::DriveFile>> OpenRankSwapFile(
    runtime::Runtime& rt, const ZeroOptions& options, const std::string& dir,
    absl::string_view stem, int64_t bytes, const ZeroOptions::NvmeFault& fault);

class NvmeState {
 public:
  // The state of `pieces` (flat offsets from `host_begin`), in a swap file
  // of this rank under options.nvme_path created now (zeros until Write).
  // The file's errors (no directory, no space, another job's file) name
  // the path and the fix.
  static absl::StatusOr<std::unique_ptr<NvmeState>> Create(
      runtime::Runtime& rt, const ZeroOptions& options,
      const std::vector<HostPiece>& pieces, int64_t host_begin);
  // Waits for the transfers in flight; the file is removed.
  ~NvmeState();

  int windows() const { return static_cast<int>(windows_.size()); }
  // Pieces read ahead of the one being stepped: windows() - 2 (one window
  // steps, one is written back).
  int ahead() const { return windows() - 2; }
  // The swap file's path ("" without values), and whether its transfers
  // bypass the page cache (DriveFile::direct).
  std::string path() const;
  bool direct() const { return file_->direct(); }
  // Bytes on the drive.
  int64_t file_bytes() const { return file_bytes_; }

  // Starts reading piece `p` into its window, unless it is there or on its
  // way (after the window's last write-back).
  absl::Status Prefetch(int p);
  // Piece `p`'s master and moments in its window, read (or waited for).
  absl::StatusOr<HostState::Set> Acquire(int p);
  // Done with piece `p`; `dirty` writes it back (asynchronously).
  absl::Status Release(int p, bool dirty);
  // Every write-back done: the file holds the state.
  absl::Status Flush();

  // Whole state: `n` elements of tensor `t` (0 master, 1 exp_avg, 2
  // exp_avg_sq) from host-share offset `begin` into `out`; or all of them
  // replaced, from `values[t]` (fp32, elements() each; a null one: zeros).
  absl::Status Read(int t, int64_t begin, int64_t n, float* out);
  absl::Status Write(const float* const values[3]);
  // The master from `fill(begin, n, out)` (flat offsets), piece by piece,
  // moments zero.
  absl::Status WriteMasterWith(
      const std::function<absl::Status(int64_t, int64_t, float*)>& fill);

 private:
  struct Window {
    runtime::OwnedBuffer buffer;
    int64_t base = 0;     // offset of the aligned start in the buffer
    int piece = -1;       // the piece it holds (or is reading)
    int64_t reading = 0;  // ticket of the read in flight, 0 if none
    int64_t writing = 0;  // ticket of the write in flight, 0 if none
  };

  NvmeState(runtime::Runtime& rt, const ZeroOptions& options,
            const std::vector<HostPiece>& pieces, int64_t host_begin);
  // Bytes of piece `p`'s tensor `t` (0 master, 1 exp_avg, 2 exp_avg_sq) in
  // the file and in a window, where it starts in the piece's region, and
  // the region's size.
  int64_t TensorBytes(int p, int t) const;
  int64_t TensorOffset(int p, int t) const;
  int64_t PieceBytes(int p) const;
  // `n` fp32 values stored as tensor `t`'s dtype at `into`.
  void Store(int t, const float* values, int64_t n, char* into) const;
  runtime::BufferSlice WindowSlice(int p) const;
  HostState::Set SetOf(int p) const;
  // The host waits for the window's write-back (nvme-write-before-reuse),
  // or its read (nvme-read-before-step); nothing when none is in flight.
  absl::Status WaitWrite(Window& w);
  absl::Status WaitRead(Window& w);
  // Fills piece `p`'s window with `fill` (a host task writing it and
  // `scratch`) and writes it back.
  absl::Status Fill(int p, std::vector<runtime::BufferSlice> scratch,
                    const std::function<absl::Status(char* window)>& fill);

  runtime::Runtime& rt_;
  const ZeroOptions& options_;
  const std::vector<HostPiece> pieces_;
  const int64_t host_begin_;
  // The state's element types (options.host_master_dtype, moments).
  const runtime::DType master_dtype_, moments_dtype_;
  // With a bf16 master: the initial master in fp32 before it is rounded.
  runtime::OwnedBuffer scratch_;
  std::vector<int64_t> file_offset_;  // by piece
  int64_t file_bytes_ = 0;
  std::vector<Window> windows_;
  // Declared last, destroyed first: its transfers use the windows.
  std::unique_ptr<runtime::DriveFile> file_;
};

}  // namespace zero
}  // namespace zero3

#endif  // ZERO3_CORE_ZERO_NVME_STATE_H_
