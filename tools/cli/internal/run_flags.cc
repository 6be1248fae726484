// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/run_flags.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/model/presets.h"
#include "tools/cli/flag_limits.h"

namespace zero3 {
namespace cli {
namespace internal {

void RunFlags::Define(FlagSet& flags) {
  flags.AddString("backend", &backend_name_, "NAME",
                  "sim (the simulated device) or cuda (GPUs)");
  flags.AddString(
      "model", &model_, "NAME|FILE|DIR",
      absl::StrCat("a preset (", absl::StrJoin(model::PresetNames(), ", "),
                   "), a text-format ModelSpec file, or a Hugging Face "
                   "checkpoint directory (config.json and "
                   "model.safetensors or its shards: Qwen2, Qwen3, "
                   "Llama, Mistral, Phi-3, OLMo 2, Gemma 2 and 3; "
                   "docs/models.md)"));
  flags.AddString("config", &config_, "FILE",
                  "a DeepSpeed JSON or zero3 text-format configuration");
  flags.AddRepeated("set", &overrides_, "KEY=VALUE",
                    "override a configuration key (DeepSpeed's dotted "
                    "names), e.g. zero3.grad_offload=blocking");
  flags.AddInt("ranks", &ranks_, "N", "data-parallel ranks (simulated)",
               kRanksRange);
  flags.AddInt("steps", &steps_, "N", "optimizer steps", kStepsRange);
  flags.AddInt("seq", &seq_, "N", "tokens per sequence", kSeqRange);
  flags.AddInt("seed", &seed_, "N", "seed for initialization and data");
  flags.AddBool("gradient-checkpointing", &gradient_checkpointing_,
                "recompute every decoder layer's forward in backward "
                "instead of keeping its activations, as Hugging Face's "
                "gradient_checkpointing (sets "
                "zero3.activation_checkpoint_interval=1 before --set; "
                "without zero3.lm_head_chunk_tokens, also chunks the LM "
                "head by 4096 tokens where that takes less memory)");
  flags.AddString("max-pinned-bytes", &max_pinned_bytes_, "N",
                  "pinned host memory one rank may hold "
                  "(zero3.max_pinned_bytes; default: half of this node's "
                  "host memory shared by its ranks)");
}

absl::Status RunFlags::Check() {
  absl::StatusOr<Backend> backend = BackendNamed(backend_name_);
  if (!backend.ok()) return backend.status();
  backend_ = *backend;
  if (ranks_ < 1 || steps_ < 1) {
    return absl::InvalidArgumentError("--ranks and --steps must be at least 1");
  }
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace cli
}  // namespace zero3
