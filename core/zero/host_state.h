// Copyright 2026 The zero3 Authors.
//
// host_state.h: the host share's fp32 master and Adam moments, indexed from
// ZeroContext::host_begin, and with the speculative step a second set of
// each. A piece updated speculatively reads its current set and writes the
// other, which becomes its current set when validation commits the update
// (Flip). Settle copies every piece's current set back into the first,
// where checkpoints, the master's readers and the fp32 write-back find it.
//
// Owns the buffers; destroy it only when no queued work reads them. Not
// thread-safe.

#ifndef ZERO3_CORE_ZERO_HOST_STATE_H_
#define ZERO3_CORE_ZERO_HOST_STATE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/runtime/owned_buffer.h"
#include "core/runtime/runtime.h"
#include "core/zero/host_pieces.h"

namespace zero3 {
namespace zero {

class HostState {
 public:
  // `elements` of each of master (in `master_dtype`), exp_avg and
  // exp_avg_sq (in `moments_dtype`: fp32, or bf16); the master in
  // `master_kind` memory (pinned where it goes back to the device in
  // fp32), the moments pageable, as DeepSpeed keeps them; with `second`,
  // the second set (pageable).
  static absl::StatusOr<HostState> Allocate(
      runtime::Runtime& rt, int64_t elements,
      runtime::HostMemoryKind master_kind, bool second,
      runtime::DType master_dtype = runtime::DType::kF32,
      runtime::DType moments_dtype = runtime::DType::kF32);
  // No buffers, the dtypes only: where the state lives elsewhere (on NVMe,
  // NvmeState) and only its element types are asked for.
  static HostState DtypesOnly(runtime::DType master_dtype,
                              runtime::DType moments_dtype) {
    HostState s;
    s.dtypes_[0] = master_dtype;
    s.dtypes_[1] = moments_dtype;
    return s;
  }
  HostState() = default;
  HostState(HostState&&) = default;
  HostState& operator=(HostState&&) = default;

  // The three tensors' elements [at, at + n) of one set.
  struct Set {
    runtime::BufferSlice master, exp_avg, exp_avg_sq;
  };
  // Of the first set; of piece `piece`'s current set; of the other one
  // (the second set exists).
  Set First(int64_t at, int64_t n) const { return Of(false, at, n); }
  Set Current(int piece, int64_t at, int64_t n) const {
    return Of(in_second(piece), at, n);
  }
  Set Other(int piece, int64_t at, int64_t n) const {
    return Of(!in_second(piece), at, n);
  }
  bool in_second(int piece) const {
    return !in_second_.empty() && in_second_[piece];
  }
  // With the second set: `pieces` pieces, each current in the first set.
  void SetPieces(int pieces) {
    if (sets_[1][0].valid()) in_second_.assign(pieces, false);
  }
  // The piece's other set becomes its current one (a committed update).
  void Flip(int piece) { in_second_[piece] = !in_second_[piece]; }

  // One host task copying the current sets of `pieces` that are the second
  // back into the first (on `task_threads` declared, `copy_threads` used);
  // nothing when none is. Every piece's current set is the first after.
  absl::Status Settle(runtime::Runtime& rt,
                      const std::vector<HostPiece>& pieces, int64_t host_begin,
                      int task_threads, int copy_threads);

  runtime::DType master_dtype() const { return dtypes_[0]; }
  runtime::DType moments_dtype() const { return dtypes_[1]; }
  // The dtype of tensor `t`: 0 the master, 1 exp_avg, 2 exp_avg_sq.
  runtime::DType dtype(int t) const { return dtypes_[t == 0 ? 0 : 1]; }
  // Writes `values`, one per element, into the first set's tensor `t`,
  // copied in fp32 or rounded to nearest even in bf16, on `threads` threads.
  // Call from a host task that declares the write.
  void Write(int t, const float* values, int threads) const;
  // Bytes of one element's master and moments, of one set.
  int64_t bytes_per_element() const;

  // The first set's whole buffers.
  const runtime::OwnedBuffer& master() const { return sets_[0][0]; }
  const runtime::OwnedBuffer& exp_avg() const { return sets_[0][1]; }
  const runtime::OwnedBuffer& exp_avg_sq() const { return sets_[0][2]; }

 private:
  Set Of(bool second, int64_t at, int64_t n) const;

  runtime::OwnedBuffer sets_[2][3];  // [set][master, exp_avg, exp_avg_sq]
  // master's, the moments'
  runtime::DType dtypes_[2] = {runtime::DType::kF32, runtime::DType::kF32};
  std::vector<bool> in_second_;  // by piece; empty without a second set
};

}  // namespace zero
}  // namespace zero3

#endif  // ZERO3_CORE_ZERO_HOST_STATE_H_
