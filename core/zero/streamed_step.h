// Copyright 2026 The zero3 Authors.
//
// streamed_step.h: the offloaded optimizer state whose AdamW runs on the
// device (zero3.offloaded_step "device" or "auto"): the flat-layout elements
// [ctx.streamed_begin, ctx.host_begin), their master and Adam moments in
// pinned host memory (fp32, or bf16 with bf16 master weights and optimizer
// states, which halve the link's bytes: options.host_master_dtype and
// host_moments_dtype), stepped piece by piece through device slots
// (options.streamed_slots, one piece each).
//
// Pieces go in the order their gradients are final (the reducer's buckets
// run from the end of the layout). For each: its master and moments are
// copied into a slot on the copy-in stream (the first ones, a slot each,
// at the boundary backward's start, by Prefetch, ahead of their
// gradients; each later one as soon as its slot is free), the device AdamW
// (the device share's kernels, so the result is bitwise theirs) steps the
// slot and casts the updated master into the working shard, and the
// copy-out stream takes master and moments back to host memory. Copies-in
// of later pieces and copies-out of earlier ones run beside a piece's
// step, one in each direction of the host link; the last copies-out run
// under the next forward. The gradients of these elements stay on the
// device (the reducer's fp32 partition).
//
// With the speculative step (offload_optimizer.super_offload: the host
// step plan's `speculative`), pieces are stepped during the boundary
// backward instead, on a stream of their own, each once the reducer has
// issued the bucket that completes its gradients, with the step's unclipped
// arguments: the working copy goes to a device staging and master and
// moments to a second host copy. Update then commits them (the staging
// copied into the shard, the second copy becoming the current one) when
// the step's arguments are those assumed, or discards them and steps every
// piece at the step's end as without speculation. Bitwise the same
// training either way.
//
// Its synchronizations (sync_points.h): streamed-states-before-step (a
// step waits for its slot's copy-in), streamed-step-before-out (the
// copy-out waits for the step), streamed-slot-reuse (a copy-in waits for
// the copy-out of the slot's last piece, which follows every earlier
// copy-out on its stream: a piece's host state is back before the next step
// copies it in), and with the speculative step streamed-grads-before-step
// (a step waits for its last bucket's reduction) and
// streamed-step-before-commit (at the update the compute stream waits for
// the speculative steps). The host reads or replaces the state only after
// a device synchronize (the engine's, before any export or import). Not
// thread-safe: the rank's host thread drives it.

#ifndef ZERO3_CORE_ZERO_STREAMED_STEP_H_
#define ZERO3_CORE_ZERO_STREAMED_STEP_H_

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/kernels/dtype.h"
#include "core/kernels/op_args.h"
#include "core/runtime/owned_buffer.h"
#include "core/runtime/runtime.h"
#include "core/zero/context.h"
#include "core/zero/grad_reducer.h"
#include "core/zero/host_pieces.h"

namespace zero3 {
namespace zero {

class StreamedStep {
 public:
  // The elements [ctx.streamed_begin, ctx.host_begin) in pieces of
  // `sub_groups` (with their `decay_runs`) cut at options.host_step_piece,
  // their host state (zero: set it with Import) and slots allocated
  // (nothing when there are none). `shard` is the device working shard.
  // `ctx` and `reducer` outlive it.
  static absl::StatusOr<std::unique_ptr<StreamedStep>> Create(
      const ZeroContext& ctx, const GradReducer& reducer,
      const runtime::Buffer& shard, const std::vector<ParamRange>& sub_groups,
      const std::vector<std::vector<DecayRun>>& decay_runs);
  // The device is idle (the engine synchronizes it) before this runs.
  ~StreamedStep();

  int64_t begin() const { return begin_; }
  int64_t elements() const { return elements_; }
  const std::vector<HostPiece>& pieces() const { return pieces_; }
  // Whether the boundary backward steps pieces speculatively.
  bool speculative() const { return speculative_; }

  // The host buffers of the state, every copy (a host task reading the
  // state declares them).
  std::vector<runtime::BufferSlice> StateBuffers() const;
  // Copies `n` current elements of state tensor `which` (0 master,
  // 1 exp_avg, 2 exp_avg_sq) from flat offset `offset` into `out`, in a
  // host task that declares StateBuffers(). Between steps, the device
  // synchronized.
  void Read(int which, int64_t offset, int64_t n, float* out) const;

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
  // Speculative: before the boundary backward, the step's unclipped
  // arguments; then, as the reducer issues buckets (a module's end, the
  // backward's end), the pieces whose gradients they complete, reading
  // them from the reducer's device partition.
  void BeginSpeculation(const kernels::AdamWArgs& args);
  absl::Status Speculate();
  // The step's update with `args`, reading the gradients from `grads` (the
  // fp32 device partition, indexed by flat offset), each piece's new
  // working copy cast into the shard; `cast_first` (the delayed plan) casts
  // the master from before the update instead. A speculation is committed
  // where `validated` (the step's arguments are the ones it assumed), else
  // discarded; the pieces it did not step run now. After the device share's
  // kernels, on the compute stream; returns once it is issued.
  absl::Status Update(const kernels::AdamWArgs& args,
                      const runtime::TensorRef& grads, bool cast_first,
                      bool validated);
  // A skipped step: a speculation is discarded.
  absl::Status Skip();
  // The last boundary backward's speculation: how many pieces it stepped
  // (0: none), and whether the update committed them.
  struct Outcome {
    int pieces = 0;
    bool committed = false;
  };
  const Outcome& outcome() const { return outcome_; }

 private:
  // A slot: master, exp_avg and exp_avg_sq of one piece, regions of
  // slot_elements_ each in their dtypes, one after the other
  // (RegionStart); the events of its piece's copy-in, step and copy-out,
  // and whether the copy-out has been recorded yet.
  struct Slot {
    runtime::OwnedBuffer buffer;
    std::unique_ptr<runtime::Event> in, stepped, out;
    bool out_recorded = false;
  };

  StreamedStep(const ZeroContext& ctx, const GradReducer& reducer,
               const runtime::Buffer& shard);
  absl::Status Allocate();
  absl::Status Write(const float* const values[3],
                     const runtime::Buffer* full_master);
  // Position `pos` of order_: its piece and slot.
  const HostPiece& PieceAt(int pos) const { return pieces_[order_[pos]]; }
  Slot& SlotAt(int pos) { return slots_[pos % slots_.size()]; }
  runtime::TensorRef SlotTensor(int pos, int which, int64_t offset, int64_t n);
  // The host copy `set` of state tensor `which` of the piece at `pos`.
  runtime::BufferSlice HostSlice(int pos, int set, int which) const;
  // Copies in the pieces up to position `pos` (the one after in_upto_ at
  // most), each after its slot's last copy-out.
  absl::Status CopyInThrough(int pos);
  // One piece's step on `s`: AdamW on its slot, the working copy cast into
  // the shard (or, `staged`, the speculative staging), master and moments
  // copied out into host copy `set`; then the copy-in a slot count on.
  absl::Status StepAt(int pos, runtime::Stream& s,
                      const kernels::AdamWArgs& args,
                      const runtime::TensorRef& grads, bool cast_first,
                      bool staged, int set);
  // The slot's master of the piece at `pos` cast into the shard or the
  // staging, on `s`.
  absl::Status CastAt(int pos, runtime::Stream& s, bool staged,
                      const char* label);
  // Ends a speculation: the compute stream waits for its steps; committed,
  // the staged working copies go into the shard and the second host copies
  // become current.
  absl::Status EndSpeculation(bool commit);

  // Bytes of an element of state tensor `which`.
  int64_t ElementBytes(int which) const {
    return kernels::DTypeSize(dtypes_[which]);
  }
  // Where region `which` of a slot starts, in bytes (3: the slot's size).
  int64_t RegionStart(int which) const {
    int64_t bytes = 0;
    for (int i = 0; i < which; ++i) bytes += slot_elements_ * ElementBytes(i);
    return bytes;
  }

  const ZeroContext& ctx_;
  const GradReducer& reducer_;
  runtime::Runtime& rt_;
  const runtime::Buffer shard_;
  int64_t begin_ = 0, elements_ = 0;
  // Master, exp_avg, exp_avg_sq.
  const std::array<kernels::DType, 3> dtypes_;
  bool speculative_ = false;
  std::vector<HostPiece> pieces_;
  std::vector<int> order_;     // pieces in the order their gradients complete
  int64_t slot_elements_ = 0;  // the largest piece, rounded up to 64
  // Declared first, destroyed last: the events and buffers below are theirs.
  std::unique_ptr<runtime::Stream> in_, out_, step_;
  std::unique_ptr<runtime::Event> speculated_;
  // options.streamed_slots of them, or one a piece where fewer pieces.
  std::vector<Slot> slots_;
  // Host copies of master and moments: [copy][tensor]; the second only with
  // the speculative step. current_[piece] is the piece's current copy.
  std::array<std::array<runtime::OwnedBuffer, 3>, 2> state_;
  std::vector<int> current_;
  // The speculative step's working copies, by flat offset - begin().
  runtime::OwnedBuffer staged_;
  // Positions [0, in_upto_) are copied in (or on their way) for the step
  // to come.
  int in_upto_ = 0;
  // The speculation of the boundary backward in progress.
  bool speculating_ = false;
  kernels::AdamWArgs speculated_args_;
  int speculated_upto_ = 0;  // positions [0, speculated_upto_) stepped
  Outcome outcome_;
};

}  // namespace zero
}  // namespace zero3

#endif  // ZERO3_CORE_ZERO_STREAMED_STEP_H_
