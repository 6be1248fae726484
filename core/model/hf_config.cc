// Copyright 2026 The zero3 Authors.

#include "core/model/hf_config.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>
#include <tuple>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/model/presets.h"
#include "core/util/regular_file.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace model {
namespace {

using config::JsonValue;

// The architectures zero3 reads, with transformers' model_type of each.
constexpr std::pair<const char*, const char*> kArchitectures[] = {
    {"Qwen2ForCausalLM", "qwen2"},   {"Qwen3ForCausalLM", "qwen3"},
    {"LlamaForCausalLM", "llama"},   {"MistralForCausalLM", "mistral"},
    {"Olmo2ForCausalLM", "olmo2"},   {"Phi3ForCausalLM", "phi3"},
    {"Gemma2ForCausalLM", "gemma2"}, {"Gemma3ForCausalLM", "gemma3_text"}};

bool IsGemma(absl::string_view arch) {
  return arch == "Gemma2ForCausalLM" || arch == "Gemma3ForCausalLM";
}

// "Qwen2ForCausalLM, ... and Phi3ForCausalLM".
std::string ArchitectureList() {
  std::string out;
  const size_t n = std::size(kArchitectures);
  for (size_t i = 0; i < n; ++i) {
    absl::StrAppend(&out,
                    i == 0       ? ""
                    : i + 1 == n ? " and "
                                 : ", ",
                    kArchitectures[i].first);
  }
  return out;
}

// transformers' rope_type names.
constexpr std::pair<const char*, RopeScaling::Type> kRopeTypes[] = {
    {"default", RopeScaling::DEFAULT},   {"linear", RopeScaling::LINEAR},
    {"dynamic", RopeScaling::DYNAMIC},   {"yarn", RopeScaling::YARN},
    {"longrope", RopeScaling::LONGROPE}, {"llama3", RopeScaling::LLAMA3}};

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
    return Int(v, key);
  }

  // `v` (named `key` in errors), a positive integer.
  absl::StatusOr<int64_t> Int(const JsonValue* v, absl::string_view key) const {
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
    return r.Error(
        "architectures", nullptr,
        absl::StrCat("missing; zero3 needs one of ", ArchitectureList()));
  }
  if (!v->is_array() || v->array().size() != 1 || !v->array()[0].is_string()) {
    return r.Error("architectures", v, "expected a list of one name");
  }
  const std::string& name = v->array()[0].string_value();
  for (const auto& a : kArchitectures) {
    if (name == a.first) return name;
  }
  if (name == "Gemma3ForConditionalGeneration") {
    return r.Error("architectures", v,
                   "a vision-language model; zero3 trains its text model, "
                   "Gemma3ForCausalLM (text_config's keys in a config.json "
                   "of their own)");
  }
  return r.Error("architectures", v,
                 absl::StrCat("zero3 trains ", ArchitectureList()));
}

// Gemma 3's local layers: transformers 5's
// rope_parameters.sliding_attention, else 4.x's rope_local_base_freq (10000
// where absent). They rotate with the default RoPE.
absl::Status ReadLocalRope(const Reader& r, const JsonValue* sliding,
                           ModelSpec* spec) {
  const char* key = "rope_parameters.sliding_attention";
  if (sliding != nullptr) {
    const JsonValue* type = sliding->Find("rope_type");
    if (type != nullptr && !type->is_null() &&
        !(type->is_string() && type->string_value() == "default")) {
      return r.Error(absl::StrCat(key, ".rope_type"), type,
                     "zero3 rotates the sliding-window layers with the "
                     "default RoPE at their own rope_theta");
    }
    ZR_ASSIGN_OR_RETURN(const double theta,
                        r.Number(sliding->Find("rope_theta"),
                                 absl::StrCat(key, ".rope_theta"), 10000));
    spec->set_local_rope_theta(theta);
    return absl::OkStatus();
  }
  ZR_ASSIGN_OR_RETURN(
      const double theta,
      r.Number(r.Get("rope_local_base_freq"), "rope_local_base_freq", 10000));
  spec->set_local_rope_theta(theta);
  return absl::OkStatus();
}

// RoPE's settings: transformers 5's rope_parameters, else 4.x's
// rope_scaling beside a top-level rope_theta (hub files carry either), with
// partial_rotary_factor and original_max_position_embeddings where they sit
// in either layout. Per-layer-type parameters (5.x, Gemma 3) give the
// full-attention layers' RoPE here and the sliding-window layers' base to
// ReadLocalRope. `default_theta`: the architecture's rope_theta where the
// file has none.
absl::Status ReadRope(const Reader& r, const std::string& arch,
                      double default_theta, ModelSpec* spec) {
  const bool phi3 = arch == "Phi3ForCausalLM";
  const JsonValue* params = r.Get("rope_parameters");
  std::string k = "rope_parameters";
  if (params == nullptr) {
    params = r.Get("rope_scaling");
    k = "rope_scaling";
  }
  if (params != nullptr && !params->is_object()) {
    return r.Error(k, params, "expected an object");
  }
  const JsonValue* sliding = nullptr;
  if (params != nullptr && k == "rope_parameters" &&
      (params->Find("full_attention") != nullptr ||
       params->Find("sliding_attention") != nullptr)) {
    for (const char* type : {"full_attention", "sliding_attention"}) {
      const JsonValue* v = params->Find(type);
      if (v != nullptr && !v->is_object()) {
        return r.Error(absl::StrCat(k, ".", type), v, "expected an object");
      }
    }
    sliding = params->Find("sliding_attention");
    params = params->Find("full_attention");
    k = "rope_parameters.full_attention";
    if (arch != "Gemma3ForCausalLM") {
      return r.Error("rope_parameters", r.Get("rope_parameters"),
                     "RoPE per layer type is Gemma 3's; for this "
                     "architecture give one set of parameters");
    }
  }
  if (arch == "Gemma3ForCausalLM") {
    ZR_RETURN_IF_ERROR(ReadLocalRope(r, sliding, spec));
  }
  const JsonValue* top = r.Get("rope_theta");
  ZR_ASSIGN_OR_RETURN(const double classic,
                      r.Number(top, "rope_theta", default_theta));
  double theta = classic;
  auto field = [&](const char* name) -> const JsonValue* {
    if (params == nullptr) return nullptr;
    const JsonValue* v = params->Find(name);
    return v == nullptr || v->is_null() ? nullptr : v;
  };
  if (const JsonValue* nested = field("rope_theta")) {
    ZR_ASSIGN_OR_RETURN(theta, r.Number(nested, k + ".rope_theta", classic));
    if (top != nullptr && theta != classic) {
      return r.Error("rope_theta", top,
                     absl::StrCat("disagrees with ", k, ".rope_theta (", theta,
                                  "); keep one of them"));
    }
  }
  spec->set_rope_theta(theta);
  ZR_ASSIGN_OR_RETURN(const int64_t max_pos,
                      r.Int("max_position_embeddings", int64_t{0}));
  spec->set_max_position_embeddings(max_pos);
  // partial_rotary_factor: in the RoPE dict (5.x) or at the top (4.x).
  const JsonValue* partial = field("partial_rotary_factor");
  std::string partial_key = k + ".partial_rotary_factor";
  if (partial == nullptr) {
    partial = r.Get("partial_rotary_factor");
    partial_key = "partial_rotary_factor";
  }
  ZR_ASSIGN_OR_RETURN(const double partial_factor,
                      r.Number(partial, partial_key, 1.0));
  // transformers applies it in Phi-3's attention; the others rotate the
  // whole head.
  if (partial_factor != 1.0 && !phi3) {
    return r.Error(partial_key, partial,
                   "only Phi3ForCausalLM rotates part of each head in "
                   "transformers; for this architecture remove it or set 1.0");
  }
  spec->set_partial_rotary_factor(partial_factor);

  std::string type = "default";
  std::string type_key;
  const JsonValue* type_value = nullptr;
  for (const char* name : {"rope_type", "type"}) {
    type_value = field(name);
    if (type_value == nullptr) continue;
    type_key = k + "." + name;
    if (!type_value->is_string()) {
      return r.Error(type_key, type_value, "expected a string");
    }
    type = type_value->string_value();
    break;
  }
  const auto* found =
      std::find_if(std::begin(kRopeTypes), std::end(kRopeTypes),
                   [&](const auto& t) { return type == t.first; });
  if (found == std::end(kRopeTypes)) {
    return r.Error(type_key, type_value,
                   "zero3 computes RoPE types default, linear, dynamic, yarn, "
                   "longrope and llama3");
  }
  if (found->second == RopeScaling::DEFAULT) return absl::OkStatus();
  RopeScaling* rs = spec->mutable_rope_scaling();
  rs->set_type(found->second);
  // Positive numbers, each optional here; ValidateRope says which a type
  // needs.
  auto number = [&](const char* name, auto setter) -> absl::Status {
    const JsonValue* v = field(name);
    if (v == nullptr) return absl::OkStatus();
    ZR_ASSIGN_OR_RETURN(const double x, r.Number(v, k + "." + name, 0));
    setter(x);
    return absl::OkStatus();
  };
  ZR_RETURN_IF_ERROR(number("factor", [&](double x) { rs->set_factor(x); }));
  ZR_RETURN_IF_ERROR(
      number("low_freq_factor", [&](double x) { rs->set_low_freq_factor(x); }));
  ZR_RETURN_IF_ERROR(number("high_freq_factor",
                            [&](double x) { rs->set_high_freq_factor(x); }));
  ZR_RETURN_IF_ERROR(
      number("beta_fast", [&](double x) { rs->set_beta_fast(x); }));
  ZR_RETURN_IF_ERROR(
      number("beta_slow", [&](double x) { rs->set_beta_slow(x); }));
  ZR_RETURN_IF_ERROR(number("mscale", [&](double x) { rs->set_mscale(x); }));
  ZR_RETURN_IF_ERROR(
      number("mscale_all_dim", [&](double x) { rs->set_mscale_all_dim(x); }));
  ZR_RETURN_IF_ERROR(number("attention_factor",
                            [&](double x) { rs->set_attention_factor(x); }));
  if (const JsonValue* t = field("truncate")) {
    if (!t->is_bool()) return r.Error(k + ".truncate", t, "expected a bool");
    rs->set_truncate(t->bool_value());
  }
  // Phi-3 keeps the pretrained context at the top, and transformers gives it
  // priority over the RoPE dict's.
  const JsonValue* original = r.Get("original_max_position_embeddings");
  std::string original_key = "original_max_position_embeddings";
  if (original == nullptr) {
    original = field("original_max_position_embeddings");
    original_key = k + ".original_max_position_embeddings";
  }
  if (original != nullptr) {
    ZR_ASSIGN_OR_RETURN(const int64_t n, r.Int(original, original_key));
    rs->set_original_max_position_embeddings(n);
  }
  for (auto [name, out] :
       {std::make_pair("short_factor", rs->mutable_short_factor()),
        std::make_pair("long_factor", rs->mutable_long_factor())}) {
    const JsonValue* v = field(name);
    if (v == nullptr) continue;
    if (!v->is_array()) return r.Error(k + "." + name, v, "expected a list");
    for (const JsonValue& e : v->array()) {
      if (!e.is_number() || !(e.number_value() > 0)) {
        return r.Error(k + "." + name, v, "expected positive numbers");
      }
      out->Add(e.number_value());
    }
  }
  return absl::OkStatus();
}

// Errors for the features zero3's transformer does not compute.
absl::Status CheckUnsupported(const Reader& r, const std::string& arch) {
  if (IsGemma(arch)) {
    // transformers' Gemma reads hidden_activation (hub files also carry
    // hidden_act, which it ignores).
    const JsonValue* act = r.Get("hidden_activation");
    if (act != nullptr &&
        !(act->is_string() && act->string_value() == "gelu_pytorch_tanh")) {
      return r.Error("hidden_activation", act,
                     "zero3's Gemma MLP is GeGLU with gelu_pytorch_tanh");
    }
    ZR_ASSIGN_OR_RETURN(const bool bidirectional,
                        r.Bool("use_bidirectional_attention", false));
    if (bidirectional) {
      return r.Error("use_bidirectional_attention",
                     r.Get("use_bidirectional_attention"),
                     "zero3's attention is causal; set it to false");
    }
  } else {
    const JsonValue* act = r.Get("hidden_act");
    if (act != nullptr &&
        !(act->is_string() &&
          (act->string_value() == "silu" || act->string_value() == "swish"))) {
      return r.Error("hidden_act", act, "zero3's MLP is SwiGLU (silu)");
    }
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
  // Phi-3 names its residual and embedding dropout too.
  for (const char* key : {"attention_dropout", "resid_pdrop", "embd_pdrop"}) {
    const JsonValue* dropout = r.Get(key);
    if (dropout != nullptr &&
        !(dropout->is_number() && dropout->number_value() == 0.0)) {
      return r.Error(key, dropout,
                     "zero3 does not implement dropout; set it to 0.0");
    }
  }
  const JsonValue* types = r.Get("layer_types");
  if (types != nullptr && types->is_array()) {
    for (size_t i = 0; i < types->array().size(); ++i) {
      const JsonValue& t = types->array()[i];
      // A window wider than every sequence is full attention
      // (Transformer::Create checks the sequence against it).
      if (!(t.is_string() && (t.string_value() == "full_attention" ||
                              t.string_value() == "sliding_attention"))) {
        return r.Error(absl::StrCat("layer_types[", i, "]"), &t,
                       "zero3's attention is causal, full or within a "
                       "sliding window");
      }
    }
  }
  return absl::OkStatus();
}

// The sliding window as transformers applies it: Mistral's and Phi-3's on
// every layer; Qwen2's and Qwen3's only with use_sliding_window, on the
// layers from max_window_layers on; layer_types, where written (5.x),
// names each layer's. The attention masks keys outside the window
// (AttentionArgs::window) where the sequence is longer than it.
absl::Status ReadSlidingWindow(const Reader& r, const std::string& arch,
                               ModelSpec* spec) {
  const bool qwen = arch == "Qwen2ForCausalLM" || arch == "Qwen3ForCausalLM";
  const bool gemma = IsGemma(arch);
  ZR_ASSIGN_OR_RETURN(const bool use, r.Bool("use_sliding_window", false));
  if ((qwen && !use) || (!gemma && r.Get("sliding_window") == nullptr)) {
    return absl::OkStatus();
  }
  // transformers' Gemma configs default the window to 4096 tokens.
  ZR_ASSIGN_OR_RETURN(const int64_t window,
                      r.Int("sliding_window", gemma ? 4096 : 0));
  spec->set_sliding_window(window);
  const int64_t layers = spec->num_layers();
  std::vector<bool> sliding(layers, true);
  if (gemma) {
    // Without layer_types: every second layer (Gemma 2), or all but every
    // sliding_window_pattern-th (Gemma 3, 6 where absent) slides.
    ZR_ASSIGN_OR_RETURN(const int64_t pattern,
                        arch == "Gemma2ForCausalLM"
                            ? absl::StatusOr<int64_t>(2)
                            : r.Int("sliding_window_pattern", int64_t{6}));
    for (int64_t i = 0; i < layers; ++i) sliding[i] = (i + 1) % pattern != 0;
  }
  const JsonValue* types = r.Get("layer_types");
  if (types != nullptr) {
    if (!types->is_array() ||
        static_cast<int64_t>(types->array().size()) != layers) {
      return r.Error(
          "layer_types", types,
          absl::StrCat("expected one entry per layer (", layers, ")"));
    }
    for (int64_t i = 0; i < layers; ++i) {
      sliding[i] = types->array()[i].string_value() == "sliding_attention";
    }
  } else if (qwen) {
    const JsonValue* v = r.Get("max_window_layers");
    int64_t full = 28;  // transformers' default for both
    if (v != nullptr) {
      const absl::optional<int64_t> n =
          v->is_number() ? v->AsExactInt64() : absl::nullopt;
      if (!n.has_value() || *n < 0) {
        return r.Error("max_window_layers", v,
                       "expected a non-negative integer");
      }
      full = *n;
    }
    for (int64_t i = 0; i < layers && i < full; ++i) sliding[i] = false;
  }
  if (std::find(sliding.begin(), sliding.end(), false) != sliding.end()) {
    for (const bool b : sliding) spec->add_sliding_layers(b);
  }
  return absl::OkStatus();
}

// Gemma 2 and 3: sandwich norms scaling by (1 + weight), GeGLU, scaled
// embeddings, query_pre_attn_scalar, soft-capping (Gemma 2's defaults 50
// and 30 where the keys are absent, none where null), q/k norms (Gemma 3).
absl::Status ReadGemma(const Reader& r, const std::string& arch,
                       ModelSpec* spec) {
  const bool gemma2 = arch == "Gemma2ForCausalLM";
  spec->set_norm_placement(ModelSpec::NORM_SANDWICH);
  spec->set_norm_unit_offset(true);
  spec->set_mlp_activation(ModelSpec::GELU_TANH);
  spec->set_scale_embeddings(true);
  if (!gemma2) spec->set_qk_norm(ModelSpec::QK_NORM_PER_HEAD);
  ZR_ASSIGN_OR_RETURN(
      const double scalar,
      r.Number(r.Get("query_pre_attn_scalar"), "query_pre_attn_scalar", 256));
  spec->set_query_pre_attn_scalar(scalar);
  for (auto [key, fallback, setter] :
       {std::make_tuple("attn_logit_softcapping", 50.0,
                        &ModelSpec::set_attn_logit_softcapping),
        std::make_tuple("final_logit_softcapping", 30.0,
                        &ModelSpec::set_final_logit_softcapping)}) {
    const JsonValue* v = r.root().Find(key);
    if (v != nullptr && v->is_null()) continue;  // written as null: off
    if (v == nullptr && !gemma2) continue;       // Gemma 3's default: off
    ZR_ASSIGN_OR_RETURN(const double cap, r.Number(v, key, fallback));
    (spec->*setter)(cap);
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
  } else {
    return r.Error("hidden_size", r.Get("hidden_size"),
                   absl::StrCat("not divisible by num_attention_heads (", heads,
                                "); without head_dim in config.json "
                                "each head is hidden_size / heads wide"));
  }
  ZR_ASSIGN_OR_RETURN(const double eps,
                      r.Number(r.Get("rms_norm_eps"), "rms_norm_eps", 1e-6));
  spec.set_rms_norm_eps(eps);
  ZR_RETURN_IF_ERROR(
      ReadRope(r, arch, arch == "Gemma3ForCausalLM" ? 1e6 : 10000, &spec));
  // transformers ties Gemma's head to its embedding unless told otherwise.
  ZR_ASSIGN_OR_RETURN(const bool tied,
                      r.Bool("tie_word_embeddings", IsGemma(arch)));
  spec.set_tie_word_embeddings(tied);
  spec.set_qkv_bias(arch == "Qwen2ForCausalLM");
  spec.set_hf_architecture(arch);
  if (arch == "Qwen3ForCausalLM") {
    spec.set_qk_norm(ModelSpec::QK_NORM_PER_HEAD);
  } else if (arch == "Olmo2ForCausalLM") {
    spec.set_qk_norm(ModelSpec::QK_NORM_WHOLE);
    spec.set_norm_placement(ModelSpec::NORM_POST);
  } else if (arch == "Phi3ForCausalLM") {
    spec.set_fused_projections(true);
  } else if (IsGemma(arch)) {
    ZR_RETURN_IF_ERROR(ReadGemma(r, arch, &spec));
  }
  ZR_RETURN_IF_ERROR(ReadSlidingWindow(r, arch, &spec));
  const absl::Status valid = ValidateModelSpec(spec);
  if (!valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", valid.message()));
  }
  return spec;
}

absl::StatusOr<ModelSpec> LoadHfConfig(const std::string& path,
                                       absl::string_view name) {
  const absl::Status regular = CheckRegularFile(path);
  if (absl::IsInvalidArgument(regular)) return regular;
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
  // A Hugging Face model directory: its config.json.
  struct stat st;
  if (::stat(name_or_path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    std::string dir = name_or_path;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    return LoadModelSpecOrHfConfig(dir + "/config.json");
  }
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

namespace {

// transformers' model_type of `arch`, one of kArchitectures.
const char* ModelType(absl::string_view arch) {
  for (const auto& a : kArchitectures) {
    if (arch == a.first) return a.second;
  }
  return "llama";
}

const char* RopeTypeName(RopeScaling::Type type) {
  for (const auto& t : kRopeTypes) {
    if (type == t.second) return t.first;
  }
  return "default";
}

// rope_scaling as transformers 4.x writes it (5.x reads it too).
config::JsonValue RopeScalingJson(const RopeScaling& r) {
  using config::JsonValue;
  JsonValue o = JsonValue::Object();
  o.Set("rope_type", JsonValue::String(RopeTypeName(r.type())));
  if (r.has_factor()) o.Set("factor", JsonValue::Double(r.factor()));
  if (r.has_original_max_position_embeddings()) {
    o.Set("original_max_position_embeddings",
          JsonValue::Int(r.original_max_position_embeddings()));
  }
  if (r.type() == RopeScaling::LLAMA3) {
    o.Set("low_freq_factor", JsonValue::Double(r.low_freq_factor()));
    o.Set("high_freq_factor", JsonValue::Double(r.high_freq_factor()));
  }
  if (r.type() == RopeScaling::YARN) {
    o.Set("beta_fast", JsonValue::Double(r.beta_fast()));
    o.Set("beta_slow", JsonValue::Double(r.beta_slow()));
    o.Set("truncate", JsonValue::Bool(r.truncate()));
    if (r.has_mscale()) o.Set("mscale", JsonValue::Double(r.mscale()));
    if (r.has_mscale_all_dim()) {
      o.Set("mscale_all_dim", JsonValue::Double(r.mscale_all_dim()));
    }
  }
  if (r.has_attention_factor()) {
    o.Set("attention_factor", JsonValue::Double(r.attention_factor()));
  }
  for (auto [name, factors] :
       {std::make_pair("short_factor", &r.short_factor()),
        std::make_pair("long_factor", &r.long_factor())}) {
    if (factors->empty()) continue;
    JsonValue list = JsonValue::Array();
    for (double f : *factors) list.Append(JsonValue::Double(f));
    o.Set(name, std::move(list));
  }
  return o;
}

// Gemma's keys, null where a feature is off (transformers' Gemma 2 would
// otherwise cap at its defaults).
void SetGemmaKeys(const ModelSpec& spec, absl::string_view arch,
                  config::JsonValue* c) {
  using config::JsonValue;
  c->Set("hidden_activation", JsonValue::String("gelu_pytorch_tanh"));
  // An integer in transformers' config classes.
  const double scalar = spec.query_pre_attn_scalar();
  c->Set("query_pre_attn_scalar",
         scalar > 0 && scalar == std::floor(scalar)
             ? JsonValue::Int(static_cast<int64_t>(scalar))
         : scalar > 0 ? JsonValue::Double(scalar)
                      : JsonValue::Int(spec.head_dim()));
  for (auto [key, cap] :
       {std::make_pair("attn_logit_softcapping", spec.attn_logit_softcapping()),
        std::make_pair("final_logit_softcapping",
                       spec.final_logit_softcapping())}) {
    c->Set(key, cap > 0 ? JsonValue::Double(cap) : JsonValue::Null());
  }
  if (arch == "Gemma3ForCausalLM") {
    c->Set(
        "rope_local_base_freq",
        JsonValue::Double(spec.local_rope_theta() > 0 ? spec.local_rope_theta()
                                                      : spec.rope_theta()));
  }
}

}  // namespace

config::JsonValue HfConfigFromModelSpec(const ModelSpec& spec,
                                        absl::string_view torch_dtype) {
  using config::JsonValue;
  const std::string arch =
      spec.has_hf_architecture()
          ? spec.hf_architecture()
          : (spec.qkv_bias() ? "Qwen2ForCausalLM" : "LlamaForCausalLM");
  JsonValue c = JsonValue::Object();
  JsonValue architectures = JsonValue::Array();
  architectures.Append(JsonValue::String(arch));
  c.Set("architectures", std::move(architectures));
  c.Set("model_type", JsonValue::String(ModelType(arch)));
  const bool gelu = spec.mlp_activation() == ModelSpec::GELU_TANH;
  c.Set("hidden_act", JsonValue::String(gelu ? "gelu_pytorch_tanh" : "silu"));
  if (IsGemma(arch)) SetGemmaKeys(spec, arch, &c);
  c.Set("vocab_size", JsonValue::Int(spec.vocab_size()));
  c.Set("hidden_size", JsonValue::Int(spec.hidden_size()));
  c.Set("intermediate_size", JsonValue::Int(spec.intermediate_size()));
  c.Set("num_hidden_layers", JsonValue::Int(spec.num_layers()));
  c.Set("num_attention_heads", JsonValue::Int(spec.num_heads()));
  c.Set("num_key_value_heads", JsonValue::Int(spec.num_kv_heads()));
  c.Set("head_dim", JsonValue::Int(spec.head_dim()));
  c.Set("rms_norm_eps", JsonValue::Double(spec.rms_norm_eps()));
  c.Set("rope_theta", JsonValue::Double(spec.rope_theta()));
  if (spec.rope_scaling().type() != RopeScaling::DEFAULT) {
    c.Set("rope_scaling", RopeScalingJson(spec.rope_scaling()));
  }
  if (spec.partial_rotary_factor() != 1.0) {
    c.Set("partial_rotary_factor",
          JsonValue::Double(spec.partial_rotary_factor()));
  }
  if (spec.max_position_embeddings() > 0) {
    c.Set("max_position_embeddings",
          JsonValue::Int(spec.max_position_embeddings()));
  }
  if (spec.sliding_window() > 0 || IsGemma(arch)) {
    // (Unused by a Gemma without a window, whose layers are all full.)
    c.Set("sliding_window",
          JsonValue::Int(spec.sliding_window() > 0 ? spec.sliding_window()
                                                   : 4096));
    if (arch == "Qwen2ForCausalLM" || arch == "Qwen3ForCausalLM") {
      c.Set("use_sliding_window", JsonValue::Bool(true));
    }
    if (spec.sliding_layers_size() > 0 || IsGemma(arch)) {
      // transformers 5.x reads layer_types; 4.x Qwen max_window_layers,
      // which says the same where the full layers come first. A Gemma
      // without a window has only full layers.
      JsonValue types = JsonValue::Array();
      int64_t full = 0;
      for (int64_t i = 0; i < spec.num_layers(); ++i) {
        const bool b = spec.sliding_window() > 0 &&
                       (spec.sliding_layers_size() == 0 ||
                        spec.sliding_layers(static_cast<int>(i)));
        types.Append(
            JsonValue::String(b ? "sliding_attention" : "full_attention"));
        if (!b && full == i) ++full;
      }
      c.Set("layer_types", std::move(types));
      c.Set("max_window_layers", JsonValue::Int(full));
    }
  }
  // transformers' Phi3Config defaults pad_token_id to 32000, which a smaller
  // vocabulary's embedding cannot hold.
  if (arch == "Phi3ForCausalLM" && spec.vocab_size() <= 32000) {
    c.Set("pad_token_id", JsonValue::Null());
  }
  // Phi-3's config keeps the pretrained context at the top, where
  // transformers looks first.
  if (arch == "Phi3ForCausalLM" &&
      spec.rope_scaling().has_original_max_position_embeddings()) {
    c.Set(
        "original_max_position_embeddings",
        JsonValue::Int(spec.rope_scaling().original_max_position_embeddings()));
  }
  c.Set("tie_word_embeddings", JsonValue::Bool(spec.tie_word_embeddings()));
  if (arch != "Qwen2ForCausalLM") {
    c.Set("attention_bias", JsonValue::Bool(false));
    if (arch != "Phi3ForCausalLM") c.Set("mlp_bias", JsonValue::Bool(false));
  }
  c.Set("torch_dtype", JsonValue::String(std::string(torch_dtype)));
  return c;
}

}  // namespace model
}  // namespace zero3
