// Copyright 2026 The zero3 Authors.
//
// engine.h: one rank's ZeRO-3 training engine.
//
// The Engine owns the model (core/model), the parameter coordinator and the
// gradient reducer (core/zero), the optimizer state and the streams, all on
// one Runtime. Step() runs one optimizer step: for each micro-step of the
// accumulation window a forward pass (whose end is the host reading the
// loss), a backward pass (whose end, at the window's boundary, is the host
// synchronizing with the reduce stream: grad-offload-before-step), then the
// update: the global gradient norm, clipping and loss-scale handling, AdamW
// on the fp32 master shards - on the host per sub-group with
// offload_optimizer, else on the device; with offload_optimizer.ratio below
// 1 the first parameters' share on the device while the host updates the
// rest - and the new working shards. With the speculative step
// (offload_optimizer.super_offload, engine_speculation.cc) the host share's
// AdamW runs during the boundary backward instead, validated against the
// norm afterwards; the training is bitwise the same. With
// zero3.host_step_overlap it runs later instead: under the next forward,
// or beside the next step with the one-step delayed update
// (engine_host_step.cc).
//
// Every rank runs the same code; ranks meet only in collectives.
// The engine owns its buffers and synchronizes the device before they go.
// Not thread-safe: one rank's host thread drives it.

#ifndef ZERO3_CORE_ENGINE_ENGINE_H_
#define ZERO3_CORE_ENGINE_ENGINE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/kernels/op_args.h"
#include "core/model/data.h"
#include "core/model/inputs.h"
#include "core/model/model_spec.pb.h"
#include "core/model/param_source.h"
#include "core/model/transformer.h"
#include "core/runtime/owned_buffer.h"
#include "core/runtime/runtime.h"
#include "core/zero/grad_reducer.h"
#include "core/zero/host_pieces.h"
#include "core/zero/host_state.h"
#include "core/zero/loss_scaler.h"
#include "core/zero/options.h"
#include "core/zero/param_coordinator.h"
#include "core/zero/shard_layout.h"
#include "core/zero/weight_decay.h"

namespace zero3 {
namespace engine {

struct StepStats {
  int64_t step = 0;
  // This rank's loss; NaN when the runtime computes no values. The mean
  // over the data-parallel ranks is the global batch's loss: the mean over
  // its predicted targets (data that masks targets: each rank's terms over
  // the global batch's predicted targets, times the ranks), else the mean
  // of the micro-batches' means, which is the same where every target is
  // predicted.
  double loss = 0;
  // Host time of each phase, summed over micro-steps. FWD ends when the
  // host has read the micro-step's loss (so it includes the device's
  // leftover backward of the micro-step before); BWD when the host has
  // issued the backward pass (and, on the last micro-step, waited for the
  // gradient reduction); STEP when every rank's optimizer update is done,
  // on the host and on the device (with the speculative step, all but the
  // write-back of the host share's working copy, which overlaps the next
  // FWD).
  int64_t fwd_ns = 0;
  int64_t bwd_ns = 0;
  int64_t step_ns = 0;
  int64_t total_ns = 0;
  bool skipped = false;
  std::string skip_reason;
  // The global gradient norm after unscaling, before clipping.
  double grad_norm = 0;
  double loss_scale = 1;
  double lr = 0;  // The learning rate this step's update used.
  // The speculative host step (offload_optimizer.super_offload): whether
  // this step ran it, and what validation made of it.
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
  Speculation speculation = Speculation::kNone;
  // "committed", "replayed", "discarded", "aborted early"; "" for kNone.
  static const char* SpeculationName(Speculation s);
  // The host pieces this rank updated speculatively during backward (all
  // of them unless aborted or carried over; 0 when not run).
  int speculative_pieces = 0;
  // Committed with the host step plan's carries_over: the pieces not reached
  // when the norm was known, updated under the next forward instead.
  int carried_pieces = 0;
  int64_t tokens = 0;  // trained on by this rank in this step
  // Trained on by all ranks (tensor-parallel ranks share their tokens).
  int64_t global_tokens = 0;
  // Of global_tokens, those whose target is predicted (not masked or
  // padding): the loss's divisor.
  int64_t predicted_tokens = 0;
};

// An evaluation on held-out data (Engine::Evaluate).
struct EvalStats {
  double loss = 0;  // mean over the predicted targets; NaN where none
  int64_t predicted_tokens = 0;  // of all its batches
  int64_t batches = 0;           // global batches evaluated
};

// One rank's training state: what a checkpoint holds for it. The vectors
// are this rank's partitions of all parameters, laid out as the shard layout
// (layout().total() elements, padding included).
struct TrainingState {
  int64_t steps_done = 0;  // optimizer steps taken, skipped ones included
  int64_t adam_steps = 0;  // steps applied (AdamW's t; the schedule's)
  zero::LossScaler::State scaler;
  std::vector<float> master, exp_avg, exp_avg_sq;
};

class Engine : private model::ParamProvider {
 public:
  // `data` must outlive the engine. The master partitions start from
  // `params` (each rank reads only its own partitions), or from the seeded
  // initialization (options.seed) when it is null; `params` is used only
  // inside Create.
  static absl::StatusOr<std::unique_ptr<Engine>> Create(
      const model::ModelSpec& spec, const zero::ZeroOptions& options,
      const model::BatchSource* data, runtime::Runtime& rt,
      const model::ParamSource* params = nullptr);
  ~Engine() override;

  absl::StatusOr<StepStats> Step();

  // Forward passes over `batches` global batches of `data` (batch k is what
  // BatchSource::Fill gives for step k in the training shape), with the
  // parameters the next step trains, no backward and nothing updated: the
  // mean loss over their predicted targets, the same on every rank. Every
  // rank calls it between steps (a collective). In timing mode the passes
  // cost their time and the loss is NaN.
  absl::StatusOr<EvalStats> Evaluate(const model::BatchSource& data,
                                     int64_t batches);

  // This rank's fp32 master values of `param`: its partition without the
  // padding. Synchronizes; for tests and checkpoints (data mode only).
  absl::StatusOr<std::vector<float>> MasterParam(int param);

  // This rank's training state after the steps done so far. Synchronizes;
  // data mode only. The host master and moments are read in place with
  // optimizer offload, else copied from the device first.
  absl::StatusOr<TrainingState> ExportState();
  // The same into `into`, whose vectors are reused where they have the
  // size already (a checkpoint's snapshot, from one save to the next).
  absl::Status ExportState(TrainingState* into);
  // Continues from `state` (ExportState of an engine of the same model,
  // options and ranks): master, moments, working shard, step counts and
  // loss scaler. Call before Step; synchronizes.
  absl::Status ImportState(const TrainingState& state);
  // The number of ranks (of all, tensor-parallel ones included) that pass
  // `flag` true; every rank must call it (a collective). Lets ranks agree on
  // whether each did its part of a multi-rank action, e.g. a checkpoint's
  // shard writes. Data mode only.
  absl::StatusOr<int> CountRanks(bool flag, const std::string& label);
  // The element-wise sum over all ranks of `values` (the same length on
  // every rank; a collective, in fp32: integers up to 2^24 stay exact).
  // Data mode only.
  absl::StatusOr<std::vector<float>> SumAcrossRanks(
      const std::vector<float>& values, const std::string& label);

  const model::Transformer& model() const { return *model_; }
  const zero::ShardLayout& layout() const { return *layout_; }
  const zero::ZeroOptions& options() const { return options_; }
  int64_t steps_done() const { return step_; }
  // The share of this rank's optimizer state updated on the host: 0 without
  // offload_optimizer, else offload_optimizer.ratio (or auto's choice) as
  // cut at a parameter boundary.
  double host_share() const {
    return layout_->total() == 0
               ? 0
               : static_cast<double>(ctx_.host_elements()) / layout_->total();
  }
  // Where the data stands: the position of the next step's first sample,
  // part of the training state (BatchSource::SetPosition sets it back).
  model::DataPosition data_position() const;

 private:
  Engine(const model::ModelSpec& spec, const zero::ZeroOptions& options,
         const model::BatchSource* data, runtime::Runtime& rt);
  absl::Status Init(const model::ParamSource& params);
  // The streams, and this rank's tensor-parallel group (into *tp) and
  // data-parallel communicator (into *dp); sets dp_size_ and dp_rank_.
  absl::Status CreateStreamsAndGroups(model::TensorParallel* tp,
                                      runtime::Communicator** dp);
  // The model's activation checkpointing, from the options.
  model::Checkpointing CheckpointingOptions() const;
  // The working parameter shard, input staging, loss, step barrier and the
  // step's events.
  absl::Status AllocateStepBuffers();
  // The initial master, moments and working shard.
  // Where the host share of the optimizer starts in the flat layout
  // (ZeroContext::host_begin), from offload_optimizer and its ratio.
  int64_t HostShareBegin();
  // auto_offload_ratio: the elements of the optimizer's device share that
  // fit in the free device memory beside the buffers still to come.
  int64_t AutoDeviceElements();
  // The optimizer sub-groups (the one that spans host_begin cut in two) and
  // their runs of equal weight decay.
  void PlanSubGroups();
  absl::Status AllocateOptimizerState();
  absl::Status InitParameters(const model::ParamSource& params);
  // Copies the host share of a full initial master into host_master_.
  absl::Status CopyHostShare(const runtime::Buffer& full_master);
  absl::Status WriteInitialMaster(const model::ParamSource& params,
                                  const runtime::Buffer& host_master);
  absl::Status InitDeviceShards(const runtime::Buffer& host_master);
  absl::Status InitHostShards();
  // The device share's working shard from its fp32 master (a kernel on the
  // compute stream).
  absl::Status CastDeviceShare(absl::string_view label);
  // ImportState without optimizer offload: the state through pinned
  // staging to the device, and the working shard cast from the master.
  absl::Status ImportDeviceState(const TrainingState& state);
  // Step's micro-step `micro` (from 0) of `shape`: its inputs, forward (the
  // loss added to *loss_sum) and backward, which at the boundary speculates
  // where SpeculateThisStep() and ends with the host waiting for the
  // gradients' offload; adds the FWD and BWD times to `stats`.
  // loss_divisor: Transformer::Forward's.
  // Adds the loss the host copy holds (copied, and waited for) to *sum, in
  // a host task named `label`.
  absl::Status AddLoss(const char* label, double* sum);
  // Evaluate's forward passes: this rank's sum of loss terms into *sum and
  // the predicted targets of all ranks into *predicted.
  absl::Status EvaluateBatches(const model::BatchSource& data,
                               const model::BatchShape& shape, int64_t batches,
                               double* sum, int64_t* predicted);
  absl::Status MicroStep(int micro, const model::BatchShape& shape,
                         double loss_divisor, double* loss_sum,
                         StepStats* stats);
  // After the boundary backward: the global sum of squares of the (scaled)
  // gradients, from every rank's pair in the reducer's host buffer.
  absl::StatusOr<double> ReadNormSquared();
  absl::Status Update(double norm_squared, StepStats* stats);
  // DeepSpeed's clip factor for the gradient norm (squared, before
  // unscaling) at the current loss scale; clipping triggers when it is above
  // 1 (Update then divides by it times the loss scale). 1 without clipping.
  double ClipFactor(double norm_squared) const;
  // AdamW's arguments for its step `step` (from 1) with gradients scaled
  // by 1 / `combined`.
  kernels::AdamWArgs AdamArgs(int64_t step, double lr, double combined) const;
  // The AdamW update of the host (offloaded) or device master shards.
  absl::Status HostUpdate(const kernels::AdamWArgs& args);
  // One piece's host AdamW, in place, or (speculative) from its current
  // master and moments into the other ones; both write the new working copy
  // into staging_ (or shard_ with offload_param).
  absl::Status HostAdamPiece(int piece, const kernels::AdamWArgs& args,
                             const runtime::TensorRef& grads, bool speculative);
  // The H2D (or fp32 write-back) of one updated piece; with write_back_,
  // left for IssueWriteBack.
  absl::Status WriteBackPiece(int piece);
  // The H2D of one piece's working copy, from staging_ into shard_, on `s`.
  absl::Status CopyPieceToDevice(runtime::Stream& s, int piece);
  // With write_back_: the updated working copy's H2D, piece by piece, each
  // recording piece_written_, when an update left it pending for this step
  // (write_back_step_). At the start of a step (after its inputs' copy) and
  // before the state is read or replaced.
  absl::Status IssueWriteBack();
  // With host_step_in_forward: the deferred host update of the pieces that
  // overlap the flat range [begin, begin + elements), each then written
  // back on write_back_ (recording piece_written_). The coordinator calls
  // it before a gather waits for the range's writes; the pieces left run
  // before the next backward and before the state is read or replaced.
  // With host_step_delayed: each piece first waits for the last write-back
  // of its staging (write-back-before-host-piece), and its own write-back
  // is left for the start of the step after next.
  absl::Status RunDeferredPieces(int64_t begin, int64_t elements);
  // One deferred piece: its update, in place on its current copies, then
  // its write-back (forward overlap) or left pending (delayed).
  absl::Status RunDeferredPiece(int index);
  // The first piece whose deferred update has not run, or -1.
  int FirstDeferredPiece() const;
  // With host_step_delayed, at a module's end: the next deferred piece when
  // issuing the module kept the host waiting for the device (a full launch
  // queue, a buffer still in use) for at least
  // options_.delayed_piece_after_wait_ns, so the device has work queued to
  // run meanwhile.
  absl::Status RunDelayedPieceIfBlocked();
  // With host_step_delayed, while the forward just issued runs: deferred
  // pieces in order until the loss has been copied (Event::Query).
  absl::Status RunDelayedPiecesUnderForward();
  // Every deferred piece (before backward overwrites the host gradients).
  absl::Status RunAllDeferredPieces();
  // Before the state is read or replaced: every deferred piece, then the
  // pending write-back.
  absl::Status FinishHostStep();
  // The coordinator's release after an applied update: the next gathers
  // wait for `updated_` and, with write_back_, each for its own pieces.
  absl::Status AfterAppliedUpdate();
  // engine_speculation.cc: whether this step speculates; the speculative
  // host update during backward; what the norm makes of it.
  bool SpeculateThisStep() const;
  // Before the boundary backward is issued: the speculation's arguments and
  // piece order; its outcome in `stats` (committed until aborted).
  void BeginSpeculation(StepStats* stats);
  // While backward is issued (a backward module's end): one piece, when
  // one has its gradients on the host already (Event::Query).
  absl::Status SpeculateEarly();
  // Whether bucket `bucket`'s copy to the host is done (issued, and its
  // Event::Query true), or with `wait`, once issued, after waiting for it.
  absl::StatusOr<bool> BucketOnHost(int bucket, bool wait);
  // Marks the pieces whose last bucket's copy is done, waiting for the
  // next bucket first with `wait`.
  absl::Status ArriveSpeculativePieces(bool wait);
  // The piece to update next: of those not done whose gradients are on the
  // host, the one the next forward needs first (the last bucket's, lowest
  // offset); with `wait` and none, it waits for the next bucket first. -1
  // when there is none.
  absl::StatusOr<int> NextSpeculativePiece(bool wait);
  // After backward is issued: the pieces left, each once its bucket's copy
  // is done. With the host step plan's carries_over, only until the norm's copy
  // to the host is done (norm_copied_): the rest wait for validation.
  absl::Status Speculate();
  // One piece: the early-abort test, then its update.
  absl::Status SpeculateNextPiece(int piece);
  // Early abort: whether this rank's running norm after `bucket` already
  // proves the speculation a miss (non-finite, or clipping triggers).
  // Never in timing mode (no values).
  absl::StatusOr<bool> MissProven(int bucket);
  // What validation makes of the speculation: committed, each updated
  // piece's copies become its current ones (HostState::Flip), and pieces
  // left over run in place under the next forward; else a miss.
  absl::Status ResolveSpeculation(bool validated, StepStats* stats);
  absl::Status DeviceUpdate(const kernels::AdamWArgs& args);
  // per_param_fp32_grads: `n` updated fp32 master elements at flat offset
  // `offset` to the device, cast there into the working shard.
  absl::Status WriteBackFp32(const runtime::BufferSlice& master, int64_t offset,
                             int64_t n, const std::string& name);

  // model::ParamProvider
  absl::Status BeginModule(int module, model::Pass pass) override;
  runtime::TensorRef Param(int param) override;
  absl::Status EndModule(int module, model::Pass pass) override;
  absl::StatusOr<runtime::TensorRef> Grad(int param) override;
  absl::Status GradsReady(absl::Span<const int> params) override;

  model::ModelSpec spec_;
  zero::ZeroOptions options_;
  // Where the host share's update runs, resolved once from options_.
  config::HostStepPlan plan_;
  const model::BatchSource* data_;
  runtime::Runtime& rt_;

  // Declared first, destroyed last: the members below use them.
  std::unique_ptr<runtime::Stream> compute_, gather_, reduce_;
  // With the speculative step or host_step_in_forward: the host share's
  // working copy goes back on this stream, piece by piece (piece_written_),
  // under the next forward.
  std::unique_ptr<runtime::Stream> write_back_;
  std::vector<std::unique_ptr<runtime::Event>> piece_written_;
  // The pieces whose working copy IssueWriteBack is to copy.
  std::vector<bool> write_pending_;
  // host_step_in_forward: the last update's arguments and the pieces whose
  // AdamW has not run yet.
  kernels::AdamWArgs deferred_args_;
  std::vector<bool> piece_deferred_;
  // The gradients the deferred pieces read: the reducer's host partition
  // at the update (with host_step_delayed the next backward fills the
  // other one).
  runtime::TensorRef deferred_grads_;
  // The step at whose start the pending write-back is issued: at once
  // (0), or with host_step_delayed the step after the one the pieces ran
  // in (RunDeferredPiece).
  int64_t write_back_step_ = 0;
  int64_t module_begin_ns_ = 0;  // host time of the last BeginModule
  std::unique_ptr<model::Transformer> model_;
  std::unique_ptr<zero::ShardLayout> layout_;
  zero::ZeroContext ctx_;
  std::unique_ptr<zero::ParamCoordinator> coordinator_;
  std::unique_ptr<zero::GradReducer> reducer_;
  zero::LossScaler scaler_ = zero::LossScaler::Static(1);
  std::vector<zero::ParamRange> sub_groups_;
  // Each sub-group's ranges of equal weight decay (weight_decay.h).
  std::vector<std::vector<zero::DecayRun>> decay_runs_;
  // The host share's update in pieces of at most host_step_piece elements,
  // sub-group by sub-group (core/zero/host_pieces.h): the H2D of one
  // piece's working copy overlaps the update of the next.
  std::vector<zero::HostPiece> host_pieces_;

  // Working shard (model dtype): device, or host with offload_param.
  runtime::OwnedBuffer shard_;
  // fp32 master and Adam moments of the device share, elements
  // [0, ctx_.host_begin) of the flat layout...
  runtime::OwnedBuffer master_, exp_avg_, exp_avg_sq_;
  // ... and of the host share (offload_optimizer), with the speculative
  // step's second set (core/zero/host_state.h).
  zero::HostState host_state_;
  // The host staging of the host share's new working shard, for the H2D
  // write-back.
  runtime::OwnedBuffer staging_;
  // per_param_fp32_grads: the device piece the fp32 master comes back into.
  runtime::OwnedBuffer writeback_;
  // Inputs: pinned host staging and the device copy.
  std::optional<model::InputStager> inputs_;
  runtime::OwnedBuffer loss_device_, loss_host_;
  runtime::OwnedBuffer barrier_;  // see Step
  // SumAcrossRanks's buffers for up to kSumSlots values: two halves, this
  // rank's values then the sums.
  static constexpr int64_t kSumSlots = 16;
  runtime::OwnedBuffer sum_device_, sum_host_;
  std::unique_ptr<runtime::Event> loss_copied_, updated_;
  // With the host step plan's carries_over: the norm's copy to the host is
  // done.
  std::unique_ptr<runtime::Event> norm_copied_;

  int dp_size_ = 1;
  int dp_rank_ = 0;
  int64_t step_ = 0;       // optimizer steps taken (including skipped)
  int64_t adam_step_ = 0;  // steps applied (AdamW's t)
  // speculative_step auto: no speculation before this step; the pause after
  // the next failed validation (doubles with each one).
  int64_t speculate_from_ = 0;
  int64_t speculation_pause_ = 1;
  // Whether this step's speculation aborted on a non-finite running norm.
  bool miss_non_finite_ = false;
  // The boundary backward's speculation in progress (BeginSpeculation).
  struct SpeculationPass {
    bool active = false;      // pieces are left and none proved a miss
    kernels::AdamWArgs args;  // the step's, unclipped
    std::vector<int> order;   // host_pieces_ in their buckets' order
    size_t arrived = 0;       // order[0, arrived) have their gradients here
    std::vector<bool> done;   // by host piece: updated speculatively
    int left = 0;             // pieces not done
    StepStats* stats = nullptr;
  };
  SpeculationPass speculation_;
};

}  // namespace engine
}  // namespace zero3

#endif  // ZERO3_CORE_ENGINE_ENGINE_H_
