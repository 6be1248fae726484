// Copyright 2026 The zero3 Authors.
//
// model_flops.h: the model FLOPs of a training step, for MFU.
//
// Model FLOPs count what the model needs, not what the kernels execute
// (no recomputation, no causal-mask savings), in the usual convention
// (Chowdhery et al., PaLM, appendix B; nanoGPT's estimate_mfu):
//
//   FLOPs per step = tokens * (6 * N + 12 * L * H * D * S)
//
// tokens: trained on by all ranks in the step; N: the parameters that take
// part in matrix products, i.e. every parameter except the input embedding
// table, which is a lookup (a tied table is counted once, as the output
// layer); L layers, H query heads of width D, S tokens per sequence. 6N is a
// forward and backward matrix product per weight (2 + 4 FLOPs); 12·L·H·D·S
// is attention's two products per layer (Q·Kᵀ and P·V, 2·S·H·D each per
// token, times 3 for forward and backward), over the full S×S score matrix.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_METRICS_MODEL_FLOPS_H_
#define ZERO3_TOOLS_CLI_INTERNAL_METRICS_MODEL_FLOPS_H_

#include <cstdint>

#include "core/model/model_spec.pb.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace metrics {

// N above: model::ParameterCount without the untied input embedding.
int64_t MatmulParameterCount(const model::ModelSpec& spec);

// The formula above. `spec` has head_dim filled in (model::LoadModelSpec).
double TrainingFlops(const model::ModelSpec& spec, int64_t seq, int64_t tokens);

// Model FLOPs utilization: `flops` done in `seconds` by `gpus` devices
// against their peak of `peak_tflops` each; 0 when the time is not positive.
double Mfu(double flops, double seconds, int gpus, double peak_tflops);

}  // namespace metrics
}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_METRICS_MODEL_FLOPS_H_
