// Copyright 2026 The zero3 Authors.
//
// engine_eval.cc: Engine::Evaluate, forward passes on held-out data between
// steps.

#include <limits>

#include "absl/strings/str_cat.h"
#include "core/engine/engine.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace engine {

using runtime::DType;
using runtime::TensorRef;

absl::StatusOr<EvalStats> Engine::Evaluate(const model::BatchSource& data,
                                           int64_t batches) {
  if (batches < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("evaluation needs at least 1 batch, got ", batches));
  }
  const model::BatchShape shape{options_.micro_batch, options_.seq,
                                options_.accumulation, dp_size_};
  EvalStats stats;
  stats.batches = batches;
  double sum = 0;
  coordinator_->SetEvaluating(true);
  const absl::Status run =
      EvaluateBatches(data, shape, batches, &sum, &stats.predicted_tokens);
  coordinator_->SetEvaluating(false);
  ZR_RETURN_IF_ERROR(run);
  // Timing mode: the forward passes' time, no loss.
  if (!rt_.computes_values()) {
    stats.loss = std::numeric_limits<double>::quiet_NaN();
    return stats;
  }
  ZR_ASSIGN_OR_RETURN(const std::vector<float> total,
                      SumAcrossRanks({static_cast<float>(sum)}, "eval loss"));
  // Tensor-parallel ranks compute the same terms of the same tokens.
  const int tensor_parallel = rt_.world_size() / dp_size_;
  stats.loss = stats.predicted_tokens == 0
                   ? std::numeric_limits<double>::quiet_NaN()
                   : static_cast<double>(total[0]) / tensor_parallel /
                         static_cast<double>(stats.predicted_tokens);
  return stats;
}

absl::Status Engine::EvaluateBatches(const model::BatchSource& data,
                                     const model::BatchShape& shape,
                                     int64_t batches, double* sum,
                                     int64_t* predicted) {
  const TensorRef loss = TensorRef::Of(loss_device_, DType::kF32, 0, 1);
  for (int64_t b = 0; b < batches; ++b) {
    ZR_ASSIGN_OR_RETURN(const int64_t count, data.PredictedTargets(shape, b));
    *predicted += count;
    for (int micro = 0; micro < shape.accumulation; ++micro) {
      ZR_RETURN_IF_ERROR(inputs_->Stage(*compute_, data, shape, b, micro,
                                        dp_rank_,
                                        absl::StrCat("fill eval inputs ", b)));
      // A divisor of 1: the loss is the sum of the micro-batch's terms.
      ZR_RETURN_IF_ERROR(model_->Forward(
          *compute_, *this, inputs_->tokens(), inputs_->targets(), loss, 1.0f,
          /*loss_divisor=*/1.0, inputs_->positions()));
      ZR_RETURN_IF_ERROR(compute_->Copy(loss_host_.All(), loss_device_.All(),
                                        "eval loss D2H"));
      ZR_RETURN_IF_ERROR(compute_->Synchronize());
      ZR_RETURN_IF_ERROR(AddLoss("read eval loss", sum));
    }
  }
  return absl::OkStatus();
}

}  // namespace engine
}  // namespace zero3
