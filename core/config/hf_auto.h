// Copyright 2026 The zero3 Authors.
//
// hf_auto.h: resolves "auto", the placeholder of configurations written for
// the Hugging Face Trainer, where zero3 knows the value.
//
// The Trainer fills "auto" from its arguments and the model before
// DeepSpeed reads the file (transformers' integrations/deepspeed.py,
// HfTrainerDeepSpeedConfig). zero3 fills the same keys the same way from
// what its caller knows (AutoValues: zero3 train's flags and model):
//
//   train_micro_batch_size_per_gpu      --micro-batch
//   gradient_accumulation_steps         --accumulation
//   train_batch_size                    micro-batch x accumulation x ranks
//   optimizer.params.lr                 --lr
//   scheduler.params.warmup_max_lr      --lr
//   scheduler.params.warmup_min_lr      0
//   scheduler.params.warmup_num_steps   --warmup-steps
//   scheduler.params.total_num_steps    --steps
//   zero_optimization.reduce_bucket_size                  hidden²
//   zero_optimization.stage3_prefetch_bucket_size         0.9·hidden²
//   zero_optimization.stage3_param_persistence_threshold  10·hidden
//   gradient_clipping, optimizer.params.betas, eps, weight_decay,
//   fp16.enabled, bf16.enabled: the Trainer's defaults for the arguments
//   zero3 has no flag for (max_grad_norm 1.0, adam_beta1/2 0.9/0.999,
//   adam_epsilon 1e-8, weight_decay 0.0, fp16/bf16 false).
//
// Each key resolved gets a notice saying how. A key whose value is not
// known stays "auto" and is reported by the loader with AutoHint's fix. As
// the Trainer checks its arguments against numbers in the file, a flag that
// is given and a different number in the file are an error; a flag given
// for a key the file leaves out sets it (micro-batch, accumulation, lr,
// warmup steps).
//
// Thread-compatible: plain functions. Internal to the loader
// (config_loader.h), which takes AutoValues in its LoadOptions.

#ifndef ZERO3_CORE_CONFIG_HF_AUTO_H_
#define ZERO3_CORE_CONFIG_HF_AUTO_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "core/config/diagnostics.h"
#include "core/config/json.h"

namespace zero3 {
namespace config {

// What zero3 train knows for "auto"; unset where it does not.
struct AutoValues {
  std::optional<int64_t> micro_batch;   // --micro-batch
  std::optional<int64_t> accumulation;  // --accumulation
  std::optional<double> lr;             // --lr
  std::optional<int64_t> warmup_steps;  // --warmup-steps
  std::optional<int64_t> steps;         // --steps
  std::optional<int64_t> hidden_size;   // the model's (--model)
};

// Replaces each "auto" in `settings` that `values` (and the ranks,
// `world_size`) determine, and applies the given flags to the keys they
// set, with notices and errors in `diag`.
void ResolveAuto(const AutoValues& values, int64_t world_size,
                 JsonValue* settings, Diagnostics* diag);

// For a key the Trainer fills but zero3 could not: where zero3 train takes
// its value from, and the fix; empty for any other key.
std::string AutoHint(absl::string_view path);

}  // namespace config
}  // namespace zero3

#endif  // ZERO3_CORE_CONFIG_HF_AUTO_H_
