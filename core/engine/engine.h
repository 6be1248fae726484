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
// on the fp32 master shards - on the device, and with offload_optimizer on
// the host (core/zero/host_optimizer.h; with offload_optimizer.ratio below
// 1 the first parameters' share on the device while the host updates the
// rest) - and the new working shards. Where the host share's AdamW runs is
// the host optimizer's plan: at the step's end, during the boundary
// backward (the speculative step, offload_optimizer.super_offload), under
// the next forward, or beside the next step (zero3.host_step_overlap); the
// engine calls it at the step's named points.
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
#include "core/engine/stats.h"
#include "core/engine/training_state.h"
#include "core/kernels/op_args.h"
#include "core/model/data.h"
#include "core/model/inputs.h"
#include "core/model/model_spec.pb.h"
#include "core/model/param_source.h"
#include "core/model/transformer.h"
#include "core/runtime/owned_buffer.h"
#include "core/runtime/runtime.h"
#include "core/zero/grad_reducer.h"
#include "core/zero/host_optimizer.h"
#include "core/zero/loss_scaler.h"
#include "core/zero/options.h"
#include "core/zero/param_coordinator.h"
#include "core/zero/shard_layout.h"
#include "core/zero/streamed_step.h"
#include "core/zero/weight_decay.h"

namespace zero3 {
namespace engine {

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

  // Bytes of this rank's swap file with the optimizer state on NVMe
  // (offload_optimizer.device "nvme"); 0 without.
  int64_t nvme_bytes() const {
    return host_->nvme() != nullptr ? host_->nvme()->file_bytes() : 0;
  }
  // Bytes of this rank's swap file with the parameters on NVMe
  // (offload_param.device "nvme"); 0 without.
  int64_t param_nvme_bytes() const {
    return host_->nvme_params() != nullptr ? host_->nvme_params()->file_bytes()
                                           : 0;
  }
  // The optimizer state's swap file's path ("" without).
  std::string nvme_path() const {
    return host_->nvme() != nullptr ? host_->nvme()->path() : std::string();
  }
  // Whether the swap files have O_DIRECT (true without).
  bool nvme_direct() const {
    return (host_->nvme() == nullptr || host_->nvme()->direct()) &&
           (host_->nvme_params() == nullptr || host_->nvme_params()->direct());
  }

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
  // Where the host share of the optimizer starts in the flat layout
  // (ZeroContext::host_begin), from offload_optimizer and its ratio.
  int64_t HostShareBegin();
  // Where the host share's elements updated on the host begin
  // (ZeroContext::host_begin), past those of the offloaded state that
  // `offload_begin` starts whose update runs on the device
  // (options.device_step_share of them, up to a parameter boundary).
  absl::StatusOr<int64_t> DeviceStepEnd(int64_t offload_begin) const;
  // auto_offload_ratio: the elements of the optimizer's device share that
  // fit in the free device memory beside the buffers still to come.
  int64_t AutoDeviceElements();
  // The optimizer sub-groups (cut where the streamed and the host share
  // begin) and
  // their runs of equal weight decay.
  void PlanSubGroups();
  absl::Status AllocateOptimizerState();
  absl::Status InitParameters(const model::ParamSource& params);
  // The initial fp32 master of the flat elements [0, host_master's size)
  // into `host_master`, in a host task (FillMaster).
  absl::Status WriteInitialMaster(const model::ParamSource& params,
                                  const runtime::Buffer& host_master);
  // The initial fp32 master of the flat elements [begin, begin + n) into
  // `out` (out[0] is element `begin`), on the optimizer's threads; call
  // from a host task that declares `out`.
  absl::Status FillMaster(const model::ParamSource& params, int64_t begin,
                          int64_t n, float* out) const;
  absl::Status InitDeviceShards(const runtime::Buffer& host_master);
  // The device share's working shard from its fp32 master (a kernel on the
  // compute stream).
  absl::Status CastDeviceShare(absl::string_view label);
  // ImportState's device share: the state through pinned
  // staging to the device, and the working shard cast from the master.
  absl::Status ImportDeviceState(const TrainingState& state);
  // Adds the loss the host copy holds (copied, and waited for) to *sum, in
  // a host task named `label`.
  absl::Status AddLoss(const char* label, double* sum);
  // Evaluate's forward passes: this rank's sum of loss terms into *sum and
  // the predicted targets of all ranks into *predicted.
  absl::Status EvaluateBatches(const model::BatchSource& data,
                               const model::BatchShape& shape, int64_t batches,
                               double* sum, int64_t* predicted);
  // Step's micro-step `micro` (from 0) of `shape`: its inputs, forward (the
  // loss added to *loss_sum) and backward, which at the boundary speculates
  // where the host optimizer says so and ends with the host waiting for the
  // gradients' offload; adds the FWD and BWD times to `stats`.
  // loss_divisor: Transformer::Forward's.
  absl::Status MicroStep(int micro, const model::BatchShape& shape,
                         double loss_divisor, double* loss_sum,
                         StepStats* stats);
  // After the boundary backward: the global sum of squares of the (scaled)
  // gradients, from every rank's pair in the reducer's host buffer.
  absl::StatusOr<double> ReadNormSquared();
  absl::Status Update(double norm_squared, StepStats* stats);
  // AdamW's arguments for its step `step` (from 1) with gradients scaled
  // by 1 / `combined`.
  kernels::AdamWArgs AdamArgs(int64_t step, double lr, double combined) const;
  // The clip factor (zero::ClipFactor) at the current loss scale.
  double ClipFactor(double norm_squared) const;
  // The coordinator's release after an applied update: the next gathers
  // wait for `updated_` and for the host share's pieces' write-backs.
  absl::Status AfterAppliedUpdate();
  // The device share's update and the streamed one's (which commits its
  // speculation where `validated`).
  absl::Status DeviceUpdate(const kernels::AdamWArgs& args, bool validated);
  // The step's speculation outcome (zero::HostOptimizer::outcome) into
  // `stats`.
  void TakeOutcome(StepStats* stats) const;
  // The steps taken so far become `steps` (the host optimizer keeps the
  // count too).
  void SetSteps(int64_t steps);

  // model::ParamProvider
  absl::Status BeginModule(int module, model::Pass pass) override;
  runtime::TensorRef Param(int param) override;
  absl::Status EndModule(int module, model::Pass pass) override;
  absl::StatusOr<runtime::TensorRef> Grad(int param) override;
  absl::Status GradsReady(absl::Span<const int> params) override;

  model::ModelSpec spec_;
  zero::ZeroOptions options_;
  const model::BatchSource* data_;
  runtime::Runtime& rt_;

  // Declared first, destroyed last: the members below use them.
  std::unique_ptr<runtime::Stream> compute_, gather_, reduce_;
  int64_t module_begin_ns_ = 0;  // host time of the last BeginModule
  std::unique_ptr<model::Transformer> model_;
  std::unique_ptr<zero::ShardLayout> layout_;
  zero::ZeroContext ctx_;
  std::unique_ptr<zero::ParamCoordinator> coordinator_;
  std::unique_ptr<zero::GradReducer> reducer_;
  // The host share of the optimizer (offload_optimizer; empty without).
  std::unique_ptr<zero::HostOptimizer> host_;
  // The offloaded state updated on the device (zero3.offloaded_step): the
  // elements [ctx_.streamed_begin, ctx_.host_begin); empty without.
  std::unique_ptr<zero::StreamedStep> streamed_;
  zero::LossScaler scaler_ = zero::LossScaler::Static(1);
  std::vector<zero::ParamRange> sub_groups_;
  // Each sub-group's ranges of equal weight decay (weight_decay.h).
  std::vector<std::vector<zero::DecayRun>> decay_runs_;

  // Working shard (model dtype): device, or host with offload_param (a
  // stand-in with the shard on NVMe).
  runtime::OwnedBuffer shard_;
  // fp32 master and Adam moments of the device share, elements
  // [0, ctx_.streamed_begin) of the flat layout (the streamed ones':
  // streamed_; the host share's: host_).
  runtime::OwnedBuffer master_, exp_avg_, exp_avg_sq_;
  // Inputs: pinned host staging and the device copy.
  std::optional<model::InputStager> inputs_;
  runtime::OwnedBuffer loss_device_, loss_host_;
  runtime::OwnedBuffer barrier_;  // see Step
  // SumAcrossRanks's buffers for up to kSumSlots values: two halves, this
  // rank's values then the sums.
  static constexpr int64_t kSumSlots = 16;
  runtime::OwnedBuffer sum_device_, sum_host_;
  std::unique_ptr<runtime::Event> loss_copied_, updated_;

  int dp_size_ = 1;
  int dp_rank_ = 0;
  int64_t step_ = 0;       // optimizer steps taken (including skipped)
  int64_t adam_step_ = 0;  // steps applied (AdamW's t)
};

}  // namespace engine
}  // namespace zero3

#endif  // ZERO3_CORE_ENGINE_ENGINE_H_
