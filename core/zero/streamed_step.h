// Copyright 2026 The zero3 Authors.
//
// streamed_step.h: the offloaded optimizer state whose AdamW runs on the
// device (zero3.offloaded_step "device" or "auto"): the flat-layout elements
// [ctx.streamed_begin, ctx.host_begin), their fp32 master and Adam moments
// in pinned host memory, stepped piece by piece through two device slots.
//
// For each piece, in layout order: its master and moments are copied into
// a slot on the copy-in stream (the first two at the boundary backward's
// start, by Prefetch, so those copies run under backward; each later one
// as soon as its slot is free), the compute stream runs the device AdamW on
// the slot (the same kernels the device share runs, so the result is
// bitwise theirs) and casts the updated master into the working shard, and
// the copy-out stream takes master and moments back to host memory. The
// copy-in of piece k + 1 and the copy-out of piece k - 1 run beside the
// step of piece k, one in each direction of the host link; the last
// copies-out run under the next forward. The gradients of these elements
// stay on the device (the reducer's fp32 partition, as the device share's).
//
// Its synchronizations (sync_points.h): streamed-states-before-step (the
// compute stream waits for a slot's copy-in), streamed-step-before-out (the
// copy-out stream waits for the piece's step) and streamed-slot-reuse (the
// copy-in stream waits for the copy-out of the slot's last piece, which
// follows every earlier copy-out on its stream, so a piece's host state is
// back before the next step reads it). The host reads or replaces the state
// only after a device synchronize (the engine's, before any export or
// import). Not thread-safe: the rank's host thread drives it.

#ifndef ZERO3_CORE_ZERO_STREAMED_STEP_H_
#define ZERO3_CORE_ZERO_STREAMED_STEP_H_

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/kernels/op_args.h"
#include "core/runtime/owned_buffer.h"
#include "core/runtime/runtime.h"
#include "core/zero/context.h"
#include "core/zero/host_pieces.h"

namespace zero3 {
namespace zero {

class StreamedStep {
 public:
  // The elements [ctx.streamed_begin, ctx.host_begin) in pieces of
  // `sub_groups` (with their `decay_runs`) cut at options.host_step_piece,
  // their host state (zero: set it with Import) and slots allocated
  // (nothing when there are none). `shard` is the device working shard.
  // `ctx` outlives it.
  static absl::StatusOr<std::unique_ptr<StreamedStep>> Create(
      const ZeroContext& ctx, const runtime::Buffer& shard,
      const std::vector<ParamRange>& sub_groups,
      const std::vector<std::vector<DecayRun>>& decay_runs);
  // The device is idle (the engine synchronizes it) before this runs.
  ~StreamedStep();

  int64_t begin() const { return begin_; }
  int64_t elements() const { return elements_; }
  const std::vector<HostPiece>& pieces() const { return pieces_; }
  // fp32 [elements()], pinned; index = flat offset - begin(). Current
  // between steps once the device is synchronized.
  const runtime::OwnedBuffer& master() const { return state_[0]; }
  const runtime::OwnedBuffer& exp_avg() const { return state_[1]; }
  const runtime::OwnedBuffer& exp_avg_sq() const { return state_[2]; }

  // Replaces master and moments with `elements()` values each (null
  // moments: zeros), then casts the working copy into the shard on the
  // device, piece by piece through the slots. Between steps, the device
  // synchronized.
  absl::Status Import(const float* master, const float* exp_avg,
                      const float* exp_avg_sq);
  // At start-up: the master from elements [begin(), begin() + elements())
  // of `full_master` (fp32 host memory indexed by flat offset), moments
  // zero, then the working copy cast as by Import.
  absl::Status ImportMaster(const runtime::Buffer& full_master);
  // The working copy of these elements cast again from their current
  // master (the delayed plan's skipped step), through the slots.
  absl::Status CastWorkingCopy();
  // Issues the copy-in of the first pieces into the slots, unless issued
  // since the last update (a skipped step's stay valid: the state did not
  // change). Before the boundary backward.
  absl::Status Prefetch();
  // The step's update with `args`, reading the gradients from `grads` (the
  // fp32 device partition, indexed by flat offset), each piece's new
  // working copy cast into the shard; `cast_first` (the delayed plan) casts
  // the master from before the update instead. After the device share's
  // kernels, on the compute stream; returns once it is issued.
  absl::Status Update(const kernels::AdamWArgs& args,
                      const runtime::TensorRef& grads, bool cast_first);

 private:
  static constexpr int kSlots = 2;
  // A slot: master, exp_avg and exp_avg_sq of one piece, each
  // slot_elements_ long; the events of its piece's copy-in, step and
  // copy-out, and whether each has been recorded yet.
  struct Slot {
    runtime::OwnedBuffer buffer;
    std::unique_ptr<runtime::Event> in, stepped, out;
    bool out_recorded = false;
  };

  StreamedStep(const ZeroContext& ctx, const runtime::Buffer& shard);
  absl::Status Allocate();
  // Fills the host state in a host task: from `values` (a null one: zeros),
  // or the master from `full_master` (with the task reading it).
  absl::Status Write(const float* const values[3],
                     const runtime::Buffer* full_master);
  // The piece's slot; its state as tensors of the slot.
  Slot& SlotOf(int piece) { return slots_[piece % kSlots]; }
  runtime::TensorRef SlotTensor(int piece, int which, int64_t offset,
                                int64_t n);
  // The piece's state into its slot, on the copy-in stream, after the
  // slot's last copy-out.
  absl::Status CopyIn(int piece);
  absl::Status CopyOut(int piece);
  // The slot's master of `piece` cast into the working shard.
  absl::Status CastPiece(int piece, const char* label);

  const ZeroContext& ctx_;
  runtime::Runtime& rt_;
  const runtime::Buffer shard_;
  int64_t begin_ = 0, elements_ = 0;
  std::vector<HostPiece> pieces_;
  int64_t slot_elements_ = 0;
  // Declared first, destroyed last: the events and buffers below are theirs.
  std::unique_ptr<runtime::Stream> in_, out_;
  std::array<Slot, kSlots> slots_;
  std::array<runtime::OwnedBuffer, 3> state_;
  // Pieces [0, prefetched_) are copied in (or on their way) for the next
  // update.
  int prefetched_ = 0;
};

}  // namespace zero
}  // namespace zero3

#endif  // ZERO3_CORE_ZERO_STREAMED_STEP_H_
