// Copyright 2026 The zero3 Authors.
//
// nvme_params.h: the working shard on NVMe (offload_param.device "nvme",
// ZeRO-Infinity's parameter offload): one swap file per rank under
// offload_param.nvme_path (core/runtime/drive_file.h) holds this rank's
// partitions in the model's dtype; host memory holds only the few
// partitions about to be gathered and the pieces being written.
//
// Layout: the host optimizer's pieces (which cover the shard) one after the
// other, each padded to the swap file's alignment, so that an updated
// piece's working copy goes out in one aligned write. A partition overlaps
// one or more pieces; it is read with one aligned transfer per piece it
// overlaps (its segments), into one of offload_param.buffer_count read
// windows (pinned with offload_param.pin_memory), from which the gather
// stream copies it to the device.
//
//   reads:  Prefetch(p) ahead of the gathers (never waits), Acquire(p) for
//           the gather (reads or waits), then the gather stream's copies
//           and Release(p, gather) (the window frees once they are done);
//   writes: WriteWindow(k) for the host's cast of piece k, then Write(k).
//
// A window keeps its partition after Release until it is reused or a write
// overlaps it, so a partition gathered again soon is not read twice. Its
// synchronizations (sync_points.h): nvme-param-read-before-copy,
// nvme-param-copy-before-reuse, nvme-param-write-before-read and
// nvme-param-write-before-reuse. Not thread-safe: the rank's host thread
// drives it.

#ifndef ZERO3_CORE_ZERO_NVME_PARAMS_H_
#define ZERO3_CORE_ZERO_NVME_PARAMS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/runtime/drive_file.h"
#include "core/runtime/owned_buffer.h"
#include "core/runtime/runtime.h"
#include "core/zero/host_pieces.h"
#include "core/zero/options.h"
#include "core/zero/shard_layout.h"

namespace zero3 {
namespace zero {

class NvmeParams {
 public:
  // Part of a partition in a read window: its bytes, and the index of its
  // first element in the partition.
  struct Segment {
    runtime::BufferSlice bytes;
    int64_t at = 0;
  };

  // The shard of `layout` (elements of options.dtype) in a swap file of
  // this rank under options.param_nvme_path created now, laid out by
  // `pieces` (which must cover [0, layout.total()) in order). Refuses a
  // partition larger than options.param_nvme_buffer_size, naming
  // offload_param.buffer_size and the size needed.
  static absl::StatusOr<std::unique_ptr<NvmeParams>> Create(
      runtime::Runtime& rt, const ZeroOptions& options,
      const ShardLayout& layout, const std::vector<HostPiece>& pieces);
  // Waits for the transfers in flight; the file is removed. The device must
  // be done with the read windows (the engine synchronizes it first).
  ~NvmeParams();

  // The swap file's bytes for `pieces` of `esize`-byte elements.
  static int64_t FileBytes(const std::vector<HostPiece>& pieces, int64_t esize);
  int64_t file_bytes() const { return file_bytes_; }
  // The swap file's path ("" without values), and whether its transfers
  // bypass the page cache.
  std::string path() const;
  bool direct() const { return file_->direct(); }
  int read_windows() const { return static_cast<int>(reads_.size()); }

  // Piece `k`'s working copy goes here (host memory, the piece's bytes),
  // once the window's last write is done (nvme-param-write-before-reuse).
  absl::StatusOr<runtime::BufferSlice> WriteWindow(int k);
  // Starts writing piece `k` from its write window. Partitions it overlaps
  // that a read window holds are dropped (their bytes are stale).
  absl::Status Write(int k);

  // Starts reading parameter `p`'s partition into a free read window,
  // unless one holds it or none is free without waiting; false then.
  absl::StatusOr<bool> Prefetch(int p);
  // `p`'s partition in a read window, read now if no window holds it (then
  // the host may wait for a window), in its segments. The window is the
  // caller's until Release.
  absl::StatusOr<std::vector<Segment>> Acquire(int p);
  // Done issuing the copies from `p`'s window on `copied_on`: the window is
  // reused only after them.
  absl::Status Release(int p, runtime::Stream& copied_on);

 private:
  enum class State { kEmpty, kLoaded, kAcquired, kCopying };
  struct ReadWindow {
    runtime::OwnedBuffer buffer;
    int64_t base = 0;  // offset of the aligned start in the buffer
    State state = State::kEmpty;
    int param = -1;  // whose partition it holds (or reads); -1: none
    std::vector<int64_t> reading;  // tickets of the reads in flight
    std::unique_ptr<runtime::Event> copied;
    uint64_t age = 0;  // when last filled, for the oldest-first choice
  };
  struct WriteWindowState {
    runtime::OwnedBuffer buffer;
    int64_t base = 0;
    int piece = -1;       // the piece it holds
    int64_t writing = 0;  // ticket of the write in flight, 0 if none
  };
  // A file range of partition `p` and where it lands in a window.
  struct Extent {
    int64_t file_offset = 0, bytes = 0;  // aligned
    int64_t skip = 0;                    // bytes before the partition's
    int64_t elements = 0, at = 0;
  };

  NvmeParams(runtime::Runtime& rt, const ZeroOptions& options,
             const ShardLayout& layout, const std::vector<HostPiece>& pieces);
  std::vector<Extent> ExtentsOf(int p) const;
  // The pieces overlapping `p`'s partition.
  std::vector<int> PiecesOf(int p) const;
  // A window for a new read: empty, or done copying (oldest first); with
  // `wait`, also one still copying (the oldest, waited for) or holding a
  // read nobody used yet (the newest, dropped). -1 when none without
  // waiting.
  absl::StatusOr<int> FreeWindow(bool wait);
  // The read window in `state` filled first (or last, `newest`); -1 if none.
  int OldestOrNewest(State state, bool newest) const;
  absl::Status Read(int p, int w);
  absl::Status WaitReads(ReadWindow& w);
  // The host waits for the writes in flight of the pieces `p` overlaps
  // (nvme-param-write-before-read).
  absl::Status WaitWritesOf(int p);
  std::vector<Segment> SegmentsOf(int p, const ReadWindow& w) const;

  runtime::Runtime& rt_;
  const ZeroOptions& options_;
  const ShardLayout& layout_;
  const std::vector<HostPiece> pieces_;
  const int64_t esize_;
  std::vector<int64_t> file_offset_;  // by piece
  int64_t file_bytes_ = 0;
  std::vector<ReadWindow> reads_;
  std::vector<WriteWindowState> writes_;
  std::vector<int> window_of_;  // by parameter, -1 if none
  uint64_t clock_ = 0;
  // Declared last, destroyed first: its transfers use the windows.
  std::unique_ptr<runtime::DriveFile> file_;
};

}  // namespace zero
}  // namespace zero3

#endif  // ZERO3_CORE_ZERO_NVME_PARAMS_H_
