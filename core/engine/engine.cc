// Copyright 2026 The zero3 Authors.
//
// engine.cc: the engine's construction (Create, Init: streams, the
// tensor-parallel and data-parallel groups, the model, the shard layout and
// the buffers of the step) and its model::ParamProvider hooks. The optimizer
// state and the initial parameters are in engine_setup.cc, the step in
// engine_step.cc, the updates in engine_update.cc, the training state in
// engine_state.cc; the host share of the optimizer is core/zero's
// HostOptimizer.

#include "core/engine/engine.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/kernels/dtype.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace engine {

using runtime::AllocateDevice;
using runtime::AllocateHost;
using runtime::DType;
using runtime::HostMemoryKind;
using runtime::PinnedIf;
using runtime::TensorRef;
using zero::Sync;

Engine::Engine(const model::ModelSpec& spec, const zero::ZeroOptions& options,
               const model::BatchSource* data, runtime::Runtime& rt)
    : spec_(spec), options_(options), data_(data), rt_(rt) {}

Engine::~Engine() {
  // The members free buffers that queued work may still use.
  rt_.device().Synchronize().IgnoreError();
}

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(
    const model::ModelSpec& spec, const zero::ZeroOptions& options,
    const model::BatchSource* data, runtime::Runtime& rt,
    const model::ParamSource* params) {
  if (data == nullptr) return absl::InvalidArgumentError("no data source");
  if (data->min_vocab() > spec.vocab_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the data (", data->description(), ") needs a vocabulary of ",
        data->min_vocab(), " tokens; model ", spec.name(), " has ",
        spec.vocab_size()));
  }
  if (options.accumulation < 1) {
    return absl::InvalidArgumentError("gradient accumulation must be >= 1");
  }
  std::unique_ptr<Engine> e(new Engine(spec, options, data, rt));
  const model::SeededInit seeded(spec, options.seed);
  ZR_RETURN_IF_ERROR(e->Init(params != nullptr ? *params : seeded));
  return e;
}

absl::Status Engine::Init(const model::ParamSource& params) {
  model::TensorParallel tensor_parallel;
  runtime::Communicator* dp = nullptr;
  ZR_RETURN_IF_ERROR(CreateStreamsAndGroups(&tensor_parallel, &dp));
  ZR_ASSIGN_OR_RETURN(
      model_, model::Transformer::Create(
                  spec_, options_.dtype, options_.micro_batch, options_.seq,
                  rt_, tensor_parallel, CheckpointingOptions()));
  std::vector<int64_t> numels;
  for (const model::ParamInfo& p : model_->params()) {
    numels.push_back(p.numel());
  }
  layout_ = std::make_unique<zero::ShardLayout>(numels, dp_size_, dp_rank_);

  ctx_.rt = &rt_;
  ctx_.dp = dp;
  ctx_.compute = compute_.get();
  ctx_.gather = options_.overlap_comm ? gather_.get() : compute_.get();
  ctx_.reduce = options_.overlap_comm ? reduce_.get() : compute_.get();
  ctx_.layout = layout_.get();
  ctx_.options = &options_;
  ctx_.dtype = options_.dtype;

  scaler_ = zero::LossScaler::ForOptions(options_);
  ZR_RETURN_IF_ERROR(AllocateStepBuffers());

  ZR_ASSIGN_OR_RETURN(
      coordinator_,
      zero::ParamCoordinator::Create(
          ctx_, model_->modules(),
          TensorRef::Of(shard_, options_.dtype, 0,
                        zero::ParamsOnNvme(options_) ? 0 : layout_->total())));
  ctx_.streamed_begin = HostShareBegin();
  ZR_ASSIGN_OR_RETURN(ctx_.host_begin, DeviceStepEnd(ctx_.streamed_begin));
  PlanSubGroups();
  ZR_RETURN_IF_ERROR(AllocateOptimizerState());
  ZR_ASSIGN_OR_RETURN(reducer_,
                      zero::GradReducer::Create(ctx_, model_->modules()));
  ZR_ASSIGN_OR_RETURN(
      host_, zero::HostOptimizer::Create(ctx_, *reducer_, shard_, sub_groups_,
                                         decay_runs_));
  if (host_->nvme_params() != nullptr) {
    coordinator_->ReadFrom(host_->nvme_params());
  }
  ZR_ASSIGN_OR_RETURN(streamed_,
                      zero::StreamedStep::Create(ctx_, *reducer_, shard_,
                                                 sub_groups_, decay_runs_));
  if (host_->plan().in_forward && host_->elements() > 0) {
    coordinator_->SetBeforeGather([this](int64_t begin, int64_t elements) {
      if (!options_.syncs.enabled(zero::Sync::kHostStepBeforeGather)) {
        return absl::OkStatus();
      }
      return host_->RunDeferredPieces(begin, elements);
    });
  }
  return InitParameters(params);
}

absl::Status Engine::CreateStreamsAndGroups(model::TensorParallel* tp_out,
                                            runtime::Communicator** dp_out) {
  runtime::Device& dev = rt_.device();
  ZR_ASSIGN_OR_RETURN(compute_, dev.CreateStream("compute"));
  if (options_.overlap_comm) {
    ZR_ASSIGN_OR_RETURN(gather_, dev.CreateStream("all-gather"));
    ZR_ASSIGN_OR_RETURN(reduce_, dev.CreateStream("reduce"));
  }
  // Ranks are laid out tensor-parallel-major: the tp ranks of one
  // data-parallel rank are consecutive (one node's GPUs share its fast links).
  const int tp = options_.tensor_parallel;
  if (tp < 1 || rt_.world_size() % tp != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor-parallel degree ", tp, " must divide the number of ranks (",
        rt_.world_size(), ")"));
  }
  if (tp > 1 && rt_.computes_values()) {
    return absl::InvalidArgumentError(
        "tensor parallelism is modelled for timing studies only: use the "
        "simulator in timing mode (zero3 whatif, or train --mode timing)");
  }
  dp_size_ = rt_.world_size() / tp;
  dp_rank_ = rt_.rank() / tp;
  *dp_out = &rt_.world();
  tp_out->size = tp;
  if (tp > 1) {
    std::vector<int> tp_group, dp_group;
    for (int i = 0; i < tp; ++i) tp_group.push_back(dp_rank_ * tp + i);
    for (int j = 0; j < dp_size_; ++j) {
      dp_group.push_back(j * tp + rt_.rank() % tp);
    }
    ZR_ASSIGN_OR_RETURN(tp_out->comm, rt_.Group(tp_group));
    ZR_ASSIGN_OR_RETURN(*dp_out, rt_.Group(dp_group));
  }
  return absl::OkStatus();
}

model::Checkpointing Engine::CheckpointingOptions() const {
  model::Checkpointing checkpointing;
  checkpointing.every = options_.checkpoint_every;
  checkpointing.mlp_only = options_.checkpoint_mlp_only;
  checkpointing.to_host = options_.checkpoint_to_host;
  checkpointing.lm_head_chunk_tokens = options_.lm_head_chunk_tokens;
  const zero::SyncPoints& s = options_.syncs;
  checkpointing.syncs.offload_after_write =
      s.enabled(Sync::kCheckpointOffloadAfterWrite);
  checkpointing.syncs.slot_reuse = s.enabled(Sync::kCheckpointSlotReuse);
  checkpointing.syncs.restore_slot_free =
      s.enabled(Sync::kCheckpointRestoreSlotFree);
  checkpointing.syncs.restore_before_recompute =
      s.enabled(Sync::kCheckpointRestoreBeforeRecompute);
  return checkpointing;
}

absl::Status Engine::AllocateStepBuffers() {
  runtime::Device& dev = rt_.device();
  const int64_t total = std::max<int64_t>(1, layout_->total());
  const int64_t esize = kernels::DTypeSize(options_.dtype);
  if (zero::ParamsOnNvme(options_)) {
    // The shard is the NVMe parameters' file (zero::NvmeParams, the host
    // optimizer's): this buffer only stands in for it.
    ZR_ASSIGN_OR_RETURN(shard_,
                        AllocateHost(rt_, esize, HostMemoryKind::kPageable,
                                     "parameter shard (on NVMe)"));
  } else if (options_.offload_param) {
    ZR_ASSIGN_OR_RETURN(
        shard_,
        AllocateHost(rt_, total * esize, PinnedIf(options_.param_pin_memory),
                     "host parameter shard"));
  } else {
    ZR_ASSIGN_OR_RETURN(shard_,
                        AllocateDevice(dev, total * esize, "parameter shard"));
  }
  ZR_ASSIGN_OR_RETURN(inputs_, model::InputStager::Create(
                                   rt_, model_->tokens(), "input staging",
                                   "inputs", "inputs H2D"));
  ZR_ASSIGN_OR_RETURN(loss_device_, AllocateDevice(dev, 4, "loss"));
  ZR_ASSIGN_OR_RETURN(barrier_, AllocateDevice(dev, 8, "step barrier"));
  ZR_ASSIGN_OR_RETURN(sum_device_,
                      AllocateDevice(dev, 2 * 4 * kSumSlots, "sums"));
  ZR_ASSIGN_OR_RETURN(
      sum_host_, AllocateHost(rt_, 2 * 4 * kSumSlots, HostMemoryKind::kPinned,
                              "sums (host)"));
  ZR_RETURN_IF_ERROR(
      ctx_.gather->Memset(barrier_.All(), 0, "zero step barrier"));
  ZR_ASSIGN_OR_RETURN(
      loss_host_, AllocateHost(rt_, 4, HostMemoryKind::kPinned, "loss (host)"));
  ZR_ASSIGN_OR_RETURN(loss_copied_, dev.CreateEvent());
  ZR_ASSIGN_OR_RETURN(updated_, dev.CreateEvent());
  return absl::OkStatus();
}

// ParamProvider -------------------------------------------------------------

absl::Status Engine::BeginModule(int module, model::Pass pass) {
  module_begin_ns_ = rt_.NowNanos();
  ZR_RETURN_IF_ERROR(coordinator_->BeginModule(module, pass));
  // After this module's gathers, so that they do not queue behind the
  // previous module's reduce-scatters on the communicator.
  ZR_RETURN_IF_ERROR(reducer_->IssueReady());
  if (pass == model::Pass::kBackward) {
    ZR_RETURN_IF_ERROR(reducer_->BeginModule(module));
  }
  return absl::OkStatus();
}

TensorRef Engine::Param(int param) { return coordinator_->Param(param); }

absl::Status Engine::EndModule(int module, model::Pass pass) {
  ZR_RETURN_IF_ERROR(coordinator_->EndModule(module, pass));
  ZR_RETURN_IF_ERROR(host_->RunDelayedPieceIfBlocked(module_begin_ns_));
  if (pass == model::Pass::kBackward) {
    ZR_RETURN_IF_ERROR(streamed_->Speculate());
    return host_->SpeculateEarly();
  }
  return absl::OkStatus();
}

absl::StatusOr<TensorRef> Engine::Grad(int param) {
  return reducer_->Grad(param);
}

absl::Status Engine::GradsReady(absl::Span<const int> params) {
  return reducer_->GradsReady(params);
}

model::DataPosition Engine::data_position() const {
  const model::BatchShape shape{options_.micro_batch, options_.seq,
                                options_.accumulation, dp_size_};
  return data_->PositionAt(shape, step_);
}

}  // namespace engine
}  // namespace zero3
