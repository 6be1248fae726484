// Copyright 2026 The zero3 Authors.
//
// host_optimizer.h: the host share of one rank's optimizer
// (offload_optimizer): its fp32 master and Adam moments (and the
// speculative step's second set), the pinned staging of its new working
// copy, the write-back stream that takes that copy to the device piece by
// piece, and where in the step each piece's AdamW runs.
//
// Where it runs is the host step plan (zero::HostStepPlanOf), resolved once:
//   at the step's end (Update), each piece's update then its H2D;
//   speculative (offload_optimizer.super_offload, host_speculation.cc):
//     during the boundary backward, each piece once its gradients are on the
//     host, into the second set; Update validates it against the norm;
//   under the next forward (zero3.host_step_overlap "forward",
//     host_deferral.cc): each piece just before the first gather of a
//     parameter it overlaps;
//   delayed (ZeRO-Offload's one-step delayed update, host_deferral.cc):
//     beside the next step, its working copy on the device a step later.
// The training is bitwise the same in every plan but the delayed one.
//
// The engine keeps the step's phases and calls in at named points: the
// step's start (BeginStep, IssueWriteBack), a module's end
// (RunDelayedPieceIfBlocked, SpeculateEarly), the forward's end
// (RunDelayedPiecesUnderForward, RunAllDeferredPieces), the boundary
// backward (BeginSpeculation or SkipSpeculation, Speculate), the update (Update
// or Skip, then outcome()) and before the state is read or replaced
// (FinishHostStep). The gradients come from the GradReducer: its host partition
// and, with the speculative step, its per-bucket "on host" events and running
// norm. Not thread-safe: the rank's host thread drives it.

#ifndef ZERO3_CORE_ZERO_HOST_OPTIMIZER_H_
#define ZERO3_CORE_ZERO_HOST_OPTIMIZER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/kernels/op_args.h"
#include "core/runtime/owned_buffer.h"
#include "core/runtime/runtime.h"
#include "core/zero/context.h"
#include "core/zero/grad_reducer.h"
#include "core/zero/host_pieces.h"
#include "core/zero/host_state.h"
#include "core/zero/nvme_params.h"
#include "core/zero/nvme_state.h"
#include "core/zero/param_coordinator.h"

namespace zero3 {
namespace zero {

// What the speculative host step came to in one step.
enum class Speculation {
  kNone,       // not run (off, another mode, or backing off after a miss)
  kCommitted,  // validated: its update is the step's
  kReplayed,   // clipping triggered: the host share updated again
  kDiscarded,  // a non-finite norm: the step skipped
  // Stopped partway: this rank's running norm already proved a miss
  // (non-finite, or clipping triggers); the step is then replayed or
  // skipped as a miss found after backward is.
  kAborted,
};
// "committed", "replayed", "discarded", "aborted early"; "" for kNone.
const char* SpeculationName(Speculation s);

class HostOptimizer {
 public:
  // One step's outcome of the host share's update.
  struct Outcome {
    Speculation speculation = Speculation::kNone;
    // The pieces updated speculatively during backward (all of them unless
    // aborted or carried over; 0 when not run).
    int speculative_pieces = 0;
    // Committed with the plan's carries_over: the pieces not reached when
    // the norm was known, updated under the next forward instead.
    int carried_pieces = 0;
  };

  // The host share [ctx.host_begin, ctx.layout->total()) in pieces of
  // `sub_groups` (with their `decay_runs`) cut at options.host_step_piece;
  // its state allocated (nothing with no host share). `shard` is the working
  // shard (device memory, or host memory with offload_param, which the
  // update then writes directly). `ctx` and `reducer` outlive it.
  static absl::StatusOr<std::unique_ptr<HostOptimizer>> Create(
      const ZeroContext& ctx, GradReducer& reducer,
      const runtime::Buffer& shard, const std::vector<ParamRange>& sub_groups,
      const std::vector<std::vector<DecayRun>>& decay_runs);
  // The device is idle (the engine synchronizes it) before this runs.
  ~HostOptimizer();

  int64_t elements() const { return ctx_.host_elements(); }
  // Where the host share's update runs (HostStepPlanOf), resolved once.
  const config::HostStepPlan& plan() const { return plan_; }
  const std::vector<HostPiece>& pieces() const { return pieces_; }
  // The master and moments in host memory: the first set is current
  // between steps (after FinishHostStep). Empty with the state on NVMe.
  const HostState& state() const { return state_; }
  // With the state on NVMe (options.nvme_path): its swap file; else null.
  const NvmeState* nvme() const { return nvme_.get(); }
  // With the working shard on NVMe (options.param_nvme_path, with
  // offload_param): its swap file, which the update writes each piece's
  // working copy to and the coordinator reads partitions from; else null.
  NvmeParams* nvme_params() const { return nvme_params_.get(); }
  // The fp32 master in host memory that the initial parameters may be
  // written into directly, or null (bf16, on NVMe, no host share).
  const runtime::Buffer* WritableMaster() const;
  // `n` current elements of tensor `t` (0 master, 1 exp_avg, 2 exp_avg_sq)
  // from host-share offset `begin`, widened to fp32, into `out` (host
  // tasks of its own; from the drive on NVMe). Between steps, after
  // FinishHostStep.
  absl::Status ReadState(int t, int64_t begin, int64_t n, float* out);
  // The initial state in host memory: the host share's elements of
  // `full_master` (fp32, host memory indexed by flat offset) as master,
  // moments zero. Then StageWorkingCopy. (On NVMe: ImportMasterWith.)
  absl::Status ImportMaster(const runtime::Buffer& full_master);
  // With the state on NVMe: the initial master produced piece by piece by
  // `fill(begin, n, out)` (flat offsets; out[0] is element `begin`; run in
  // a host task writing the piece's window), moments zero. Then
  // StageWorkingCopy.
  using MasterFill =
      std::function<absl::Status(int64_t begin, int64_t n, float* out)>;
  absl::Status ImportMasterWith(const MasterFill& fill);
  // With the state on NVMe: starts reading the first pieces of the next
  // update (before the boundary backward, which then hides the reads).
  absl::Status Prefetch();

  // The working copy of the host share from its master: cast on the host
  // into the staging, then copied to the device and waited for (with
  // offload_param, cast into the host shard). At start-up and after the
  // master is replaced.
  absl::Status StageWorkingCopy();
  // Replaces master and moments with `elements()` values each (a
  // checkpoint's host share), then stages the working copy; a pending
  // write-back is dropped (its copy is stale). Call after FinishHostStep.
  absl::Status Import(const float* master, const float* exp_avg,
                      const float* exp_avg_sq);

  // The engine's count of steps taken: the step running, or between steps
  // the next one (the delayed plan's write-back is due by it). Set whenever
  // the count changes.
  void SetStep(int64_t step);
  // A step begins: its outcome starts as kNone.
  void BeginStep();
  // The pending write-back's H2D, piece by piece on the write-back stream
  // (each recording its piece's event), when it is due in this step: at
  // once, or with the delayed plan the step after the one its pieces ran
  // in. At the start of a step (after its inputs' copy) and in
  // FinishHostStep.
  absl::Status IssueWriteBack();

  // The step's update with `args` (after the device share's). With a
  // speculation this step, first validated: committed where `unclipped`
  // (the step's arguments are those it assumed). Otherwise, or on a miss,
  // at once, or left deferred for the plan's later point.
  absl::Status Update(const kernels::AdamWArgs& args, bool unclipped);
  // The step is skipped (a non-finite norm): a speculation is discarded.
  absl::Status Skip();
  const Outcome& outcome() const { return outcome_; }
  // After an applied update, what the next gathers wait for: each piece's
  // H2D (empty unless the working copy goes back on the write-back stream).
  std::vector<ParamCoordinator::PendingWrite> PendingWrites() const;

  // host_deferral.cc: the deferred update's pieces. Those that overlap the
  // flat range [begin, begin + elements), in place on their current
  // copies, each then written back (forward plan) or left pending for the
  // step after next (delayed plan, after waiting for the piece's last
  // write-back: write-back-before-host-piece). The coordinator's
  // before-gather hook.
  absl::Status RunDeferredPieces(int64_t begin, int64_t elements);
  // Every deferred piece (before backward overwrites the host gradients).
  absl::Status RunAllDeferredPieces();
  // Delayed plan: deferred pieces in order until `forward_done` (the loss's
  // copy) has completed, so they fill the host's wait for the forward.
  absl::Status RunDelayedPiecesUnderForward(runtime::Event& forward_done);
  // Delayed plan, at a module's end: the next deferred piece when issuing
  // the module, begun at host time `module_begin_ns`, kept the host waiting
  // for the device (a full launch queue, a buffer still in use) for at least
  // options.delayed_piece_after_wait_ns, so the device has work queued to
  // run meanwhile.
  absl::Status RunDelayedPieceIfBlocked(int64_t module_begin_ns);
  // Before the state is read or replaced, between steps: every deferred
  // piece, the second set settled into the first, and the pending
  // write-back issued.
  absl::Status FinishHostStep();

  // host_speculation.cc: whether this step's boundary backward speculates.
  bool SpeculateThisStep() const;
  // Before the boundary backward is issued: the speculation's unclipped
  // arguments and piece order; `loss_scale` for the early-abort test. The
  // outcome is kCommitted until validation or an abort says otherwise.
  void BeginSpeculation(const kernels::AdamWArgs& args, double loss_scale);
  // While backward is issued (a backward module's end): one piece, when
  // one has its gradients on the host already (Event::Query).
  absl::Status SpeculateEarly();
  // After backward is issued and the reducer's FinishBackward: the pieces
  // left, each once its bucket's copy is done. With the plan's carries_over
  // only until the norm's copy to the host is done: the rest wait for
  // validation.
  absl::Status Speculate();
  // The backward about to be issued does not speculate (a pass the last
  // one left active ends).
  void SkipSpeculation() { pass_.active = false; }

 private:
  HostOptimizer(const ZeroContext& ctx, GradReducer& reducer,
                const runtime::Buffer& shard);
  absl::Status Allocate();
  // StageWorkingCopy's cast into `target`: from the master in memory at
  // once, or piece by piece (the master or the working copy on the drive).
  absl::Status StageFromMemory(const runtime::Buffer& target);
  absl::Status StageByPiece(const runtime::Buffer& target);
  // One piece's AdamW, in place, or (speculative) from its current master
  // and moments into the other ones; both write the new working copy into
  // the staging (or the host shard with offload_param).
  absl::Status AdamPiece(int piece, const kernels::AdamWArgs& args,
                         const runtime::TensorRef& grads, bool speculative);
  // Every piece's update and write-back now.
  absl::Status UpdateNow(const kernels::AdamWArgs& args);
  // The way back of one updated piece: its fp32 master to the device
  // (per_param_fp32_grads), nothing (offload_param), its H2D on the
  // compute stream, or pending for IssueWriteBack.
  absl::Status WriteBackPiece(int piece);
  // The H2D of one piece's working copy, from the staging, on `s`.
  absl::Status CopyPieceToDevice(runtime::Stream& s, int piece);
  // per_param_fp32_grads: `n` updated fp32 master elements at flat offset
  // `offset` to the device, cast there into the working shard.
  absl::Status WriteBackFp32(const runtime::BufferSlice& master, int64_t offset,
                             int64_t n, const std::string& name);
  // host_deferral.cc: one deferred piece; the first not run, or -1.
  absl::Status RunDeferredPiece(int index);
  int FirstDeferredPiece() const;
  // host_speculation.cc.
  absl::StatusOr<bool> BucketOnHost(int bucket, bool wait);
  absl::Status ArriveSpeculativePieces(bool wait);
  absl::StatusOr<int> NextSpeculativePiece(bool wait);
  absl::Status SpeculateNextPiece(int piece);
  // Whether this rank's running norm after `bucket` already proves the
  // speculation a miss (non-finite, or clipping triggers). Never without
  // values.
  absl::StatusOr<bool> MissProven(int bucket);
  // What validation makes of the speculation: committed, each updated
  // piece's copies become its current ones (HostState::Flip), and pieces
  // left over are deferred to the next forward; else a miss, which with
  // speculative_step auto pauses speculation.
  absl::Status ResolveSpeculation(bool validated, bool finite);

  const ZeroContext& ctx_;
  const ZeroOptions& options_;
  const config::HostStepPlan plan_;
  runtime::Runtime& rt_;
  GradReducer& reducer_;
  const runtime::Buffer shard_;
  std::vector<HostPiece> pieces_;

  // With a plan that moves the step: the working copy goes back on this
  // stream, piece by piece (piece_written_), under the next forward.
  // Declared first, destroyed last: the events and buffers below are its.
  std::unique_ptr<runtime::Stream> write_back_;
  std::vector<std::unique_ptr<runtime::Event>> piece_written_;
  // With the plan's carries_over: the norm's copy to the host is done.
  std::unique_ptr<runtime::Event> norm_copied_;
  HostState state_;
  // The state on NVMe instead (options.nvme_path).
  std::unique_ptr<NvmeState> nvme_;
  // The working shard on NVMe (options.param_nvme_path).
  std::unique_ptr<NvmeParams> nvme_params_;
  // The pinned staging of the new working copy, for the H2D write-back.
  runtime::OwnedBuffer staging_;
  // per_param_fp32_grads: the device piece the fp32 master comes back into.
  runtime::OwnedBuffer writeback_;

  int64_t step_ = 0;  // the step running (BeginStep), or the next one
  Outcome outcome_;
  // The pieces whose working copy IssueWriteBack is to copy, and the step
  // at whose start it is due (0: at once).
  std::vector<bool> write_pending_;
  int64_t write_back_step_ = 0;
  // The deferred update: its arguments, the pieces not run yet, and the
  // gradients they read (the reducer's host partition at the update; with
  // the delayed plan the next backward fills the other one).
  kernels::AdamWArgs deferred_args_;
  std::vector<bool> piece_deferred_;
  runtime::TensorRef deferred_grads_;

  // speculative_step auto: no speculation before this step; the pause after
  // the next failed validation (doubles with each one).
  int64_t speculate_from_ = 0;
  int64_t speculation_pause_ = 1;
  // Whether this step's speculation aborted on a non-finite running norm.
  bool miss_non_finite_ = false;
  // The boundary backward's speculation in progress (BeginSpeculation).
  struct Pass {
    bool active = false;      // pieces are left and none proved a miss
    kernels::AdamWArgs args;  // the step's, unclipped
    double loss_scale = 1;
    std::vector<int> order;  // pieces_ in their buckets' order
    size_t arrived = 0;      // order[0, arrived) have their gradients here
    std::vector<bool> done;  // by piece: updated speculatively
    int left = 0;            // pieces not done
  };
  Pass pass_;
};

}  // namespace zero
}  // namespace zero3

#endif  // ZERO3_CORE_ZERO_HOST_OPTIMIZER_H_
