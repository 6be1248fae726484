// Copyright 2026 The zero3 Authors.
//
// checkpoint_export.h: a checkpoint as a Hugging Face model directory, the
// counterpart of DeepSpeed's zero_to_fp32.py (docs/checkpoints.md).
//
// Writes OUT/config.json (Qwen2ForCausalLM or LlamaForCausalLM,
// core/model/hf_config.h) and OUT/model.safetensors: every parameter's
// full fp32 master values gathered from all the ranks' shards, under the
// names transformers uses (core/model/hf_checkpoint.h), as F32 or BF16.
// `zero3 train --model OUT` then starts from exactly these values.
// A plain function; thread-compatible.

#ifndef ZERO3_CORE_ENGINE_CHECKPOINT_EXPORT_H_
#define ZERO3_CORE_ENGINE_CHECKPOINT_EXPORT_H_

#include <string>

#include "absl/status/status.h"
#include "core/engine/checkpoint_manifest.h"
#include "core/kernels/dtype.h"

namespace zero3 {
namespace engine {

// Exports the checkpoint in `step_dir` (its manifest `manifest`; every
// shard's size and checksum is checked first) to `out_dir`, created if
// missing (its parent must exist). `dtype` is kF32 or kBF16 (rounded to
// nearest even). Errors name the file or directory.
absl::Status ExportHfDirectory(const std::string& step_dir,
                               const CheckpointManifest& manifest,
                               const std::string& out_dir,
                               kernels::DType dtype);

}  // namespace engine
}  // namespace zero3

#endif  // ZERO3_CORE_ENGINE_CHECKPOINT_EXPORT_H_
