// Copyright 2026 The zero3 Authors.

#include "core/config/fallbacks.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/config/json.h"
#include "core/config/modes.h"

namespace zero3 {
namespace config {

void NoticeExplicitSettings(Config* config, Diagnostics* diag) {
  const ZeroOptimization& zero = config->zero_optimization();
  if (!zero.has_stage() && !diag->IsPoisoned("zero_optimization.stage")) {
    diag->Notice("zero_optimization.stage",
                 "not given; zero3 runs ZeRO stage 3 (DeepSpeed's default "
                 "would be 0, no partitioning)");
  }
  const OffloadOptimizer& opt = zero.offload_optimizer();
  const OffloadParam& param = zero.offload_param();
  const std::string o = "zero_optimization.offload_optimizer.";
  const std::string p = "zero_optimization.offload_param.";
  if (opt.device() == "nvme") {
    const std::string always =
        "changes nothing in zero3: the optimizer state on NVMe is always "
        "read ahead of its step and written back beside the next piece's; "
        "ignored";
    if (opt.has_pipeline_read()) diag->Notice(o + "pipeline_read", always);
    if (opt.has_pipeline_write()) diag->Notice(o + "pipeline_write", always);
    if (opt.has_fast_init()) {
      diag->Notice(o + "fast_init",
                   "changes nothing in zero3: the swap file is written once "
                   "at start-up, in large transfers; ignored");
    }
  } else {
    const std::string nvme_only =
        "used by NVMe offload (device \"nvme\") only; ignored";
    if (opt.has_nvme_path()) diag->Notice(o + "nvme_path", nvme_only);
    if (opt.has_buffer_count()) diag->Notice(o + "buffer_count", nvme_only);
    if (opt.has_pipeline_read()) {
      diag->Notice(o + "pipeline_read", nvme_only);
    }
    if (opt.has_pipeline_write()) {
      diag->Notice(o + "pipeline_write", nvme_only);
    }
    if (opt.has_fast_init()) diag->Notice(o + "fast_init", nvme_only);
  }
  if (param.device() == "nvme") {
    if (param.has_max_in_cpu()) {
      diag->Notice(p + "max_in_cpu",
                   "changes nothing in zero3: parameters on NVMe stay there, "
                   "only the partitions about to be gathered are in host "
                   "memory (offload_param.buffer_count windows); ignored");
    }
  } else {
    const std::string param_nvme =
        "used by parameters on NVMe (device \"nvme\") only; ignored";
    if (param.has_nvme_path()) diag->Notice(p + "nvme_path", param_nvme);
    if (param.has_buffer_count()) diag->Notice(p + "buffer_count", param_nvme);
    if (param.has_buffer_size()) diag->Notice(p + "buffer_size", param_nvme);
    if (param.has_max_in_cpu()) diag->Notice(p + "max_in_cpu", param_nvme);
  }
  const std::string z = "zero_optimization.";
  if (zero.has_contiguous_gradients()) {
    diag->Notice(z + "contiguous_gradients",
                 "changes nothing in zero3: gradients always go through the "
                 "preallocated reduce bucket (reduce_bucket_size); ignored");
  }
  if (zero.has_reduce_scatter()) {
    diag->Notice(z + "reduce_scatter",
                 "changes nothing in zero3: gradients are always "
                 "reduce-scattered, which gives each rank the same averages "
                 "as an all-reduce; ignored");
  }
  if (zero.has_stage3_model_persistence_threshold()) {
    diag->Notice(z + "stage3_model_persistence_threshold",
                 "changes nothing in zero3: parameters stay gathered by "
                 "stage3_param_persistence_threshold alone, with no cap on "
                 "their total; ignored");
  }
  if (zero.stage3_gather_16bit_weights_on_model_save()) {
    diag->Notice("zero_optimization.stage3_gather_16bit_weights_on_model_save",
                 "zero3 does not save consolidated 16-bit model weights "
                 "yet (train --save writes sharded fp32 checkpoints); kept "
                 "in the configuration, no effect for now");
  }
  // Optimizer type: case-insensitive as in DeepSpeed, printed canonically.
  if (config->has_optimizer() && config->optimizer().has_type()) {
    const std::string lower = absl::AsciiStrToLower(config->optimizer().type());
    if (lower == "adam") config->mutable_optimizer()->set_type("Adam");
    if (lower == "adamw") config->mutable_optimizer()->set_type("AdamW");
  }
  const Optimizer& optimizer = config->optimizer();
  if (optimizer.type() == "AdamW" && optimizer.params().has_adam_w_mode() &&
      !optimizer.params().adam_w_mode()) {
    diag->Notice("optimizer.params.adam_w_mode",
                 "false has no effect with type \"AdamW\", which always "
                 "decouples weight decay (as in DeepSpeed); read as true. "
                 "For L2 weight decay, use type \"Adam\" with adam_w_mode "
                 "false");
    config->mutable_optimizer()->mutable_params()->set_adam_w_mode(true);
  }
}

void ApplyFallbacks(Config* config, Diagnostics* diag) {
  const ZeroOptimization* zero = &config->zero_optimization();
  const Modes modes = ModesOf(*config);
  if (modes.offload_optimizer != OffloadDevice::kNone &&
      !zero->offload_optimizer().pin_memory() &&
      modes.grad_offload == GradOffload::kAsync) {
    diag->Notice("zero3.grad_offload",
                 "\"async\" with offload_optimizer.pin_memory false: a "
                 "copy into pageable host memory blocks the host thread "
                 "until it completes, so the gradient copies will not "
                 "overlap the backward pass (see docs/config.md)");
  }
}

}  // namespace config
}  // namespace zero3
