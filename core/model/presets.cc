// Copyright 2026 The zero3 Authors.

#include "core/model/presets.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/model/rope.h"
#include "core/util/text_proto.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace zero3 {
namespace model {
namespace {

struct Preset {
  const char* name;
  const char* text;
};

// Shapes from each model's config.json on Hugging Face (Qwen/Qwen2.5-*,
// Qwen/Qwen3-*, meta-llama/Llama-3.2-*, Llama-3.1-8B, Meta-Llama-3-70B,
// microsoft/Phi-3-mini-4k-instruct, allenai/OLMo-2-0425-1B and
// OLMo-2-1124-7B, google/gemma-2-*, google/gemma-3-1b-pt and the text
// models of google/gemma-3-4b-pt and -12b-pt); the counts are
// transformers' num_parameters() of each.
constexpr Preset kPresets[] = {
    {"tiny", R"pb(
       vocab_size: 259
       hidden_size: 36
       intermediate_size: 70
       num_layers: 2
       num_heads: 6
       num_kv_heads: 2
       rope_theta: 10000
       tie_word_embeddings: false
     )pb"},
    {"tiny-tied", R"pb(
       vocab_size: 259
       hidden_size: 36
       intermediate_size: 70
       num_layers: 2
       num_heads: 6
       num_kv_heads: 2
       rope_theta: 10000
       tie_word_embeddings: true
     )pb"},
    // 494,032,768 parameters.
    {"qwen2.5-0.5b", R"pb(
       vocab_size: 151936
       hidden_size: 896
       intermediate_size: 4864
       num_layers: 24
       num_heads: 14
       num_kv_heads: 2
       tie_word_embeddings: true
     )pb"},
    // 1,543,714,304 parameters.
    {"qwen2.5-1.5b", R"pb(
       vocab_size: 151936
       hidden_size: 1536
       intermediate_size: 8960
       num_layers: 28
       num_heads: 12
       num_kv_heads: 2
       tie_word_embeddings: true
     )pb"},
    // 3,085,938,688 parameters.
    {"qwen2.5-3b", R"pb(
       vocab_size: 151936
       hidden_size: 2048
       intermediate_size: 11008
       num_layers: 36
       num_heads: 16
       num_kv_heads: 2
       tie_word_embeddings: true
     )pb"},
    // 7,615,616,512 parameters.
    {"qwen2.5-7b", R"pb(
       vocab_size: 152064
       hidden_size: 3584
       intermediate_size: 18944
       num_layers: 28
       num_heads: 28
       num_kv_heads: 4
       tie_word_embeddings: false
     )pb"},
    // 72,706,203,648 parameters.
    {"qwen2.5-72b", R"pb(
       vocab_size: 152064
       hidden_size: 8192
       intermediate_size: 29568
       num_layers: 80
       num_heads: 64
       num_kv_heads: 8
       tie_word_embeddings: false
     )pb"},
    // 1,235,814,400 parameters (transformers, LlamaForCausalLM); llama3 RoPE.
    {"llama-3.2-1b", R"pb(
       hf_architecture: "LlamaForCausalLM"
       vocab_size: 128256
       hidden_size: 2048
       intermediate_size: 8192
       num_layers: 16
       num_heads: 32
       num_kv_heads: 8
       head_dim: 64
       rope_theta: 500000
       rms_norm_eps: 1e-5
       max_position_embeddings: 131072
       rope_scaling {
         type: LLAMA3
         factor: 32
         low_freq_factor: 1
         high_freq_factor: 4
         original_max_position_embeddings: 8192
       }
       tie_word_embeddings: true
       qkv_bias: false
     )pb"},
    // 3,212,749,824 parameters (transformers, LlamaForCausalLM); llama3 RoPE.
    {"llama-3.2-3b", R"pb(
       hf_architecture: "LlamaForCausalLM"
       vocab_size: 128256
       hidden_size: 3072
       intermediate_size: 8192
       num_layers: 28
       num_heads: 24
       num_kv_heads: 8
       head_dim: 128
       rope_theta: 500000
       rms_norm_eps: 1e-5
       max_position_embeddings: 131072
       rope_scaling {
         type: LLAMA3
         factor: 32
         low_freq_factor: 1
         high_freq_factor: 4
         original_max_position_embeddings: 8192
       }
       tie_word_embeddings: true
       qkv_bias: false
     )pb"},
    // 8,030,261,248 parameters (transformers, LlamaForCausalLM); llama3 RoPE.
    {"llama-3.1-8b", R"pb(
       hf_architecture: "LlamaForCausalLM"
       vocab_size: 128256
       hidden_size: 4096
       intermediate_size: 14336
       num_layers: 32
       num_heads: 32
       num_kv_heads: 8
       head_dim: 128
       rope_theta: 500000
       rms_norm_eps: 1e-5
       max_position_embeddings: 131072
       rope_scaling {
         type: LLAMA3
         factor: 8
         low_freq_factor: 1
         high_freq_factor: 4
         original_max_position_embeddings: 8192
       }
       tie_word_embeddings: false
       qkv_bias: false
     )pb"},
    // 596,049,920 parameters (transformers, Qwen3ForCausalLM).
    {"qwen3-0.6b", R"pb(
       hf_architecture: "Qwen3ForCausalLM"
       vocab_size: 151936
       hidden_size: 1024
       intermediate_size: 3072
       num_layers: 28
       num_heads: 16
       num_kv_heads: 8
       head_dim: 128
       max_position_embeddings: 40960
       qk_norm: QK_NORM_PER_HEAD
       tie_word_embeddings: true
       qkv_bias: false
     )pb"},
    // 1,720,574,976 parameters (transformers, Qwen3ForCausalLM).
    {"qwen3-1.7b", R"pb(
       hf_architecture: "Qwen3ForCausalLM"
       vocab_size: 151936
       hidden_size: 2048
       intermediate_size: 6144
       num_layers: 28
       num_heads: 16
       num_kv_heads: 8
       head_dim: 128
       max_position_embeddings: 40960
       qk_norm: QK_NORM_PER_HEAD
       tie_word_embeddings: true
       qkv_bias: false
     )pb"},
    // 4,022,468,096 parameters (transformers, Qwen3ForCausalLM).
    {"qwen3-4b", R"pb(
       hf_architecture: "Qwen3ForCausalLM"
       vocab_size: 151936
       hidden_size: 2560
       intermediate_size: 9728
       num_layers: 36
       num_heads: 32
       num_kv_heads: 8
       head_dim: 128
       max_position_embeddings: 40960
       qk_norm: QK_NORM_PER_HEAD
       tie_word_embeddings: true
       qkv_bias: false
     )pb"},
    // 8,190,735,360 parameters (transformers, Qwen3ForCausalLM).
    {"qwen3-8b", R"pb(
       hf_architecture: "Qwen3ForCausalLM"
       vocab_size: 151936
       hidden_size: 4096
       intermediate_size: 12288
       num_layers: 36
       num_heads: 32
       num_kv_heads: 8
       head_dim: 128
       max_position_embeddings: 40960
       qk_norm: QK_NORM_PER_HEAD
       tie_word_embeddings: false
       qkv_bias: false
     )pb"},
    // 14,768,307,200 parameters (transformers, Qwen3ForCausalLM).
    {"qwen3-14b", R"pb(
       hf_architecture: "Qwen3ForCausalLM"
       vocab_size: 151936
       hidden_size: 5120
       intermediate_size: 17408
       num_layers: 40
       num_heads: 40
       num_kv_heads: 8
       head_dim: 128
       max_position_embeddings: 40960
       qk_norm: QK_NORM_PER_HEAD
       tie_word_embeddings: false
       qkv_bias: false
     )pb"},
    // 32,762,123,264 parameters (transformers, Qwen3ForCausalLM).
    {"qwen3-32b", R"pb(
       hf_architecture: "Qwen3ForCausalLM"
       vocab_size: 151936
       hidden_size: 5120
       intermediate_size: 25600
       num_layers: 64
       num_heads: 64
       num_kv_heads: 8
       head_dim: 128
       max_position_embeddings: 40960
       qk_norm: QK_NORM_PER_HEAD
       tie_word_embeddings: false
       qkv_bias: false
     )pb"},
    // 3,821,079,552 parameters (transformers, Phi3ForCausalLM): fused
    // qkv_proj and gate_up_proj, a 2047-token window.
    {"phi-3-mini", R"pb(
       hf_architecture: "Phi3ForCausalLM"
       vocab_size: 32064
       hidden_size: 3072
       intermediate_size: 8192
       num_layers: 32
       num_heads: 32
       num_kv_heads: 32
       rope_theta: 10000
       rms_norm_eps: 1e-5
       max_position_embeddings: 4096
       sliding_window: 2047
       fused_projections: true
       tie_word_embeddings: false
       qkv_bias: false
     )pb"},
    // 1,484,916,736 parameters (transformers, Olmo2ForCausalLM).
    {"olmo-2-1b", R"pb(
       hf_architecture: "Olmo2ForCausalLM"
       vocab_size: 100352
       hidden_size: 2048
       intermediate_size: 8192
       num_layers: 16
       num_heads: 16
       num_kv_heads: 16
       rope_theta: 500000
       max_position_embeddings: 4096
       qk_norm: QK_NORM_WHOLE
       norm_placement: NORM_POST
       tie_word_embeddings: false
       qkv_bias: false
     )pb"},
    // 7,298,617,344 parameters (transformers, Olmo2ForCausalLM).
    {"olmo-2-7b", R"pb(
       hf_architecture: "Olmo2ForCausalLM"
       vocab_size: 100352
       hidden_size: 4096
       intermediate_size: 11008
       num_layers: 32
       num_heads: 32
       num_kv_heads: 32
       rope_theta: 500000
       max_position_embeddings: 4096
       qk_norm: QK_NORM_WHOLE
       norm_placement: NORM_POST
       tie_word_embeddings: false
       qkv_bias: false
     )pb"},
    // 2,614,341,888 parameters (transformers, Gemma2ForCausalLM).
    {"gemma-2-2b", R"pb(
       hf_architecture: "Gemma2ForCausalLM"
       vocab_size: 256000
       hidden_size: 2304
       intermediate_size: 9216
       num_layers: 26
       num_heads: 8
       num_kv_heads: 4
       head_dim: 256
       rope_theta: 10000
       max_position_embeddings: 8192
       sliding_window: 4096
       sliding_layers: [
         true,  false, true,  false, true,  false, true,  false, true,
         false, true,  false, true,  false, true,  false, true,  false,
         true,  false, true,  false, true,  false, true,  false
       ]
       norm_placement: NORM_SANDWICH
       norm_unit_offset: true
       mlp_activation: GELU_TANH
       scale_embeddings: true
       query_pre_attn_scalar: 256
       attn_logit_softcapping: 50
       final_logit_softcapping: 30
       tie_word_embeddings: true
       qkv_bias: false
     )pb"},
    // 9,241,705,984 parameters (transformers, Gemma2ForCausalLM).
    {"gemma-2-9b", R"pb(
       hf_architecture: "Gemma2ForCausalLM"
       vocab_size: 256000
       hidden_size: 3584
       intermediate_size: 14336
       num_layers: 42
       num_heads: 16
       num_kv_heads: 8
       head_dim: 256
       rope_theta: 10000
       max_position_embeddings: 8192
       sliding_window: 4096
       sliding_layers: [
         true,  false, true,  false, true,  false, true,  false, true,
         false, true,  false, true,  false, true,  false, true,  false,
         true,  false, true,  false, true,  false, true,  false, true,
         false, true,  false, true,  false, true,  false, true,  false,
         true,  false, true,  false, true,  false
       ]
       norm_placement: NORM_SANDWICH
       norm_unit_offset: true
       mlp_activation: GELU_TANH
       scale_embeddings: true
       query_pre_attn_scalar: 256
       attn_logit_softcapping: 50
       final_logit_softcapping: 30
       tie_word_embeddings: true
       qkv_bias: false
     )pb"},
    // 999,885,952 parameters (transformers, Gemma3ForCausalLM).
    {"gemma-3-1b", R"pb(
       hf_architecture: "Gemma3ForCausalLM"
       vocab_size: 262144
       hidden_size: 1152
       intermediate_size: 6912
       num_layers: 26
       num_heads: 4
       num_kv_heads: 1
       head_dim: 256
       rope_theta: 1000000
       local_rope_theta: 10000
       max_position_embeddings: 32768
       sliding_window: 512
       sliding_layers: [
         true, true, true,  true, true, false, true, true, true,
         true, true, false, true, true, true,  true, true, false,
         true, true, true,  true, true, false, true, true
       ]
       qk_norm: QK_NORM_PER_HEAD
       norm_placement: NORM_SANDWICH
       norm_unit_offset: true
       mlp_activation: GELU_TANH
       scale_embeddings: true
       query_pre_attn_scalar: 256
       tie_word_embeddings: true
       qkv_bias: false
     )pb"},
    // 3,880,263,168 parameters (transformers, Gemma3ForCausalLM, the text
    // model).
    {"gemma-3-4b", R"pb(
       hf_architecture: "Gemma3ForCausalLM"
       vocab_size: 262208
       hidden_size: 2560
       intermediate_size: 10240
       num_layers: 34
       num_heads: 8
       num_kv_heads: 4
       head_dim: 256
       rope_theta: 1000000
       rope_scaling { type: LINEAR factor: 8 }
       local_rope_theta: 10000
       max_position_embeddings: 131072
       sliding_window: 1024
       sliding_layers: [
         true, true, true,  true, true, false, true, true, true,
         true, true, false, true, true, true,  true, true, false,
         true, true, true,  true, true, false, true, true, true,
         true, true, false, true, true, true,  true
       ]
       qk_norm: QK_NORM_PER_HEAD
       norm_placement: NORM_SANDWICH
       norm_unit_offset: true
       mlp_activation: GELU_TANH
       scale_embeddings: true
       query_pre_attn_scalar: 256
       tie_word_embeddings: true
       qkv_bias: false
     )pb"},
    // 11,766,034,176 parameters (transformers, Gemma3ForCausalLM, the text
    // model).
    {"gemma-3-12b", R"pb(
       hf_architecture: "Gemma3ForCausalLM"
       vocab_size: 262208
       hidden_size: 3840
       intermediate_size: 15360
       num_layers: 48
       num_heads: 16
       num_kv_heads: 8
       head_dim: 256
       rope_theta: 1000000
       rope_scaling { type: LINEAR factor: 8 }
       local_rope_theta: 10000
       max_position_embeddings: 131072
       sliding_window: 1024
       sliding_layers: [
         true, true,  true, true,  true, false, true, true,  true, true,
         true, false, true, true,  true, true,  true, false, true, true,
         true, true,  true, false, true, true,  true, true,  true, false,
         true, true,  true, true,  true, false, true, true,  true, true,
         true, false, true, true,  true, true,  true, false
       ]
       qk_norm: QK_NORM_PER_HEAD
       norm_placement: NORM_SANDWICH
       norm_unit_offset: true
       mlp_activation: GELU_TANH
       scale_embeddings: true
       query_pre_attn_scalar: 256
       tie_word_embeddings: true
       qkv_bias: false
     )pb"},
    // 70,553,706,496 parameters; no biases, RoPE theta 500000 (Llama 3).
    {"llama-3-70b", R"pb(
       vocab_size: 128256
       hidden_size: 8192
       intermediate_size: 28672
       num_layers: 80
       num_heads: 64
       num_kv_heads: 8
       rope_theta: 500000
       rms_norm_eps: 1e-5
       tie_word_embeddings: false
       qkv_bias: false
     )pb"},
};

absl::StatusOr<ModelSpec> Parse(absl::string_view text,
                                absl::string_view what) {
  ModelSpec spec;
  std::vector<TextProtoError> errors;
  if (!ReadTextProto(text, &spec, &errors)) {
    return absl::InvalidArgumentError(
        absl::StrCat("model spec ", what, ": ",
                     errors.empty() ? "" : errors.front().InText()));
  }
  return spec;
}

}  // namespace

std::vector<std::string> PresetNames() {
  std::vector<std::string> names;
  for (const Preset& p : kPresets) names.push_back(p.name);
  return names;
}

namespace {

// The first double field of `m` (nested messages included) that is not
// finite, as "name value"; "" when all are.
std::string NonFiniteField(const google::protobuf::Message& m) {
  const google::protobuf::Descriptor* d = m.GetDescriptor();
  const google::protobuf::Reflection* r = m.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = d->field(i);
    using FD = google::protobuf::FieldDescriptor;
    if (f->cpp_type() == FD::CPPTYPE_MESSAGE && !f->is_repeated() &&
        r->HasField(m, f)) {
      const std::string inner = NonFiniteField(r->GetMessage(m, f));
      if (!inner.empty()) return absl::StrCat(f->name(), ".", inner);
    }
    if (f->cpp_type() != FD::CPPTYPE_DOUBLE) continue;
    const int n = f->is_repeated() ? r->FieldSize(m, f) : 1;
    for (int k = 0; k < n; ++k) {
      const double v =
          f->is_repeated() ? r->GetRepeatedDouble(m, f, k) : r->GetDouble(m, f);
      if (!std::isfinite(v)) return absl::StrCat(f->name(), " ", v);
    }
  }
  return "";
}

}  // namespace

absl::Status ValidateModelSpec(const ModelSpec& s) {
  const std::string non_finite = NonFiniteField(s);
  if (!non_finite.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("model spec: ", non_finite, " is not a finite number"));
  }
  auto positive = [](int64_t v, const char* field) -> absl::Status {
    if (v > 0) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("model spec: ", field, " must be positive, got ", v));
  };
  // The upper bounds lie far past any released model (Llama 3.1 405B:
  // hidden 16384, 126 layers) and keep every parameter count, and their sum,
  // within int64.
  auto within = [](int64_t v, int64_t max, const char* field) -> absl::Status {
    if (v <= max) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        "model spec: ", field, " must be at most ", max, ", got ", v));
  };
  for (const absl::Status& st :
       {positive(s.vocab_size(), "vocab_size"),
        positive(s.hidden_size(), "hidden_size"),
        positive(s.intermediate_size(), "intermediate_size"),
        positive(s.num_layers(), "num_layers"),
        positive(s.num_heads(), "num_heads"),
        positive(s.num_kv_heads(), "num_kv_heads"),
        positive(s.head_dim(), "head_dim"),
        within(s.vocab_size(), int64_t{1} << 23, "vocab_size"),
        within(s.hidden_size(), int64_t{1} << 18, "hidden_size"),
        within(s.intermediate_size(), int64_t{1} << 20, "intermediate_size"),
        within(s.num_layers(), int64_t{1} << 12, "num_layers"),
        within(s.num_heads(), int64_t{1} << 12, "num_heads"),
        within(s.num_kv_heads(), int64_t{1} << 12, "num_kv_heads"),
        within(s.head_dim(), int64_t{1} << 12, "head_dim")}) {
    if (!st.ok()) return st;
  }
  if (s.num_heads() % s.num_kv_heads() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model spec: num_heads (", s.num_heads(),
        ") must be a multiple of num_kv_heads (", s.num_kv_heads(), ")"));
  }
  if (s.head_dim() % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model spec: head_dim must be even for rotary embeddings, got ",
        s.head_dim()));
  }
  const auto finite_positive = [](double v) {
    return v > 0 && std::isfinite(v);
  };
  if (!finite_positive(s.rope_theta()) || !finite_positive(s.rms_norm_eps()) ||
      !finite_positive(s.init_std())) {
    return absl::InvalidArgumentError(
        "model spec: rope_theta, rms_norm_eps and init_std must be positive "
        "and finite");
  }
  if (s.sliding_window() < 0 || s.max_position_embeddings() < 0) {
    return absl::InvalidArgumentError(
        "model spec: sliding_window and max_position_embeddings must not be "
        "negative");
  }
  if (s.attn_logit_softcapping() < 0 || s.final_logit_softcapping() < 0 ||
      s.query_pre_attn_scalar() < 0 || s.local_rope_theta() < 0) {
    return absl::InvalidArgumentError(
        "model spec: query_pre_attn_scalar, attn_logit_softcapping, "
        "final_logit_softcapping and local_rope_theta must not be negative "
        "(unset or 0: not used)");
  }
  if (s.sliding_layers_size() != 0 &&
      s.sliding_layers_size() != s.num_layers()) {
    return absl::InvalidArgumentError(
        absl::StrCat("model spec: sliding_layers has ", s.sliding_layers_size(),
                     " entries, one per layer is ", s.num_layers()));
  }
  const absl::Status rope = ValidateRope(s);
  if (!rope.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("model spec: ", rope.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<ModelSpec> LoadModelSpec(absl::string_view name_or_path) {
  ModelSpec spec;
  bool found = false;
  for (const Preset& p : kPresets) {
    if (name_or_path == p.name) {
      auto parsed = Parse(p.text, p.name);
      if (!parsed.ok()) return parsed.status();
      spec = *parsed;
      spec.set_name(p.name);
      found = true;
    }
  }
  if (!found) {
    std::ifstream in{std::string(name_or_path)};
    if (!in) {
      return absl::NotFoundError(
          absl::StrCat("unknown model '", name_or_path, "': not a preset (",
                       absl::StrJoin(PresetNames(), ", "),
                       ") and not a readable text-format ModelSpec file"));
    }
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = Parse(text.str(), name_or_path);
    if (!parsed.ok()) return parsed.status();
    spec = *parsed;
    if (!spec.has_name()) spec.set_name(std::string(name_or_path));
  }
  if (!spec.has_head_dim() && spec.num_heads() > 0) {
    if (spec.hidden_size() % spec.num_heads() != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          name_or_path, ": hidden_size ", spec.hidden_size(),
          " is not a multiple of num_heads ", spec.num_heads(),
          "; without head_dim each head is hidden_size / num_heads wide: "
          "set head_dim, or a hidden_size that num_heads divides"));
    }
    spec.set_head_dim(spec.hidden_size() / spec.num_heads());
  }
  absl::Status valid = ValidateModelSpec(spec);
  if (!valid.ok()) return valid;
  return spec;
}

int64_t ParameterCount(const ModelSpec& s) {
  const int64_t h = s.hidden_size(), f = s.intermediate_size();
  const int64_t q = s.num_heads() * s.head_dim();
  const int64_t kv = s.num_kv_heads() * s.head_dim();
  const bool sandwich = s.norm_placement() == ModelSpec::NORM_SANDWICH;
  int64_t layer = (sandwich ? 4 : 2) * h  // norms
                  + h * q + h * kv * 2    // q, k, v
                  + q * h                 // o
                  + 3 * h * f;            // gate, up, down
  if (s.qkv_bias()) layer += q + 2 * kv;
  if (s.qk_norm() == ModelSpec::QK_NORM_PER_HEAD) layer += 2 * s.head_dim();
  if (s.qk_norm() == ModelSpec::QK_NORM_WHOLE) layer += q + kv;
  int64_t total = s.num_layers() * layer + h + s.vocab_size() * h;
  if (!s.tie_word_embeddings()) total += s.vocab_size() * h;
  return total;
}

}  // namespace model
}  // namespace zero3
