// Copyright 2026 The zero3 Authors.

#include "core/model/hf_config.h"

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/model/presets.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace model {
namespace {

using config::JsonValue;

constexpr const char* kArchitectures[] = {
    "Qwen2ForCausalLM", "LlamaForCausalLM", "MistralForCausalLM"};

// Reads keys of one config.json, naming it in every error.
class Reader {
 public:
  Reader(const JsonValue& root, absl::string_view path)
      : root_(root), path_(path) {}

  absl::Status Error(absl::string_view key, const JsonValue* value,
                     absl::string_view why) const {
    return absl::InvalidArgumentError(absl::StrCat(
        path_, ": \"", key, "\"",
        value != nullptr
            ? absl::StrCat(" is ", config::WriteJson(
                                       *value, config::JsonStyle::kCompact))
            : std::string(),
        ": ", why));
  }

  // The value of `key`, or null when it is absent or JSON null.
  const JsonValue* Get(absl::string_view key) const {
    const JsonValue* v = root_.Find(key);
    return v == nullptr || v->is_null() ? nullptr : v;
  }

  absl::StatusOr<int64_t> Int(absl::string_view key) const {
    const JsonValue* v = Get(key);
    if (v == nullptr) return Error(key, nullptr, "missing; it is required");
    absl::optional<int64_t> n =
        v->is_number() ? v->AsExactInt64() : absl::nullopt;
    if (!n.has_value() || *n <= 0) {
      return Error(key, v, "expected a positive integer");
    }
    return *n;
  }

  absl::StatusOr<int64_t> Int(absl::string_view key, int64_t fallback) const {
    if (Get(key) == nullptr) return fallback;
    return Int(key);
  }

  absl::StatusOr<double> Number(const JsonValue* v, absl::string_view key,
                                double fallback) const {
    if (v == nullptr || v->is_null()) return fallback;
    if (!v->is_number() || !(v->number_value() > 0)) {
      return Error(key, v, "expected a positive number");
    }
    return v->number_value();
  }

  absl::StatusOr<bool> Bool(absl::string_view key, bool fallback) const {
    const JsonValue* v = Get(key);
    if (v == nullptr) return fallback;
    if (!v->is_bool()) return Error(key, v, "expected true or false");
    return v->bool_value();
  }

  const JsonValue& root() const { return root_; }

 private:
  const JsonValue& root_;
  std::string path_;
};

absl::StatusOr<std::string> Architecture(const Reader& r) {
  const JsonValue* v = r.Get("architectures");
  if (v == nullptr) {
    return r.Error("architectures", nullptr,
                   "missing; zero3 needs one of Qwen2ForCausalLM, "
                   "LlamaForCausalLM, MistralForCausalLM");
  }
  if (!v->is_array() || v->array().size() != 1 || !v->array()[0].is_string()) {
    return r.Error("architectures", v, "expected a list of one name");
  }
  const std::string& name = v->array()[0].string_value();
  for (const char* a : kArchitectures) {
    if (name == a) return name;
  }
  return r.Error("architectures", v,
                 "zero3 trains Qwen2ForCausalLM, LlamaForCausalLM and "
                 "MistralForCausalLM");
}

// The RoPE theta: rope_parameters (transformers 5), else rope_scaling's
// type and the top-level rope_theta (the classic layout).
absl::StatusOr<double> RopeTheta(const Reader& r) {
  const JsonValue* params = r.Get("rope_parameters");
  const JsonValue* scaling = r.Get("rope_scaling");
  for (auto [key, v] : {std::make_pair("rope_parameters", params),
                        std::make_pair("rope_scaling", scaling)}) {
    if (v == nullptr) continue;
    if (!v->is_object()) return r.Error(key, v, "expected an object");
    for (const char* type_key : {"rope_type", "type"}) {
      const JsonValue* type = v->Find(type_key);
      if (type != nullptr &&
          !(type->is_string() && type->string_value() == "default")) {
        return r.Error(absl::StrCat(key, ".", type_key), type,
                       "zero3 implements only the default RoPE (no llama3, "
                       "yarn, linear or dynamic scaling)");
      }
    }
    const JsonValue* partial = v->Find("partial_rotary_factor");
    if (partial != nullptr &&
        !(partial->is_number() && partial->number_value() == 1.0)) {
      return r.Error(absl::StrCat(key, ".partial_rotary_factor"), partial,
                     "zero3 rotates the whole head dimension");
    }
  }
  const JsonValue* top = r.Get("rope_theta");
  ZR_ASSIGN_OR_RETURN(const double classic, r.Number(top, "rope_theta", 10000));
  if (params == nullptr) return classic;
  const JsonValue* theta = params->Find("rope_theta");
  ZR_ASSIGN_OR_RETURN(const double nested,
                      r.Number(theta, "rope_parameters.rope_theta", classic));
  if (top != nullptr && nested != classic) {
    return r.Error("rope_theta", top,
                   absl::StrCat("disagrees with rope_parameters.rope_theta (",
                                nested, "); keep one of them"));
  }
  return nested;
}

// Errors for the features zero3's transformer does not compute.
absl::Status CheckUnsupported(const Reader& r, const std::string& arch) {
  const JsonValue* act = r.Get("hidden_act");
  if (act != nullptr &&
      !(act->is_string() &&
        (act->string_value() == "silu" || act->string_value() == "swish"))) {
    return r.Error("hidden_act", act, "zero3's MLP is SwiGLU (silu)");
  }
  ZR_ASSIGN_OR_RETURN(const bool attention_bias,
                      r.Bool("attention_bias", false));
  if (attention_bias) {
    return r.Error("attention_bias", r.Get("attention_bias"),
                   "it adds an o_proj bias, which zero3's transformer does "
                   "not have");
  }
  ZR_ASSIGN_OR_RETURN(const bool mlp_bias, r.Bool("mlp_bias", false));
  if (mlp_bias) {
    return r.Error("mlp_bias", r.Get("mlp_bias"),
                   "zero3's MLP projections have no biases");
  }
  const JsonValue* dropout = r.Get("attention_dropout");
  if (dropout != nullptr &&
      !(dropout->is_number() && dropout->number_value() == 0.0)) {
    return r.Error("attention_dropout", dropout,
                   "zero3 does not implement dropout; set it to 0.0");
  }
  // Qwen2 turns its window on with use_sliding_window; Mistral (and any
  // other) with a non-null sliding_window.
  if (arch == "Qwen2ForCausalLM") {
    ZR_ASSIGN_OR_RETURN(const bool sliding,
                        r.Bool("use_sliding_window", false));
    if (sliding) {
      return r.Error("use_sliding_window", r.Get("use_sliding_window"),
                     "zero3's attention is full causal attention; set it "
                     "to false");
    }
  } else if (r.Get("sliding_window") != nullptr) {
    return r.Error("sliding_window", r.Get("sliding_window"),
                   "zero3's attention is full causal attention (the same "
                   "when no sequence is longer than the window: then set it "
                   "to null)");
  }
  const JsonValue* types = r.Get("layer_types");
  if (types != nullptr && types->is_array()) {
    for (size_t i = 0; i < types->array().size(); ++i) {
      const JsonValue& t = types->array()[i];
      if (!(t.is_string() && t.string_value() == "full_attention")) {
        return r.Error(absl::StrCat("layer_types[", i, "]"), &t,
                       "zero3's attention is full causal attention");
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ModelSpec> ModelSpecFromHfConfig(const JsonValue& config,
                                                absl::string_view path,
                                                absl::string_view name) {
  if (!config.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected a JSON object"));
  }
  const Reader r(config, path);
  ZR_ASSIGN_OR_RETURN(const std::string arch, Architecture(r));
  ZR_RETURN_IF_ERROR(CheckUnsupported(r, arch));
  ModelSpec spec;
  spec.set_name(std::string(name));
  ZR_ASSIGN_OR_RETURN(const int64_t vocab, r.Int("vocab_size"));
  ZR_ASSIGN_OR_RETURN(const int64_t hidden, r.Int("hidden_size"));
  ZR_ASSIGN_OR_RETURN(const int64_t ffn, r.Int("intermediate_size"));
  ZR_ASSIGN_OR_RETURN(const int64_t layers, r.Int("num_hidden_layers"));
  ZR_ASSIGN_OR_RETURN(const int64_t heads, r.Int("num_attention_heads"));
  ZR_ASSIGN_OR_RETURN(const int64_t kv, r.Int("num_key_value_heads", heads));
  spec.set_vocab_size(vocab);
  spec.set_hidden_size(hidden);
  spec.set_intermediate_size(ffn);
  spec.set_num_layers(layers);
  spec.set_num_heads(heads);
  spec.set_num_kv_heads(kv);
  if (r.Get("head_dim") != nullptr) {
    ZR_ASSIGN_OR_RETURN(const int64_t head_dim, r.Int("head_dim"));
    spec.set_head_dim(head_dim);
  } else if (hidden % heads == 0) {
    spec.set_head_dim(hidden / heads);
  }
  ZR_ASSIGN_OR_RETURN(const double eps,
                      r.Number(r.Get("rms_norm_eps"), "rms_norm_eps", 1e-6));
  spec.set_rms_norm_eps(eps);
  ZR_ASSIGN_OR_RETURN(const double theta, RopeTheta(r));
  spec.set_rope_theta(theta);
  ZR_ASSIGN_OR_RETURN(const bool tied, r.Bool("tie_word_embeddings", false));
  spec.set_tie_word_embeddings(tied);
  spec.set_qkv_bias(arch == "Qwen2ForCausalLM");
  const absl::Status valid = ValidateModelSpec(spec);
  if (!valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", valid.message()));
  }
  return spec;
}

absl::StatusOr<ModelSpec> LoadHfConfig(const std::string& path,
                                       absl::string_view name) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat(
        "cannot read ", path,
        ": a Hugging Face checkpoint directory holds config.json and "
        "model.safetensors (or model-*-of-*.safetensors with "
        "model.safetensors.index.json); docs/models.md"));
  }
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<JsonValue> root = config::ParseJson(text.str());
  if (!root.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", root.status().message()));
  }
  return ModelSpecFromHfConfig(*root, path, name);
}

absl::StatusOr<ModelSpec> LoadModelSpecOrHfConfig(
    const std::string& name_or_path) {
  if (!absl::EndsWith(name_or_path, ".json")) {
    return LoadModelSpec(name_or_path);
  }
  // ".../Qwen2.5-72B/config.json" is named Qwen2.5-72B.
  std::vector<std::string> parts = absl::StrSplit(name_or_path, '/');
  std::string name = parts.back();
  if (parts.size() >= 2 && !parts[parts.size() - 2].empty() &&
      parts[parts.size() - 2] != ".") {
    name = parts[parts.size() - 2];
  }
  return LoadHfConfig(name_or_path, name);
}

config::JsonValue HfConfigFromModelSpec(const ModelSpec& spec,
                                        absl::string_view torch_dtype) {
  using config::JsonValue;
  const bool qwen2 = spec.qkv_bias();
  JsonValue c = JsonValue::Object();
  JsonValue architectures = JsonValue::Array();
  architectures.Append(
      JsonValue::String(qwen2 ? "Qwen2ForCausalLM" : "LlamaForCausalLM"));
  c.Set("architectures", std::move(architectures));
  c.Set("model_type", JsonValue::String(qwen2 ? "qwen2" : "llama"));
  c.Set("hidden_act", JsonValue::String("silu"));
  c.Set("vocab_size", JsonValue::Int(spec.vocab_size()));
  c.Set("hidden_size", JsonValue::Int(spec.hidden_size()));
  c.Set("intermediate_size", JsonValue::Int(spec.intermediate_size()));
  c.Set("num_hidden_layers", JsonValue::Int(spec.num_layers()));
  c.Set("num_attention_heads", JsonValue::Int(spec.num_heads()));
  c.Set("num_key_value_heads", JsonValue::Int(spec.num_kv_heads()));
  c.Set("head_dim", JsonValue::Int(spec.head_dim()));
  c.Set("rms_norm_eps", JsonValue::Double(spec.rms_norm_eps()));
  c.Set("rope_theta", JsonValue::Double(spec.rope_theta()));
  c.Set("tie_word_embeddings", JsonValue::Bool(spec.tie_word_embeddings()));
  if (!qwen2) {
    c.Set("attention_bias", JsonValue::Bool(false));
    c.Set("mlp_bias", JsonValue::Bool(false));
  }
  c.Set("torch_dtype", JsonValue::String(std::string(torch_dtype)));
  return c;
}

}  // namespace model
}  // namespace zero3
