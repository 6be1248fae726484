// Copyright 2026 The zero3 Authors.
//
// hf_config.h: a Hugging Face config.json as a ModelSpec.
//
// Accepted architectures: Qwen2ForCausalLM, LlamaForCausalLM and
// MistralForCausalLM without a sliding window. Read: vocab_size,
// hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
// num_key_value_heads (default: the heads), head_dim (default: hidden /
// heads), rms_norm_eps, tie_word_embeddings (default false, as these
// architectures' configs default it), the RoPE theta - transformers 5's
// rope_parameters {rope_type, rope_theta} or the classic top-level
// rope_theta (default 10000) - and the biases (Qwen2: q, k and v; Llama and
// Mistral: none).
//
// What zero3's transformer does not compute is an error naming the key and
// its value: another architecture, hidden_act other than silu, a RoPE type
// other than default (llama3, yarn, linear, ...), a sliding window in use,
// attention_bias (it adds an o_proj bias) or mlp_bias, attention dropout.
// Keys that do not change the math (dtype, token ids, max_position_embeddings,
// initializer_range, ...) are ignored. All errors are InvalidArgument.

#ifndef ZERO3_CORE_MODEL_HF_CONFIG_H_
#define ZERO3_CORE_MODEL_HF_CONFIG_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/config/json.h"
#include "core/model/model_spec.pb.h"

namespace zero3 {
namespace model {

// The spec of `config` (a parsed config.json; `path` names it in errors),
// named `name`, validated (ValidateModelSpec).
absl::StatusOr<ModelSpec> ModelSpecFromHfConfig(const config::JsonValue& config,
                                                absl::string_view path,
                                                absl::string_view name);

// Reads and maps `path` (a config.json). NotFound when it cannot be read.
absl::StatusOr<ModelSpec> LoadHfConfig(const std::string& path,
                                       absl::string_view name);

// A preset, a text-format ModelSpec file, a Hugging Face config.json (a
// path ending in ".json", named after its directory), or a Hugging Face
// model directory (its config.json): the shape alone, without weights (the
// engine then initializes them from its seed; what-if studies need no
// more).
absl::StatusOr<ModelSpec> LoadModelSpecOrHfConfig(
    const std::string& name_or_path);

// The config.json of `spec` (the inverse of ModelSpecFromHfConfig):
// Qwen2ForCausalLM when it has q/k/v biases, else LlamaForCausalLM, with
// `torch_dtype` as the weights' dtype ("float32", "bfloat16").
config::JsonValue HfConfigFromModelSpec(const ModelSpec& spec,
                                        absl::string_view torch_dtype);

}  // namespace model
}  // namespace zero3

#endif  // ZERO3_CORE_MODEL_HF_CONFIG_H_
