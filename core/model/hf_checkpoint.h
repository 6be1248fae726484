// Copyright 2026 The zero3 Authors.
//
// hf_checkpoint.h: a Hugging Face checkpoint directory as a ParamSource.
//
// The directory holds config.json (core/model/hf_config.h) and either
// model.safetensors or shards model-0000k-of-0000n.safetensors listed by
// model.safetensors.index.json ({"weight_map": {tensor: file}}). Tensor
// names map onto the transformer's parameters as transformers names them:
//
//   model.embed_tokens.weight                      embed_tokens
//   model.layers.N.input_layernorm.weight          layers.N.input_layernorm
//   model.layers.N.self_attn.{q,k,v,o}_proj.weight
//   layers.N.{q,k,v,o}_proj.weight model.layers.N.self_attn.{q,k,v}_proj.bias
//   layers.N.{q,k,v}_proj.bias model.layers.N.post_attention_layernorm.weight
//   layers.N.post_attention_layernorm
//   model.layers.N.mlp.{gate,up,down}_proj.weight
//   layers.N.{gate,up,down}_proj.weight model.norm.weight norm lm_head.weight
//   lm_head (untied models only)
//
// Qwen3 and OLMo 2 add model.layers.N.self_attn.{q,k}_norm.weight; OLMo 2
// names its norms post_attention_layernorm (after attention) and
// post_feedforward_layernorm (after the MLP). Phi-3 stores q, k and v as
// rows of one model.layers.N.self_attn.qkv_proj.weight and gate and up as
// rows of model.layers.N.mlp.gate_up_proj.weight: each parameter is its rows
// of the fused tensor (HfTensorsOf).
//
// Matrices are [out, in] in both (nn.Linear's layout), vectors 1-D, so
// element i of a tensor is element i of its parameter (of its rows, for a
// fused one). F32, BF16 and F16
// tensors are converted exactly to fp32.
//
// Open reads config.json and the safetensors headers only, and checks every
// tensor against the model config.json describes: a missing or extra tensor,
// a wrong shape or an unsupported dtype is an InvalidArgument error naming
// the file and the tensor. Nothing larger than a header is allocated.
// Fill then reads just the byte range asked for (pread), so a rank that
// fills its own partitions reads only those.
//
// Immutable after Open apart from the read statistics; thread-safe.

#ifndef ZERO3_CORE_MODEL_HF_CHECKPOINT_H_
#define ZERO3_CORE_MODEL_HF_CHECKPOINT_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/io/safetensors.h"
#include "core/model/model_spec.pb.h"
#include "core/model/param_source.h"
#include "core/model/transformer.h"

namespace zero3 {
namespace model {

// Whether `path` names a directory (a checkpoint rather than a spec file).
bool IsDirectory(const std::string& path);

// The transformers name of parameter `param_name` of an unfused model (see
// the file comment).
std::string HfTensorName(const std::string& param_name);

// One tensor of a transformers file: its name and shape, and the parameters
// it holds, one after another by rows (one, except fused projections).
struct HfTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<int> params;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

// The tensors of a model of `spec` with parameters `params` (ModelParams),
// in parameter order.
std::vector<HfTensor> HfTensorsOf(const ModelSpec& spec,
                                  const std::vector<ParamInfo>& params);

class HfCheckpoint : public ParamSource {
 public:
  // Opens and checks the checkpoint in `dir` (see the file comment).
  // NotFound when config.json or the weights are missing.
  static absl::StatusOr<std::unique_ptr<HfCheckpoint>> Open(
      const std::string& dir);

  // The model config.json describes; its name is the directory's.
  const ModelSpec& spec() const { return spec_; }
  std::string description() const override;
  absl::Status Fill(const ParamInfo& param, int64_t offset, int64_t n,
                    float* out) const override;

  // What Fill has read since Open: bytes read from the files, and the
  // largest host buffer one call allocated (0 for fp32 tensors, which are
  // read straight into the output).
  struct ReadStats {
    int64_t bytes_read = 0;
    int64_t largest_buffer = 0;
  };
  ReadStats read_stats() const;

 private:
  struct Tensor {
    const io::SafetensorsFile* file = nullptr;
    const io::TensorEntry* entry = nullptr;
    int64_t first = 0;  // the parameter's first element in the tensor
  };
  explicit HfCheckpoint(std::string dir) : dir_(std::move(dir)) {}
  absl::Status OpenFiles();
  absl::Status MapTensors();

  std::string dir_;
  ModelSpec spec_;
  std::vector<std::unique_ptr<io::SafetensorsFile>> files_;
  // The index's file of each tensor; empty for a single file.
  std::vector<std::pair<std::string, std::string>> weight_map_;
  std::vector<Tensor> params_;  // by parameter id
  mutable std::atomic<int64_t> bytes_read_{0};
  mutable std::atomic<int64_t> largest_buffer_{0};
};

}  // namespace model
}  // namespace zero3

#endif  // ZERO3_CORE_MODEL_HF_CHECKPOINT_H_
