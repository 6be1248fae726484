// Copyright 2026 The zero3 Authors.
//
// checkpoint_export.h: a checkpoint as a Hugging Face model directory, the
// counterpart of DeepSpeed's zero_to_fp32.py (docs/checkpoints.md).
//
// Writes OUT/config.json (Qwen2ForCausalLM or LlamaForCausalLM,
// core/model/hf_config.h) and OUT/model.safetensors (or its shards and
// index above 5 GB): every parameter's
// full fp32 master values gathered from all the ranks' shards, under the
// names transformers uses (core/model/hf_checkpoint.h), as F32 or BF16.
// `zero3 train --model OUT` then starts from exactly these values.
// A plain function; thread-compatible.

#ifndef ZERO3_CORE_ENGINE_CHECKPOINT_EXPORT_H_
#define ZERO3_CORE_ENGINE_CHECKPOINT_EXPORT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "core/engine/checkpoint_manifest.h"
#include "core/kernels/dtype.h"

namespace zero3 {
namespace engine {

// transformers' default max_shard_size ("5GB").
inline constexpr int64_t kMaxHfShardBytes = 5'000'000'000;

// Exports the checkpoint in `step_dir` (its manifest `manifest`; every
// shard's size and checksum is checked first) to `out_dir`, created if
// missing (its parent must exist). A non-empty `out_dir` is an error unless
// `overwrite`, which replaces the model files there (config.json and the
// weights, removing an earlier export's shards and index that the new one
// does not write) and keeps the rest (a tokenizer, say). The files are
// written beside `out_dir` first and moved in at the end, so a failure
// leaves `out_dir` as it was. `dtype` is kF32 or kBF16 (rounded to
// nearest even). Above `max_shard_bytes` the weights go to
// model-0000k-of-0000n.safetensors files with model.safetensors.index.json,
// as transformers writes them; each file is gathered and written in turn,
// so host memory holds one file's tensors at a time. Errors name the file
// or directory.
absl::Status ExportHfDirectory(const std::string& step_dir,
                               const CheckpointManifest& manifest,
                               const std::string& out_dir, kernels::DType dtype,
                               bool overwrite = false,
                               int64_t max_shard_bytes = kMaxHfShardBytes);

// Whether `name` is a file ExportHfDirectory writes: config.json,
// model.safetensors, model-*-of-*.safetensors, model.safetensors.index.json.
bool IsExportedModelFile(const std::string& name);

}  // namespace engine
}  // namespace zero3

#endif  // ZERO3_CORE_ENGINE_CHECKPOINT_EXPORT_H_
