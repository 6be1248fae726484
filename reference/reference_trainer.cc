// Copyright 2026 The zero3 Authors.

#include "reference/reference_trainer.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/kernels/dtype.h"
#include "core/kernels/reference.h"
#include "core/util/status_macros.h"
#include "core/zero/grad_clip.h"
#include "core/zero/weight_decay.h"

namespace zero3 {
namespace reference {

using runtime::DType;
using runtime::HostMemoryKind;
using runtime::TensorRef;

namespace {

using kernels::RoundThrough;

// Each value rounded to `dtype` and back (nothing for fp32).
void RoundTo(kernels::DType dtype, std::vector<float>* values) {
  if (dtype == kernels::DType::kF32) return;
  for (float& x : *values) x = RoundThrough(dtype, x);
}

}  // namespace

ReferenceTrainer::ReferenceTrainer(const model::ModelSpec& spec,
                                   const zero::ZeroOptions& options, int world,
                                   const model::BatchSource* data,
                                   runtime::Runtime& rt)
    : spec_(spec), options_(options), world_(world), data_(data), rt_(rt) {
  scaler_ = zero::LossScaler::ForOptions(options_);
}

ReferenceTrainer::~ReferenceTrainer() {
  // The members free buffers that queued work may still use.
  rt_.device().Synchronize().IgnoreError();
}

absl::StatusOr<std::unique_ptr<ReferenceTrainer>> ReferenceTrainer::Create(
    const model::ModelSpec& spec, const zero::ZeroOptions& options, int world,
    const model::BatchSource* data, runtime::Runtime& rt,
    const model::ParamSource* params) {
  if (!rt.computes_values()) {
    return absl::FailedPreconditionError(
        "the reference trainer needs a runtime that computes values");
  }
  std::unique_ptr<ReferenceTrainer> t(
      new ReferenceTrainer(spec, options, world, data, rt));
  const model::SeededInit seeded(spec, options.seed);
  ZR_RETURN_IF_ERROR(t->Init(params != nullptr ? *params : seeded));
  return t;
}

absl::Status ReferenceTrainer::Init(const model::ParamSource& source) {
  const DType dtype = options_.dtype;
  ZR_ASSIGN_OR_RETURN(stream_, rt_.device().CreateStream("reference"));
  ZR_ASSIGN_OR_RETURN(
      model_, model::Transformer::Create(spec_, dtype, options_.micro_batch,
                                         options_.seq, rt_));
  std::vector<std::string> names;
  for (const model::ParamInfo& p : model_->params()) names.push_back(p.name);
  decays_ = zero::ParamWeightDecays(names, options_.weight_decay,
                                    options_.exclude_bias_and_norm_from_decay);
  int64_t largest = 1;
  for (const model::ParamInfo& p : model_->params()) {
    const int64_t bytes = p.numel() * kernels::DTypeSize(dtype);
    largest = std::max(largest, p.numel());
    ZR_ASSIGN_OR_RETURN(runtime::OwnedBuffer param,
                        runtime::AllocateDevice(rt_.device(), bytes,
                                                absl::StrCat("ref ", p.name)));
    params_.push_back(std::move(param));
    ZR_ASSIGN_OR_RETURN(
        runtime::OwnedBuffer grad,
        runtime::AllocateDevice(rt_.device(), bytes,
                                absl::StrCat("ref grad ", p.name)));
    grads_.push_back(std::move(grad));
    std::vector<float> init(p.numel());
    ZR_RETURN_IF_ERROR(source.Fill(p, 0, p.numel(), init.data()));
    for (float& v : init) v = RoundThrough(dtype, v);
    master_.push_back(init);
    m_.emplace_back(p.numel(), 0.0f);
    v_.emplace_back(p.numel(), 0.0f);
    acc_.emplace_back(p.numel(), 0.0f);
  }
  ZR_ASSIGN_OR_RETURN(
      host_, runtime::AllocateHost(rt_, largest * 4, HostMemoryKind::kPinned,
                                   "ref staging"));
  ZR_ASSIGN_OR_RETURN(inputs_, model::InputStager::Create(
                                   rt_, model_->tokens(), "ref inputs host",
                                   "ref inputs", "ref inputs H2D"));
  ZR_ASSIGN_OR_RETURN(loss_,
                      runtime::AllocateDevice(rt_.device(), 4, "ref loss"));
  ZR_ASSIGN_OR_RETURN(
      loss_host_,
      runtime::AllocateHost(rt_, 4, HostMemoryKind::kPinned, "ref loss host"));
  return UploadParams(master_);
}

absl::Status ReferenceTrainer::Resume(const ReferenceState& state) {
  for (const auto* tensors :
       {&state.master, &state.exp_avg, &state.exp_avg_sq}) {
    bool fits = tensors->size() == master_.size();
    for (size_t p = 0; fits && p < master_.size(); ++p) {
      fits = (*tensors)[p].size() == master_[p].size();
    }
    if (!fits) {
      return absl::InvalidArgumentError(
          "the reference cannot resume from a state of another model");
    }
  }
  master_ = state.master;
  m_ = state.exp_avg;
  v_ = state.exp_avg_sq;
  batch_step_ = state.steps_done;
  step_ = state.adam_steps;
  scaler_.Restore(state.scaler);
  return UploadParams(master_);
}

// Host work here is plain code on host buffers the reference has
// synchronized; each access still goes through a HostTask so that the race
// detector sees the reference obey the same rules as the engine.
absl::Status ReferenceTrainer::UploadParams(
    const std::vector<std::vector<float>>& master) {
  const DType dtype = options_.dtype;
  for (size_t p = 0; p < params_.size(); ++p) {
    const int64_t n = static_cast<int64_t>(master[p].size());
    const int64_t bytes = n * kernels::DTypeSize(dtype);
    runtime::HostTask cast;
    cast.label = "ref cast params";
    cast.writes = {host_.Slice(0, bytes)};
    cast.run = [&]() -> absl::Status {
      kernels::CastArgs a;
      a.n = n;
      a.src = DType::kF32;
      a.dst = dtype;
      kernels::Cast(a, master[p].data(), host_.data());
      return absl::OkStatus();
    };
    ZR_RETURN_IF_ERROR(rt_.RunHostTask(cast));
    ZR_RETURN_IF_ERROR(stream_->Copy(params_[p].All(), host_.Slice(0, bytes),
                                     "ref params H2D"));
    ZR_RETURN_IF_ERROR(stream_->Synchronize());
  }
  return absl::OkStatus();
}

absl::Status ReferenceTrainer::BeginModule(int, model::Pass) {
  return absl::OkStatus();
}
TensorRef ReferenceTrainer::Param(int param) {
  return TensorRef::Of(params_[param], options_.dtype, 0,
                       model_->params()[param].numel());
}
absl::Status ReferenceTrainer::EndModule(int, model::Pass) {
  return absl::OkStatus();
}
absl::StatusOr<TensorRef> ReferenceTrainer::Grad(int param) {
  return TensorRef::Of(grads_[param], options_.dtype, 0,
                       model_->params()[param].numel());
}
absl::Status ReferenceTrainer::GradsReady(absl::Span<const int>) {
  return absl::OkStatus();
}

absl::StatusOr<ReferenceStep> ReferenceTrainer::Step() {
  const DType dtype = options_.dtype;
  const int a_steps = options_.accumulation;
  const model::BatchShape shape{options_.micro_batch, options_.seq, a_steps,
                                world_};
  const int num_params = static_cast<int>(params_.size());
  const float inv_world = 1.0f / static_cast<float>(world_);
  ReferenceStep result;
  double loss_sum = 0;
  // The one-step delayed update: the next step runs on the master from
  // before this step's update.
  const bool delayed = zero::HostStepPlanOf(options_).delayed;
  std::vector<std::vector<float>> before;
  if (delayed) before = master_;
  ZR_ASSIGN_OR_RETURN(const int64_t predicted,
                      data_->PredictedTargets(shape, batch_step_));
  const double loss_divisor =
      model::MicroBatchLossDivisor(*data_, shape, predicted);
  for (int micro = 0; micro < a_steps; ++micro) {
    std::vector<std::vector<float>> rank_sum(num_params);
    for (int p = 0; p < num_params; ++p)
      rank_sum[p].assign(master_[p].size(), 0.0f);
    for (int rank = 0; rank < world_; ++rank) {
      ZR_RETURN_IF_ERROR(inputs_->Stage(*stream_, *data_, shape, batch_step_,
                                        micro, rank, "ref inputs"));
      ZR_RETURN_IF_ERROR(model_->Forward(
          *stream_, *this, inputs_->tokens(), inputs_->targets(),
          TensorRef::Of(loss_, DType::kF32, 0, 1),
          static_cast<float>(scaler_.scale() / a_steps), loss_divisor,
          inputs_->positions()));
      ZR_RETURN_IF_ERROR(model_->Backward(*stream_, *this));
      ZR_RETURN_IF_ERROR(
          stream_->Copy(loss_host_.All(), loss_.All(), "ref loss D2H"));
      ZR_RETURN_IF_ERROR(stream_->Synchronize());
      runtime::HostTask read;
      read.label = "ref read loss";
      read.reads = {loss_host_.All()};
      read.run = [&]() -> absl::Status {
        loss_sum += *static_cast<const float*>(loss_host_.data());
        return absl::OkStatus();
      };
      ZR_RETURN_IF_ERROR(rt_.RunHostTask(read));
      for (int p = 0; p < num_params; ++p) {
        const int64_t n = static_cast<int64_t>(master_[p].size());
        const int64_t bytes = n * kernels::DTypeSize(dtype);
        ZR_RETURN_IF_ERROR(stream_->Copy(host_.Slice(0, bytes), grads_[p].All(),
                                         "ref grad D2H"));
        ZR_RETURN_IF_ERROR(stream_->Synchronize());
        runtime::HostTask sum;
        sum.label = "ref sum over ranks";
        sum.reads = {host_.Slice(0, bytes)};
        sum.run = [&]() -> absl::Status {
          for (int64_t i = 0; i < n; ++i) {
            const float g = kernels::LoadAsFloat(dtype, host_.data(), i);
            // Each rank's share, as the engine's pre-divide in `dtype`.
            rank_sum[p][i] +=
                world_ > 1 ? RoundThrough(dtype, g * inv_world) : g;
          }
          return absl::OkStatus();
        };
        ZR_RETURN_IF_ERROR(rt_.RunHostTask(sum));
      }
    }
    for (int p = 0; p < num_params; ++p) {
      for (size_t i = 0; i < acc_[p].size(); ++i) {
        const float reduced = RoundThrough(dtype, rank_sum[p][i]);
        acc_[p][i] = micro == 0 ? reduced : acc_[p][i] + reduced;
      }
    }
  }
  result.loss = loss_sum / (a_steps * world_);
  // A skipped step still consumes its batch, as in DeepSpeed and the engine.
  ++batch_step_;

  double norm_squared = 0;
  for (const auto& g : acc_) {
    for (float x : g) norm_squared += static_cast<double>(x) * x;
  }
  // fp16: the gradients carry the loss scale; unscaling and clipping fold
  // into one factor, and non-finite gradients skip the step, as in
  // DeepSpeed.
  const double scale = scaler_.scale();
  const double norm = std::sqrt(norm_squared);
  result.grad_norm = norm / scale;
  // The schedule advances with applied steps only, as in DeepSpeed; a
  // skipped step reports the rate it would have used, as the engine does.
  result.lr = options_.lr_schedule.LrAt(options_.lr, step_);
  if (!std::isfinite(norm_squared)) {
    result.skipped = true;
    if (scaler_.dynamic()) scaler_.Update(true);
    // Delayed: the last update reaches the device now.
    if (delayed) ZR_RETURN_IF_ERROR(UploadParams(master_));
    return result;
  }
  double combined = scale;
  const double clip =
      zero::ClipFactor(norm_squared, scale, options_.gradient_clipping);
  if (clip > 1) combined = clip * scale;
  scaler_.Update(false);
  const float grad_scale = static_cast<float>(1.0 / combined);
  ++step_;
  for (int p = 0; p < num_params; ++p) {
    std::vector<float> g = acc_[p];
    if (grad_scale != 1.0f) {
      for (float& x : g) x *= grad_scale;
    }
    kernels::AdamWArgs args;
    args.n = static_cast<int64_t>(g.size());
    args.step = step_;
    args.lr = static_cast<float>(result.lr);
    args.beta1 = static_cast<float>(
        options_.lr_schedule.Beta1At(options_.beta1, step_ - 1));
    args.beta2 = static_cast<float>(
        options_.lr_schedule.Beta2At(options_.beta2, step_ - 1));
    args.eps = options_.eps;
    args.weight_decay = decays_[p];
    args.bias_correction = options_.bias_correction;
    args.adamw_mode = options_.adamw_mode;
    kernels::AdamWStep(args, master_[p].data(), g.data(), m_[p].data(),
                       v_[p].data());
    // A bf16 master and moments (bf16_master_weights_and_grads,
    // bf16_optimizer_states) keep the step's results rounded to nearest
    // even, as the host optimizer stores them.
    RoundTo(options_.host_master_dtype, &master_[p]);
    RoundTo(options_.host_moments_dtype, &m_[p]);
    RoundTo(options_.host_moments_dtype, &v_[p]);
  }
  ZR_RETURN_IF_ERROR(UploadParams(delayed ? before : master_));
  return result;
}

}  // namespace reference
}  // namespace zero3
