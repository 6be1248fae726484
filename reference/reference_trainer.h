// Copyright 2026 The zero3 Authors.
//
// reference_trainer.h: the oracle. The same model on one device, no
// sharding, no offload, plain AdamW.
//
// It trains on exactly the global batch a ZeRO-3 run of `world` ranks sees
// (every rank's micro-batches, core/model/data.h) and averages gradients in
// the same order the engine does: for each micro-step, the sum over ranks of
// each rank's gradient divided by the world size, rounded to the working
// dtype as a reduce-scatter in that dtype would be, then accumulated in fp32
// over micro-steps. With fp32 the engine must therefore match it to
// rounding; what remains is the order of the gradient-norm sum.
//
// Every parameter stays resident; gradients go to per-parameter buffers; the
// reduction, clipping and AdamW (core/kernels AdamWStep) run on the host in
// plain loops, at the learning rate of the options' schedule and with each
// parameter's weight decay (core/zero/weight_decay.h). It owns its buffers and
// synchronizes the device before they go. Not thread-safe.

#ifndef ZERO3_REFERENCE_REFERENCE_TRAINER_H_
#define ZERO3_REFERENCE_REFERENCE_TRAINER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "core/model/data.h"
#include "core/model/inputs.h"
#include "core/model/model_spec.pb.h"
#include "core/model/param_source.h"
#include "core/model/transformer.h"
#include "core/runtime/owned_buffer.h"
#include "core/runtime/runtime.h"
#include "core/zero/loss_scaler.h"
#include "core/zero/options.h"

namespace zero3 {
namespace reference {

struct ReferenceStep {
  double loss = 0;       // mean over all ranks' micro-batches
  double grad_norm = 0;  // global norm before clipping (unscaled)
  bool skipped = false;  // non-finite gradients (fp16 overflow): no update
  double lr = 0;         // the learning rate of the update (0 if skipped)
};

// A state to continue from (a checkpoint's, engine::ReadWholeState).
struct ReferenceState {
  // By parameter, each [numel]: the fp32 master and AdamW's moments.
  std::vector<std::vector<float>> master, exp_avg, exp_avg_sq;
  int64_t steps_done = 0;  // steps taken, skipped ones too: the next batch
  int64_t adam_steps = 0;  // applied steps (AdamW's t; the schedule's)
  zero::LossScaler::State scaler;
};

class ReferenceTrainer : private model::ParamProvider {
 public:
  // Uses the model, batch, precision, clipping and AdamW settings of
  // `options`, and trains the global batch of `world` ranks on `rt` (one
  // device that computes values), starting from `params` (null: the seeded
  // initialization of options.seed; used only inside Create).
  static absl::StatusOr<std::unique_ptr<ReferenceTrainer>> Create(
      const model::ModelSpec& spec, const zero::ZeroOptions& options, int world,
      const model::BatchSource* data, runtime::Runtime& rt,
      const model::ParamSource* params = nullptr);
  ~ReferenceTrainer() override;

  absl::StatusOr<ReferenceStep> Step();
  // Continues from `state` (of this model: every tensor its parameter's
  // numel): master, moments, step counts and loss scaler. Call before Step.
  absl::Status Resume(const ReferenceState& state);

  // The fp32 master of each parameter, [numel].
  const std::vector<float>& master(int param) const { return master_[param]; }
  int num_params() const { return static_cast<int>(master_.size()); }

 private:
  ReferenceTrainer(const model::ModelSpec& spec,
                   const zero::ZeroOptions& options, int world,
                   const model::BatchSource* data, runtime::Runtime& rt);
  absl::Status Init(const model::ParamSource& params);
  // `master` (master_, or a copy of it) in the working dtype to the device.
  absl::Status UploadParams(const std::vector<std::vector<float>>& master);

  absl::Status BeginModule(int, model::Pass) override;
  runtime::TensorRef Param(int param) override;
  absl::Status EndModule(int, model::Pass) override;
  absl::StatusOr<runtime::TensorRef> Grad(int param) override;
  absl::Status GradsReady(absl::Span<const int>) override;

  model::ModelSpec spec_;
  zero::ZeroOptions options_;
  int world_;
  const model::BatchSource* data_;
  runtime::Runtime& rt_;
  // Declared first, destroyed last: the members below use it.
  std::unique_ptr<runtime::Stream> stream_;
  std::unique_ptr<model::Transformer> model_;
  std::vector<runtime::OwnedBuffer> params_, grads_;
  runtime::OwnedBuffer host_;
  std::optional<model::InputStager> inputs_;
  runtime::OwnedBuffer loss_, loss_host_;
  std::vector<std::vector<float>> master_, m_, v_, acc_;
  std::vector<float> decays_;  // weight decay of each parameter
  zero::LossScaler scaler_;    // fp16 only; scale 1 otherwise
  int64_t step_ = 0;           // applied optimizer steps (AdamW's step count)
  int64_t batch_step_ = 0;     // steps taken, skipped ones too: the batch index
};

}  // namespace reference
}  // namespace zero3

#endif  // ZERO3_REFERENCE_REFERENCE_TRAINER_H_
