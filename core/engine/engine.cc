// Copyright 2026 The zero3 Authors.

#include "core/engine/engine.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "core/kernels/dtype.h"
#include "core/kernels/reference.h"
#include "core/util/check.h"
#include "core/util/parallel_for.h"
#include "core/util/status_macros.h"
#include "core/zero/host_adam.h"

namespace zero3 {
namespace engine {

using runtime::AllocateDevice;
using runtime::AllocateHost;
using runtime::Buffer;
using runtime::DType;
using runtime::HostMemoryKind;
using runtime::HostTask;
using runtime::KernelCall;
using runtime::TensorRef;
using zero::Sync;
namespace ops = runtime::ops;

namespace {

// The threads a host task of the optimizer declares: the configured count,
// or all of the rank's cores (the simulator caps this at the rank's share of
// the node).
int HostTaskThreads(const zero::ZeroOptions& options) {
  return options.optimizer_threads > 0 ? options.optimizer_threads : 1 << 16;
}

HostMemoryKind PinnedIf(bool pinned) {
  return pinned ? HostMemoryKind::kPinned : HostMemoryKind::kPageable;
}

}  // namespace

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
  runtime::Device& dev = rt_.device();
  const DType dtype = options_.dtype;
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
  runtime::Communicator* dp = &rt_.world();
  model::TensorParallel tensor_parallel;
  tensor_parallel.size = tp;
  if (tp > 1) {
    std::vector<int> tp_group, dp_group;
    for (int i = 0; i < tp; ++i) tp_group.push_back(dp_rank_ * tp + i);
    for (int j = 0; j < dp_size_; ++j) {
      dp_group.push_back(j * tp + rt_.rank() % tp);
    }
    ZR_ASSIGN_OR_RETURN(tensor_parallel.comm, rt_.Group(tp_group));
    ZR_ASSIGN_OR_RETURN(dp, rt_.Group(dp_group));
  }
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
  ZR_ASSIGN_OR_RETURN(
      model_, model::Transformer::Create(spec_, dtype, options_.micro_batch,
                                         options_.seq, rt_, tensor_parallel,
                                         checkpointing));
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
  ctx_.dtype = dtype;

  scaler_ = zero::LossScaler::ForOptions(options_);

  const int64_t total = std::max<int64_t>(1, layout_->total());
  const int64_t esize = kernels::DTypeSize(dtype);
  if (options_.offload_param) {
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
  ZR_RETURN_IF_ERROR(
      ctx_.gather->Memset(barrier_.All(), 0, "zero step barrier"));
  ZR_ASSIGN_OR_RETURN(
      loss_host_, AllocateHost(rt_, 4, HostMemoryKind::kPinned, "loss (host)"));
  ZR_ASSIGN_OR_RETURN(loss_copied_, dev.CreateEvent());
  ZR_ASSIGN_OR_RETURN(updated_, dev.CreateEvent());

  ZR_ASSIGN_OR_RETURN(coordinator_,
                      zero::ParamCoordinator::Create(
                          ctx_, model_->modules(),
                          TensorRef::Of(shard_, dtype, 0, layout_->total())));
  ctx_.host_begin = HostShareBegin();
  PlanSubGroups();
  ZR_RETURN_IF_ERROR(AllocateOptimizerState());
  ZR_ASSIGN_OR_RETURN(reducer_,
                      zero::GradReducer::Create(ctx_, model_->modules()));
  PlanHostPieces();
  if (zero::SpeculationApplies(options_) && ctx_.host_elements() > 0) {
    ZR_ASSIGN_OR_RETURN(write_back_, dev.CreateStream("write-back"));
    for (size_t i = 0; i < host_pieces_.size(); ++i) {
      ZR_ASSIGN_OR_RETURN(piece_written_.emplace_back(), dev.CreateEvent());
    }
  }
  return InitParameters(params);
}

int64_t Engine::HostShareBegin() {
  const int64_t total = layout_->total();
  if (!options_.offload_optimizer) return total;
  if (options_.offload_param) return 0;
  // The device share's elements: the configured fraction, or (auto) what
  // fits in the free device memory beside the buffers still to come.
  const int64_t device_elements =
      options_.auto_offload_ratio
          ? AutoDeviceElements()
          : std::llround((1 - options_.offload_ratio) * total);
  // The first parameter boundary that keeps the device share within it.
  for (int p = 0; p < layout_->num_params(); ++p) {
    const zero::ParamShard& s = layout_->param(p);
    if (s.offset + s.partition > device_elements) return s.offset;
  }
  return total;
}

int64_t Engine::AutoDeviceElements() {
  runtime::Device& dev = rt_.device();
  const int64_t esize = kernels::DTypeSize(options_.dtype);
  // Still to come: the gradient reducer's slots and buckets, bounded by two
  // slots of the largest module's gradients plus the buckets, its fp32
  // partition when it holds all elements, and a margin
  // of 5% of the device for allocator slack and what the runtime keeps.
  int64_t largest_module = 0;
  for (const model::ModuleInfo& m : model_->modules()) {
    int64_t elements = 0;
    for (int p : m.params) elements += layout_->param(p).padded;
    largest_module = std::max(largest_module, elements);
  }
  const int64_t bucket =
      std::min(options_.reduce_bucket_size, layout_->total());
  const bool straight =
      zero::GradReducer::StraightToHost(options_, options_.dtype);
  const int64_t reserve =
      2 * largest_module * esize + bucket * (dp_size_ + 1) * esize +
      (straight ? 0 : layout_->total() * 4) + dev.total_memory_bytes() / 20;
  // Per element: master and moments, and the fp32 gradient partition where
  // the reducer keeps it for the device share only.
  return std::max<int64_t>(
      0, (dev.free_memory_bytes() - reserve) / (straight ? 16 : 12));
}

void Engine::PlanSubGroups() {
  // A sub-group across the host share's start becomes two.
  std::vector<zero::ParamRange> groups;
  const int64_t hb = ctx_.host_begin;
  for (const zero::ParamRange& g :
       layout_->SubGroups(options_.sub_group_size)) {
    if (g.offset >= hb || g.offset + g.elements <= hb) {
      groups.push_back(g);
      continue;
    }
    int p = g.first;
    while (layout_->param(p).offset < hb) ++p;
    groups.push_back(layout_->Range(g.first, p - 1));
    groups.push_back(layout_->Range(p, g.last));
  }
  sub_groups_ = std::move(groups);
  std::vector<std::string> names;
  for (const model::ParamInfo& p : model_->params()) names.push_back(p.name);
  const std::vector<float> decays = zero::ParamWeightDecays(
      names, options_.weight_decay, options_.exclude_bias_and_norm_from_decay);
  for (const zero::ParamRange& g : sub_groups_) {
    decay_runs_.push_back(zero::DecayRuns(*layout_, decays, g));
  }
}

absl::Status Engine::AllocateOptimizerState() {
  runtime::Device& dev = rt_.device();
  const int64_t device_n = ctx_.host_begin;
  const int64_t host_n = ctx_.host_elements();
  if (device_n > 0) {
    ZR_ASSIGN_OR_RETURN(master_,
                        AllocateDevice(dev, device_n * 4, "fp32 master"));
    ZR_ASSIGN_OR_RETURN(exp_avg_,
                        AllocateDevice(dev, device_n * 4, "adam exp_avg"));
    ZR_ASSIGN_OR_RETURN(exp_avg_sq_,
                        AllocateDevice(dev, device_n * 4, "adam exp_avg_sq"));
  }
  if (host_n == 0) return absl::OkStatus();
  // As in DeepSpeed, the moments are plain host memory: only buffers that
  // copies touch need pinning, the master too where it goes back to the
  // device in fp32 (DeepSpeed's path).
  const HostMemoryKind pageable = HostMemoryKind::kPageable;
  // With offload_param the working shard is host memory that the update
  // writes directly; there is nothing to send back.
  const bool fp32_back =
      options_.per_param_fp32_grads && !options_.offload_param;
  ZR_ASSIGN_OR_RETURN(
      host_master_,
      AllocateHost(
          rt_, host_n * 4,
          fp32_back ? PinnedIf(options_.optimizer_pin_memory) : pageable,
          "fp32 master (host)"));
  if (fp32_back) {
    const int64_t piece = std::min(host_n, options_.host_step_piece);
    ZR_ASSIGN_OR_RETURN(writeback_,
                        AllocateDevice(dev, std::max<int64_t>(1, piece) * 4,
                                       "fp32 parameter write-back"));
  }
  ZR_ASSIGN_OR_RETURN(host_exp_avg_, AllocateHost(rt_, host_n * 4, pageable,
                                                  "adam exp_avg (host)"));
  ZR_ASSIGN_OR_RETURN(host_exp_avg_sq_, AllocateHost(rt_, host_n * 4, pageable,
                                                     "adam exp_avg_sq (host)"));
  if (zero::SpeculationApplies(options_)) {
    // The speculative step's second copy (see next_master_): the copies
    // swap, so each is "fp32 master (host)" in turn.
    ZR_ASSIGN_OR_RETURN(next_master_, AllocateHost(rt_, host_n * 4, pageable,
                                                   "fp32 master (host)"));
    ZR_ASSIGN_OR_RETURN(next_exp_avg_, AllocateHost(rt_, host_n * 4, pageable,
                                                    "adam exp_avg (host)"));
    ZR_ASSIGN_OR_RETURN(
        next_exp_avg_sq_,
        AllocateHost(rt_, host_n * 4, pageable, "adam exp_avg_sq (host)"));
  }
  if (options_.offload_param) return absl::OkStatus();
  ZR_ASSIGN_OR_RETURN(
      staging_, AllocateHost(rt_, host_n * kernels::DTypeSize(options_.dtype),
                             PinnedIf(options_.optimizer_pin_memory),
                             "parameter write-back staging"));
  return absl::OkStatus();
}

absl::Status Engine::InitParameters(const model::ParamSource& params) {
  // The initial fp32 master: in place on the host when all of the optimizer
  // is there, else in pinned staging whose device share goes to the device
  // and whose host share is copied to the host master.
  const int64_t hb = ctx_.host_begin;
  runtime::OwnedBuffer temp;
  if (hb > 0) {
    ZR_ASSIGN_OR_RETURN(
        temp, AllocateHost(rt_, std::max<int64_t>(1, layout_->total()) * 4,
                           HostMemoryKind::kPinned, "initial master staging"));
  }
  ZR_RETURN_IF_ERROR(WriteInitialMaster(params, hb > 0 ? temp : host_master_));
  absl::Status enqueued = hb > 0 ? InitDeviceShards(temp) : absl::OkStatus();
  if (enqueued.ok() && ctx_.host_elements() > 0) {
    if (hb > 0) enqueued = CopyHostShare(temp);
    if (enqueued.ok()) enqueued = InitHostShards();
  }
  // What was enqueued reads `temp`: done before it is freed, on every path.
  ZR_RETURN_IF_ERROR(compute_->Synchronize());
  ZR_RETURN_IF_ERROR(enqueued);
  return temp.Free();
}

absl::Status Engine::CopyHostShare(const Buffer& full_master) {
  const int64_t bytes = ctx_.host_elements() * 4;
  HostTask copy;
  copy.label = "host share of the initial master";
  copy.reads = {full_master.Slice(ctx_.host_begin * 4, bytes)};
  copy.writes = {host_master_.All()};
  copy.memory_bytes = 2 * bytes;
  copy.run = [&]() -> absl::Status {
    std::memcpy(host_master_.data(), copy.reads[0].data(), bytes);
    return absl::OkStatus();
  };
  return rt_.RunHostTask(copy);
}

absl::Status Engine::WriteInitialMaster(const model::ParamSource& params,
                                        const Buffer& host_master) {
  // This rank's elements of every parameter, rounded through the working
  // dtype as DeepSpeed's master starts from the rounded low-precision
  // values; padding is zero. The source is asked for this rank's elements
  // only, in pieces, so a checkpoint is read in small host buffers.
  constexpr int64_t kPiece = int64_t{1} << 16;
  const DType dtype = options_.dtype;
  HostTask init;
  init.label = "initialize parameters";
  init.writes = {host_master.All()};
  init.memory_bytes = layout_->total() * 4;
  init.threads = HostTaskThreads(options_);
  init.run = [&]() -> absl::Status {
    float* m = static_cast<float*>(host_master.data());
    const int threads = zero::OptimizerThreads(options_.optimizer_threads);
    absl::Mutex mu;
    absl::Status first_error;
    for (const model::ParamInfo& p : model_->params()) {
      const zero::ParamShard& s = layout_->param(p.id);
      const int64_t valid = layout_->ValidElements(p.id);
      const int64_t first = dp_rank_ * s.partition;
      // Each piece is filled independently, so threads split the work
      // without changing a value.
      ParallelFor(
          s.partition, threads,
          [&](int64_t begin, int64_t end) {
            for (int64_t b = begin; b < end; b += kPiece) {
              const int64_t e = std::min(end, b + kPiece);
              float* out = m + s.offset + b;
              const int64_t n = std::max<int64_t>(0, std::min(e, valid) - b);
              const absl::Status st =
                  n > 0 ? params.Fill(p, first + b, n, out) : absl::OkStatus();
              if (!st.ok()) {
                absl::MutexLock lock(&mu);
                if (first_error.ok()) first_error = st;
                return;
              }
              std::fill(out + n, out + (e - b), 0.0f);
              if (dtype == DType::kF32) continue;
              for (int64_t i = 0; i < n; ++i) {
                kernels::StoreFromFloat(dtype, out[i], &out[i], 0);
                out[i] = kernels::LoadAsFloat(dtype, &out[i], 0);
              }
            }
          },
          kPiece);
      if (!first_error.ok()) return first_error;
    }
    return absl::OkStatus();
  };
  return rt_.RunHostTask(init);
}

absl::Status Engine::InitDeviceShards(const Buffer& host_master) {
  // Moments start at zero: host buffers are zero-filled; device ones are
  // filled here.
  const int64_t total = ctx_.host_begin;
  ZR_RETURN_IF_ERROR(compute_->Copy(
      master_.All(), host_master.Slice(0, total * 4), "master H2D"));
  for (const runtime::OwnedBuffer* b : {&exp_avg_, &exp_avg_sq_}) {
    ZR_RETURN_IF_ERROR(compute_->Memset(b->All(), 0, "zero adam moments"));
  }
  return CastDeviceShare("initial working shard");
}

absl::Status Engine::CastDeviceShare(absl::string_view label) {
  const int64_t n = ctx_.host_begin;
  return compute_->Launch(
      KernelCall(ops::Cast::Of(TensorRef::Of(master_, DType::kF32, 0, n),
                               TensorRef::Of(shard_, options_.dtype, 0, n)),
                 std::string(label)));
}

absl::Status Engine::InitHostShards() {
  const DType dtype = options_.dtype;
  const int64_t esize = kernels::DTypeSize(dtype);
  const int64_t n = ctx_.host_elements();
  const Buffer& target = options_.offload_param ? shard_ : staging_;
  HostTask cast;
  cast.label = "initial working shard";
  cast.reads = {host_master_.All()};
  cast.writes = {target.Slice(0, n * esize)};
  cast.memory_bytes = n * (4 + esize);
  cast.threads = HostTaskThreads(options_);
  cast.run = [&]() -> absl::Status {
    zero::HostCastFromFloat(static_cast<const float*>(host_master_.data()),
                            dtype, target.data(), n,
                            zero::OptimizerThreads(options_.optimizer_threads));
    return absl::OkStatus();
  };
  ZR_RETURN_IF_ERROR(rt_.RunHostTask(cast));
  if (options_.offload_param) return absl::OkStatus();
  ZR_RETURN_IF_ERROR(
      compute_->Copy(shard_.Slice(ctx_.host_begin * esize, n * esize),
                     staging_.All(), "initial shard H2D"));
  return compute_->Synchronize();
}

// ParamProvider -------------------------------------------------------------

absl::Status Engine::BeginModule(int module, model::Pass pass) {
  ZR_RETURN_IF_ERROR(coordinator_->BeginModule(module, pass));
  if (pass == model::Pass::kBackward) {
    ZR_RETURN_IF_ERROR(reducer_->BeginModule(module));
  }
  return absl::OkStatus();
}

TensorRef Engine::Param(int param) { return coordinator_->Param(param); }

absl::Status Engine::EndModule(int module, model::Pass pass) {
  return coordinator_->EndModule(module, pass);
}

absl::StatusOr<TensorRef> Engine::Grad(int param) {
  return reducer_->Grad(param);
}

absl::Status Engine::GradsReady(absl::Span<const int> params) {
  return reducer_->GradsReady(params);
}

// Step ----------------------------------------------------------------------

absl::StatusOr<StepStats> Engine::Step() {
  StepStats stats;
  stats.step = step_;
  stats.loss_scale = scaler_.scale();
  const int a = options_.accumulation;
  const int64_t t = model_->tokens();
  stats.tokens = t * a;
  const model::BatchShape shape{options_.micro_batch, options_.seq, a,
                                dp_size_};
  stats.global_tokens = stats.tokens * dp_size_;
  const int64_t step_start = rt_.NowNanos();
  double loss_sum = 0;
  coordinator_->StartStep();
  for (int micro = 0; micro < a; ++micro) {
    const int64_t t0 = rt_.NowNanos();
    ZR_RETURN_IF_ERROR(inputs_->Stage(*compute_, *data_, shape, step_, micro,
                                      dp_rank_,
                                      absl::StrCat("fill inputs ", micro)));
    // After the inputs' copy, which would otherwise queue behind it.
    ZR_RETURN_IF_ERROR(IssueWriteBack());
    const float grad_scale = static_cast<float>(scaler_.scale() / a);
    const TensorRef loss = TensorRef::Of(loss_device_, DType::kF32, 0, 1);
    ZR_RETURN_IF_ERROR(model_->Forward(*compute_, *this, inputs_->tokens(),
                                       inputs_->targets(), loss, grad_scale));
    ZR_RETURN_IF_ERROR(
        compute_->Copy(loss_host_.All(), loss_device_.All(), "loss D2H"));
    ZR_RETURN_IF_ERROR(compute_->Record(*loss_copied_));
    if (options_.syncs.enabled(Sync::kLossRead)) {
      ZR_RETURN_IF_ERROR(loss_copied_->Synchronize());
    }
    HostTask read;
    read.label = "read loss";
    read.reads = {loss_host_.All()};
    read.run = [&]() -> absl::Status {
      loss_sum += *static_cast<const float*>(loss_host_.data());
      return absl::OkStatus();
    };
    ZR_RETURN_IF_ERROR(rt_.RunHostTask(read));
    const int64_t t1 = rt_.NowNanos();
    rt_.MarkSpan("FWD", t0, t1);
    stats.fwd_ns += t1 - t0;

    const bool boundary = micro == a - 1;
    const bool speculate = boundary && SpeculateThisStep();
    ZR_RETURN_IF_ERROR(reducer_->BeginBackward(micro, boundary, speculate));
    ZR_RETURN_IF_ERROR(model_->Backward(*compute_, *this));
    if (speculate) {
      // The host is free while the device runs the backward just issued.
      ZR_RETURN_IF_ERROR(reducer_->FinishBackward());
      // Ran (or aborted early); Update validates it and sets the outcome.
      ZR_RETURN_IF_ERROR(Speculate(&stats));
      ZR_RETURN_IF_ERROR(reducer_->WaitForOffload());
    } else {
      ZR_RETURN_IF_ERROR(reducer_->EndBackward());
    }
    const int64_t t2 = rt_.NowNanos();
    rt_.MarkSpan("BWD", t1, t2);
    stats.bwd_ns += t2 - t1;
  }
  stats.loss = rt_.computes_values() ? loss_sum / a
                                     : std::numeric_limits<double>::quiet_NaN();

  const int64_t t3 = rt_.NowNanos();
  double norm_squared = 1.0;
  HostTask read_norm;
  read_norm.label = "read grad norm";
  read_norm.reads = {reducer_->host_norm_squared().slice};
  read_norm.run = [&]() -> absl::Status {
    const float* pairs = reducer_->host_norm_squared().slice.As<float>();
    norm_squared = 0;
    for (int r = 0; r < dp_size_; ++r) {
      norm_squared += static_cast<double>(pairs[2 * r]) + pairs[2 * r + 1];
    }
    return absl::OkStatus();
  };

  ZR_RETURN_IF_ERROR(rt_.RunHostTask(read_norm));
  ZR_RETURN_IF_ERROR(Update(norm_squared, &stats));
  // The step ends when every data-parallel rank's update is done, on the
  // host and on the device: then STEP holds the device's optimizer work
  // (which would otherwise run under the next forward and be counted
  // there), and each phase's time is the slowest rank's. The gather stream
  // waits for the update, as the next step's first all-gather would
  // (params-updated-before-gather: dropping that sync drops this wait
  // too), then a 4-byte all-reduce on it when there are several ranks, and
  // the host waits for the gather stream. A NCCL kernel behind the
  // optimizer's kernels would start only once they had the SMs, so without
  // the wait the barrier would end partway through the update.
  if (options_.syncs.enabled(Sync::kParamsUpdatedBeforeGather)) {
    ZR_RETURN_IF_ERROR(ctx_.gather->Wait(*updated_));
  }
  if (dp_size_ > 1) {
    ZR_RETURN_IF_ERROR(ctx_.dp->AllReduce(
        *ctx_.gather, TensorRef::Of(barrier_, DType::kF32, 0, 1),
        TensorRef::Of(barrier_, DType::kF32, 1, 1), runtime::ReduceOp::kSum,
        "step barrier"));
  }
  ZR_RETURN_IF_ERROR(ctx_.gather->Synchronize());
  const int64_t t4 = rt_.NowNanos();
  rt_.MarkSpan("STEP", t3, t4);
  stats.step_ns = t4 - t3;
  stats.total_ns = t4 - step_start;
  ++step_;
  return stats;
}

absl::Status Engine::Update(double norm_squared, StepStats* stats) {
  // A skipped step does not advance the schedule, as in DeepSpeed.
  stats->lr = options_.lr_schedule.LrAt(options_.lr, adam_step_);
  const double scale = scaler_.scale();
  const double total_norm = std::sqrt(norm_squared);
  stats->grad_norm = rt_.computes_values()
                         ? total_norm / scale
                         : std::numeric_limits<double>::quiet_NaN();
  if (!std::isfinite(norm_squared)) {
    stats->skipped = true;
    if (options_.dtype == DType::kF16 && scaler_.dynamic()) {
      scaler_.Update(true);
      stats->skip_reason = absl::StrFormat(
          "gradient overflow at loss scale %g; step skipped, loss scale now %g",
          scale, scaler_.scale());
    } else {
      // DeepSpeed's ZeRO-3 applies such a step in bf16 (NaN norms become -1
      // and the NaN gradients reach Adam); we skip it and say so.
      stats->skip_reason =
          "non-finite gradient norm; step skipped (parameters unchanged)";
    }
    if (stats->speculation != StepStats::Speculation::kNone) {
      ZR_RETURN_IF_ERROR(ResolveSpeculation(false, stats));
    }
    return coordinator_->AfterUpdate(nullptr);
  }
  // DeepSpeed's unscale_and_clip: one factor for both.
  double combined = scale;
  const double clip = ClipFactor(norm_squared);
  if (clip > 1) combined = clip * scale;
  ++adam_step_;
  const kernels::AdamWArgs args = AdamArgs(adam_step_, stats->lr, combined);
  // The device share first: its kernels run while the host updates its own.
  if (ctx_.host_begin > 0) ZR_RETURN_IF_ERROR(DeviceUpdate(args));
  if (stats->speculation != StepStats::Speculation::kNone) {
    // The speculation assumed combined == scale. Timing runs have no
    // values: their speculation is taken as validated.
    ZR_RETURN_IF_ERROR(
        ResolveSpeculation(combined == scale || !rt_.computes_values(), stats));
  }
  if (ctx_.host_elements() > 0 &&
      stats->speculation != StepStats::Speculation::kCommitted) {
    ZR_RETURN_IF_ERROR(HostUpdate(args));
  }
  scaler_.Update(false);
  if (options_.offload_param) return coordinator_->AfterUpdate(nullptr);
  return AfterAppliedUpdate();
}

absl::Status Engine::AfterAppliedUpdate() {
  ZR_RETURN_IF_ERROR(compute_->Record(*updated_));
  std::vector<zero::ParamCoordinator::PendingWrite> writes;
  if (write_back_ != nullptr) {
    for (size_t i = 0; i < host_pieces_.size(); ++i) {
      writes.push_back({host_pieces_[i].offset, host_pieces_[i].elements,
                        piece_written_[i].get()});
    }
  }
  return coordinator_->AfterUpdate(updated_.get(), std::move(writes));
}

double Engine::ClipFactor(double norm_squared) const {
  if (options_.gradient_clipping <= 0) return 1;
  return ((std::sqrt(norm_squared) / scaler_.scale()) + 1e-6) /
         options_.gradient_clipping;
}

kernels::AdamWArgs Engine::AdamArgs(int64_t step, double lr,
                                    double combined) const {
  kernels::AdamWArgs args;
  args.step = step;
  args.lr = static_cast<float>(lr);
  args.beta1 = options_.beta1;
  args.beta2 = options_.beta2;
  args.eps = options_.eps;
  args.weight_decay = options_.weight_decay;
  args.bias_correction = options_.bias_correction;
  args.adamw_mode = options_.adamw_mode;
  args.grad_scale = static_cast<float>(1.0 / combined);
  return args;
}

void Engine::PlanHostPieces() {
  const int64_t piece_size = std::max<int64_t>(1, options_.host_step_piece);
  const int64_t hb = ctx_.host_begin;
  const std::vector<zero::ParamRange>& buckets = reducer_->buckets();
  for (size_t g = 0; g < sub_groups_.size(); ++g) {
    const zero::ParamRange& r = sub_groups_[g];
    if (r.offset < hb) continue;  // the device share's
    const int64_t parts = (r.elements + piece_size - 1) / piece_size;
    for (int64_t k = 0; k < parts; ++k) {
      HostPiece p;
      p.offset = r.offset + k * piece_size;
      p.elements = std::min(piece_size, r.elements - k * piece_size);
      p.name = parts == 1 ? absl::StrCat("sub-group ", g)
                          : absl::StrCat("sub-group ", g, " part ", k);
      p.runs = zero::ClipRuns(decay_runs_[g], p.offset, p.elements);
      // Buckets are reduced from the end of the layout: the piece is on the
      // host once the bucket holding its first element is.
      for (size_t b = 0; b < buckets.size(); ++b) {
        if (buckets[b].offset < p.offset + p.elements) {
          p.ready_bucket = static_cast<int>(b);
        }
        if (buckets[b].offset <= p.offset) break;
      }
      host_pieces_.push_back(std::move(p));
    }
  }
}

absl::Status Engine::HostUpdate(const kernels::AdamWArgs& args) {
  for (size_t i = 0; i < host_pieces_.size(); ++i) {
    ZR_RETURN_IF_ERROR(HostAdamPiece(static_cast<int>(i), args, false));
    ZR_RETURN_IF_ERROR(WriteBackPiece(static_cast<int>(i)));
  }
  return absl::OkStatus();
}

absl::Status Engine::HostAdamPiece(int index, const kernels::AdamWArgs& args,
                                   bool speculative) {
  const HostPiece& piece = host_pieces_[index];
  const DType dtype = options_.dtype;
  const int64_t esize = kernels::DTypeSize(dtype);
  const TensorRef grads = reducer_->host_partition();
  const int64_t gsize = kernels::DTypeSize(grads.dtype);
  const Buffer& lp = options_.offload_param ? shard_ : staging_;
  const int threads = zero::OptimizerThreads(options_.optimizer_threads);
  const int64_t at_host = piece.offset - ctx_.host_begin;
  const int64_t n = piece.elements;
  const runtime::BufferSlice m = host_master_.Slice(at_host * 4, n * 4);
  const runtime::BufferSlice m1 = host_exp_avg_.Slice(at_host * 4, n * 4);
  const runtime::BufferSlice m2 = host_exp_avg_sq_.Slice(at_host * 4, n * 4);
  const runtime::BufferSlice gs = grads.slice.Sub(at_host * gsize, n * gsize);
  const runtime::BufferSlice out = lp.Slice(at_host * esize, n * esize);
  // One pass: the update and the new working copy, which the H2D (or the
  // next gather, with offload_param) reads.
  HostTask adam;
  adam.label =
      absl::StrCat(speculative ? "speculative adamw " : "adamw ", piece.name);
  adam.reads = {gs};
  // DeepSpeed's path writes no working copy: the fp32 master goes back
  // (unless offload_param keeps the working shard on the host).
  const bool fp32_back =
      options_.per_param_fp32_grads && !options_.offload_param;
  std::vector<runtime::BufferSlice> next;
  if (speculative) {
    next = {next_master_.Slice(at_host * 4, n * 4),
            next_exp_avg_.Slice(at_host * 4, n * 4),
            next_exp_avg_sq_.Slice(at_host * 4, n * 4)};
    adam.reads.insert(adam.reads.end(), {m, m1, m2});
    adam.writes = next;
  } else {
    adam.writes = {m, m1, m2};
  }
  if (!fp32_back) adam.writes.push_back(out);
  adam.flops = 15.0 * n;
  adam.memory_bytes = (24 + gsize + (fp32_back ? 0 : esize)) * n;
  adam.threads = HostTaskThreads(options_);
  adam.run = [&]() -> absl::Status {
    // Each run of equal weight decay (one unless decay is grouped).
    for (const zero::DecayRun& run : piece.runs) {
      const int64_t at = run.offset - piece.offset;
      kernels::AdamWArgs a = args;
      a.n = run.elements;
      a.weight_decay = run.weight_decay;
      zero::HostAdamWArrays x;
      x.params = m.As<float>() + at;
      x.grads = static_cast<const char*>(gs.data()) + at * gsize;
      x.grad_dtype = grads.dtype;
      x.exp_avg = m1.As<float>() + at;
      x.exp_avg_sq = m2.As<float>() + at;
      if (speculative) {
        x.params_out = next[0].As<float>() + at;
        x.exp_avg_out = next[1].As<float>() + at;
        x.exp_avg_sq_out = next[2].As<float>() + at;
      }
      if (!fp32_back) {
        x.working = static_cast<char*>(out.data()) + at * esize;
        x.working_dtype = dtype;
      }
      zero::HostAdamWStep(a, x, threads);
    }
    return absl::OkStatus();
  };
  return rt_.RunHostTask(adam);
}

absl::Status Engine::WriteBackPiece(int index) {
  const HostPiece& piece = host_pieces_[index];
  const int64_t esize = kernels::DTypeSize(options_.dtype);
  const int64_t at_host = piece.offset - ctx_.host_begin;
  const int64_t n = piece.elements;
  if (options_.per_param_fp32_grads && !options_.offload_param) {
    return WriteBackFp32(host_master_.Slice(at_host * 4, n * 4), piece.offset,
                         n, piece.name);
  }
  if (options_.offload_param) return absl::OkStatus();
  const runtime::BufferSlice to = shard_.Slice(piece.offset * esize, n * esize);
  const runtime::BufferSlice from = staging_.Slice(at_host * esize, n * esize);
  const std::string label = absl::StrCat("param H2D ", piece.name);
  if (write_back_ == nullptr) return compute_->Copy(to, from, label);
  // Issued by IssueWriteBack, at the start of the next step.
  write_back_pending_ = true;
  return absl::OkStatus();
}

absl::Status Engine::IssueWriteBack() {
  if (!write_back_pending_) return absl::OkStatus();
  write_back_pending_ = false;
  const int64_t esize = kernels::DTypeSize(options_.dtype);
  // The last step's gathers of the shard are done: the host waited for the
  // reduce stream, which waited for the backward that waited for them.
  for (size_t i = 0; i < host_pieces_.size(); ++i) {
    const HostPiece& piece = host_pieces_[i];
    const int64_t n = piece.elements;
    ZR_RETURN_IF_ERROR(write_back_->Copy(
        shard_.Slice(piece.offset * esize, n * esize),
        staging_.Slice((piece.offset - ctx_.host_begin) * esize, n * esize),
        absl::StrCat("param H2D ", piece.name)));
    ZR_RETURN_IF_ERROR(write_back_->Record(*piece_written_[i]));
  }
  return absl::OkStatus();
}

absl::Status Engine::WriteBackFp32(const runtime::BufferSlice& master,
                                   int64_t offset, int64_t n,
                                   const std::string& name) {
  // On the compute stream, so the next piece's copy into the same device
  // buffer follows this piece's cast.
  ZR_RETURN_IF_ERROR(compute_->Copy(writeback_.Slice(0, n * 4), master,
                                    absl::StrCat("fp32 param H2D ", name)));
  return compute_->Launch(KernelCall(
      ops::Cast::Of(TensorRef::Of(writeback_, DType::kF32, 0, n),
                    TensorRef::Of(shard_, options_.dtype, offset, n)),
      absl::StrCat("cast ", name)));
}

absl::Status Engine::DeviceUpdate(const kernels::AdamWArgs& args) {
  const TensorRef grads = reducer_->device_partition();
  for (size_t g = 0; g < sub_groups_.size(); ++g) {
    if (sub_groups_[g].offset >= ctx_.host_begin) break;  // the host share
    // One kernel per run of equal weight decay (one unless decay is
    // grouped).
    for (const zero::DecayRun& run : decay_runs_[g]) {
      ops::AdamW adam;
      adam.args = args;
      adam.args.n = run.elements;
      adam.args.weight_decay = run.weight_decay;
      adam.params =
          TensorRef::Of(master_, DType::kF32, run.offset, run.elements);
      adam.grads = grads.Elements(run.offset, run.elements);
      adam.exp_avg =
          TensorRef::Of(exp_avg_, DType::kF32, run.offset, run.elements);
      adam.exp_avg_sq =
          TensorRef::Of(exp_avg_sq_, DType::kF32, run.offset, run.elements);
      ZR_RETURN_IF_ERROR(compute_->Launch(
          KernelCall(adam, absl::StrCat("adamw sub-group ", g))));
    }
  }
  return CastDeviceShare("new working shard");
}

model::DataPosition Engine::data_position() const {
  const model::BatchShape shape{options_.micro_batch, options_.seq,
                                options_.accumulation, dp_size_};
  return data_->PositionAt(shape, step_);
}

absl::StatusOr<std::vector<float>> Engine::MasterParam(int param) {
  if (!rt_.computes_values()) {
    return absl::FailedPreconditionError("the runtime holds no values");
  }
  ZR_RETURN_IF_ERROR(IssueWriteBack());
  const zero::ParamShard& s = layout_->param(param);
  const int64_t valid = layout_->ValidElements(param);
  std::vector<float> out(valid);
  if (valid == 0) return out;
  ZR_RETURN_IF_ERROR(rt_.device().Synchronize());
  const bool on_host = s.offset >= ctx_.host_begin;
  runtime::OwnedBuffer temp;
  if (!on_host) {
    ZR_ASSIGN_OR_RETURN(temp,
                        AllocateHost(rt_, valid * 4, HostMemoryKind::kPinned,
                                     "master readback"));
    ZR_RETURN_IF_ERROR(compute_->Copy(
        temp.All(), master_.Slice(s.offset * 4, valid * 4), "master D2H"));
    ZR_RETURN_IF_ERROR(compute_->Synchronize());
  }
  HostTask read;
  read.label = "read master";
  read.reads = {
      on_host ? host_master_.Slice((s.offset - ctx_.host_begin) * 4, valid * 4)
              : temp.All()};
  read.run = [&]() -> absl::Status {
    std::memcpy(out.data(), read.reads[0].data(), valid * 4);
    return absl::OkStatus();
  };
  ZR_RETURN_IF_ERROR(rt_.RunHostTask(read));
  ZR_RETURN_IF_ERROR(temp.Free());
  return out;
}

// Training state ------------------------------------------------------------

absl::StatusOr<TrainingState> Engine::ExportState() {
  TrainingState state;
  ZR_RETURN_IF_ERROR(ExportState(&state));
  return state;
}

absl::Status Engine::ExportState(TrainingState* into) {
  if (!rt_.computes_values()) {
    return absl::FailedPreconditionError("the runtime holds no values");
  }
  ZR_RETURN_IF_ERROR(IssueWriteBack());
  const int64_t hb = ctx_.host_begin;
  const int64_t device_bytes = hb * 4;
  const int64_t host_bytes = ctx_.host_elements() * 4;
  TrainingState& state = *into;
  state.steps_done = step_;
  state.adam_steps = adam_step_;
  state.scaler = scaler_.state();
  ZR_RETURN_IF_ERROR(rt_.device().Synchronize());
  // The device share through pinned staging; the host share in place.
  const runtime::OwnedBuffer* device[] = {&master_, &exp_avg_, &exp_avg_sq_};
  const runtime::OwnedBuffer* host[] = {&host_master_, &host_exp_avg_,
                                        &host_exp_avg_sq_};
  runtime::OwnedBuffer temp;
  HostTask read;
  read.label = "read training state";
  if (hb > 0) {
    ZR_ASSIGN_OR_RETURN(
        temp, AllocateHost(rt_, 3 * device_bytes, HostMemoryKind::kPinned,
                           "training state readback"));
    for (int i = 0; i < 3; ++i) {
      ZR_RETURN_IF_ERROR(
          compute_->Copy(temp.Slice(i * device_bytes, device_bytes),
                         device[i]->All(), "training state D2H"));
    }
    ZR_RETURN_IF_ERROR(compute_->Synchronize());
    read.reads.push_back(temp.All());
  }
  if (host_bytes > 0) {
    for (int i = 0; i < 3; ++i) read.reads.push_back(host[i]->All());
  }
  std::vector<float>* outs[] = {&state.master, &state.exp_avg,
                                &state.exp_avg_sq};
  read.memory_bytes = 3 * (device_bytes + host_bytes);
  read.threads = HostTaskThreads(options_);
  read.run = [&]() -> absl::Status {
    const int threads = zero::OptimizerThreads(options_.optimizer_threads);
    for (int i = 0; i < 3; ++i) {
      // A vector of this size already (a snapshot reused) is not touched.
      outs[i]->resize(layout_->total());
      char* out = reinterpret_cast<char*>(outs[i]->data());
      // On all of the rank's cores: a snapshot for a checkpoint is a copy of
      // the whole state, taken while the step waits.
      if (device_bytes > 0) {
        ParallelCopy(out,
                     static_cast<const char*>(temp.data()) + i * device_bytes,
                     device_bytes, threads);
      }
      if (host_bytes > 0) {
        ParallelCopy(out + device_bytes, host[i]->data(), host_bytes, threads);
      }
    }
    return absl::OkStatus();
  };
  ZR_RETURN_IF_ERROR(rt_.RunHostTask(read));
  return temp.Free();
}

absl::Status Engine::ImportState(const TrainingState& state) {
  if (!rt_.computes_values()) {
    return absl::FailedPreconditionError("the runtime holds no values");
  }
  ZR_RETURN_IF_ERROR(IssueWriteBack());
  const int64_t total = layout_->total();
  for (const std::vector<float>* v :
       {&state.master, &state.exp_avg, &state.exp_avg_sq}) {
    if (static_cast<int64_t>(v->size()) != total) {
      return absl::InvalidArgumentError(absl::StrCat(
          "training state of ", v->size(), " elements per tensor; rank ",
          rt_.rank(), "'s partitions hold ", total));
    }
  }
  ZR_RETURN_IF_ERROR(rt_.device().Synchronize());
  const int64_t hb = ctx_.host_begin;
  const int64_t host_bytes = ctx_.host_elements() * 4;
  if (host_bytes > 0) {
    const runtime::OwnedBuffer* host[] = {&host_master_, &host_exp_avg_,
                                          &host_exp_avg_sq_};
    const std::vector<float>* values[] = {&state.master, &state.exp_avg,
                                          &state.exp_avg_sq};
    HostTask write;
    write.label = "write training state";
    write.writes = {host[0]->All(), host[1]->All(), host[2]->All()};
    write.memory_bytes = 3 * host_bytes;
    write.run = [&]() -> absl::Status {
      for (int i = 0; i < 3; ++i) {
        std::memcpy(host[i]->data(), values[i]->data() + hb, host_bytes);
      }
      return absl::OkStatus();
    };
    ZR_RETURN_IF_ERROR(rt_.RunHostTask(write));
    ZR_RETURN_IF_ERROR(InitHostShards());
  }
  if (hb > 0) ZR_RETURN_IF_ERROR(ImportDeviceState(state));
  step_ = state.steps_done;
  adam_step_ = state.adam_steps;
  scaler_.Restore(state.scaler);
  return absl::OkStatus();
}

absl::Status Engine::ImportDeviceState(const TrainingState& state) {
  const int64_t n = ctx_.host_begin;
  const int64_t bytes = n * 4;
  ZR_ASSIGN_OR_RETURN(runtime::OwnedBuffer temp,
                      AllocateHost(rt_, 3 * bytes, HostMemoryKind::kPinned,
                                   "training state staging"));
  const std::vector<float>* values[] = {&state.master, &state.exp_avg,
                                        &state.exp_avg_sq};
  HostTask write;
  write.label = "stage training state";
  write.writes = {temp.Slice(0, 3 * bytes)};
  write.memory_bytes = 3 * bytes;
  write.run = [&]() -> absl::Status {
    for (int i = 0; i < 3; ++i) {
      std::memcpy(static_cast<char*>(temp.data()) + i * bytes,
                  values[i]->data(), bytes);
    }
    return absl::OkStatus();
  };
  ZR_RETURN_IF_ERROR(rt_.RunHostTask(write));
  const runtime::OwnedBuffer* targets[] = {&master_, &exp_avg_, &exp_avg_sq_};
  absl::Status enqueued;
  for (int i = 0; i < 3 && enqueued.ok(); ++i) {
    enqueued = compute_->Copy(targets[i]->All(), temp.Slice(i * bytes, bytes),
                              "training state H2D");
  }
  if (enqueued.ok()) enqueued = CastDeviceShare("restored working shard");
  // What was enqueued reads `temp`: done before it is freed, on every path.
  ZR_RETURN_IF_ERROR(compute_->Synchronize());
  ZR_RETURN_IF_ERROR(enqueued);
  return temp.Free();
}

absl::StatusOr<int> Engine::CountRanks(bool flag, const std::string& label) {
  ZR_ASSIGN_OR_RETURN(const std::vector<float> sum,
                      SumAcrossRanks({flag ? 1.0f : 0.0f}, label));
  return static_cast<int>(sum[0]);
}

absl::StatusOr<std::vector<float>> Engine::SumAcrossRanks(
    const std::vector<float>& values, const std::string& label) {
  if (!rt_.computes_values()) {
    return absl::FailedPreconditionError("the runtime holds no values");
  }
  const int64_t n = static_cast<int64_t>(values.size());
  const int64_t bytes = 4 * std::max<int64_t>(n, 1);
  ZR_ASSIGN_OR_RETURN(runtime::OwnedBuffer host,
                      AllocateHost(rt_, 2 * bytes, HostMemoryKind::kPinned,
                                   absl::StrCat(label, " (host)")));
  ZR_ASSIGN_OR_RETURN(runtime::OwnedBuffer device,
                      AllocateDevice(rt_.device(), 2 * bytes, label));
  HostTask put;
  put.label = absl::StrCat(label, ": this rank's values");
  put.writes = {host.Slice(0, bytes)};
  put.run = [&]() -> absl::Status {
    std::memcpy(host.Slice(0, bytes).data(), values.data(), 4 * n);
    return absl::OkStatus();
  };
  ZR_RETURN_IF_ERROR(rt_.RunHostTask(put));
  ZR_RETURN_IF_ERROR(
      compute_->Copy(device.Slice(0, bytes), host.Slice(0, bytes), "sum H2D"));
  ZR_RETURN_IF_ERROR(
      rt_.world().AllReduce(*compute_, TensorRef::Of(device, DType::kF32, 0, n),
                            TensorRef::Of(device, DType::kF32, n, n),
                            runtime::ReduceOp::kSum, label));
  ZR_RETURN_IF_ERROR(compute_->Copy(host.Slice(bytes, bytes),
                                    device.Slice(bytes, bytes), "sum D2H"));
  ZR_RETURN_IF_ERROR(compute_->Synchronize());
  std::vector<float> sum(n);
  HostTask get;
  get.label = absl::StrCat(label, ": sums");
  get.reads = {host.Slice(bytes, bytes)};
  get.run = [&]() -> absl::Status {
    std::memcpy(sum.data(), host.Slice(bytes, bytes).data(), 4 * n);
    return absl::OkStatus();
  };
  ZR_RETURN_IF_ERROR(rt_.RunHostTask(get));
  return sum;
}

}  // namespace engine
}  // namespace zero3
