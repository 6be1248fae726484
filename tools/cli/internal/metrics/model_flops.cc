// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/metrics/model_flops.h"

#include "core/model/presets.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace metrics {

int64_t MatmulParameterCount(const model::ModelSpec& spec) {
  const int64_t embedding = spec.vocab_size() * spec.hidden_size();
  return model::ParameterCount(spec) -
         (spec.tie_word_embeddings() ? 0 : embedding);
}

double TrainingFlops(const model::ModelSpec& spec, int64_t seq,
                     int64_t tokens) {
  const double n = static_cast<double>(MatmulParameterCount(spec));
  const double attention = 12.0 * spec.num_layers() * spec.num_heads() *
                           spec.head_dim() * static_cast<double>(seq);
  return static_cast<double>(tokens) * (6.0 * n + attention);
}

double Mfu(double flops, double seconds, int gpus, double peak_tflops) {
  const double peak = seconds * gpus * peak_tflops * 1e12;
  return peak > 0 ? flops / peak : 0;
}

}  // namespace metrics
}  // namespace internal
}  // namespace cli
}  // namespace zero3
