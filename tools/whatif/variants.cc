// Copyright 2026 The zero3 Authors.
//
// variants.cc: a scenario expanded into its variants, and each variant
// resolved into a hardware profile, a model and engine options.

#include <algorithm>
#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/config/config_loader.h"
#include "core/config/modes.h"
#include "core/engine/config_options.h"
#include "core/engine/engine.h"
#include "core/model/hf_config.h"
#include "core/util/key_value.h"
#include "core/util/proto_path.h"
#include "core/util/status_macros.h"
#include "core/util/suggest.h"
#include "google/protobuf/descriptor.h"
#include "sim/cost_model.h"
#include "sim/host_share.h"
#include "sim/profiles.h"
#include "tools/whatif/whatif_internal.h"

namespace zero3 {
namespace whatif {

namespace internal {
namespace {

using google::protobuf::FieldDescriptor;

// The scenario keys a variant can set; everything else is a configuration
// key, or a hardware-profile figure under "hardware.".
const std::vector<std::string>& ScenarioKeys() {
  static const auto* keys = new std::vector<std::string>{
      "hardware",        "model", "gpus",         "tp",
      "micro_batch",     "seq",   "accumulation", "host_cores_per_gpu",
      "host_memory_gbps"};
  return *keys;
}

std::string Canonical(absl::string_view key) {
  std::string k(key);
  std::replace(k.begin(), k.end(), '-', '_');
  return k;
}

bool IsScenarioKey(const std::string& key) {
  const auto& keys = ScenarioKeys();
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

// The largest value of a numeric scenario key (or "steps"): the limits of
// zero3's flags (tools/cli/flag_limits.h). The simulator walks every
// micro-step and step, so those are the tightest.
int64_t ScenarioMax(const std::string& key) {
  if (key == "micro_batch") return int64_t{1} << 16;
  if (key == "host_cores_per_gpu") return 4096;
  if (key == "accumulation") return 1024;
  if (key == "steps") return 1000;
  return int64_t{1} << 20;  // gpus, tp, seq
}

// `n` within 1..ScenarioMax(key); `shown` is the value as written.
absl::StatusOr<int64_t> InRange(const std::string& key, int64_t n,
                                const std::string& shown) {
  if (n >= 1 && n <= ScenarioMax(key)) return n;
  return absl::InvalidArgumentError(
      absl::StrCat(key, ": expected an integer from 1 to ", ScenarioMax(key),
                   ", got '", shown, "'"));
}

absl::StatusOr<int64_t> ParsePositive(const std::string& key,
                                      const std::string& value) {
  int64_t v = 0;
  double d = 0;
  if (!absl::SimpleAtoi(value, &v)) {
    // 5e2 as configs write integers; anything non-integral or beyond int64
    // is out of range.
    const bool integral = absl::SimpleAtod(value, &d) && std::isfinite(d) &&
                          d == std::floor(d) && std::fabs(d) < 9.2e18;
    v = integral ? static_cast<int64_t>(d) : 0;
  }
  return InRange(key, v, value);
}

absl::Status Apply(const std::string& raw_key, const std::string& value,
                   Variant* v) {
  const std::string key = Canonical(raw_key);
  if (key == "hardware") {
    v->hardware = value;
  } else if (key == "model") {
    v->model = value;
  } else if (absl::StartsWith(key, "hardware.")) {
    v->profile_overrides.push_back({key.substr(9), value});
  } else if (key == "host_memory_gbps") {
    v->profile_overrides.push_back(
        {"host.memory_bandwidth_gbps_per_node", value});
  } else if (IsScenarioKey(key)) {
    ZR_ASSIGN_OR_RETURN(int64_t n, ParsePositive(key, value));
    if (key == "gpus") v->gpus = n;
    if (key == "tp") v->tp = n;
    if (key == "micro_batch") {
      v->micro_batch = n;
      v->micro_batch_set = true;
    }
    if (key == "seq") v->seq = n;
    if (key == "host_cores_per_gpu") v->host_cores_per_gpu = n;
    if (key == "accumulation") {
      v->accumulation = n;
      v->accumulation_set = true;
    }
  } else {
    v->config_overrides.push_back(absl::StrCat(raw_key, "=", value));
  }
  return absl::OkStatus();
}

absl::Status SplitSetting(const std::string& text, std::string* key,
                          std::string* value) {
  const absl::optional<KeyValue> kv = SplitKeyValue(text);
  if (!kv.has_value() || kv->key.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text,
                     "': expected KEY=VALUE (e.g. tp=2, or "
                     "zero_optimization.offload_optimizer.pin_memory=false)"));
  }
  *key = std::string(kv->key);
  *value = std::string(kv->value);
  return absl::OkStatus();
}

// Sets a numeric or boolean field of a profile by its dotted path.
absl::Status SetProfileField(sim::HardwareProfile* profile,
                             const std::string& path,
                             const std::string& value) {
  const std::vector<std::string> parts = absl::StrSplit(path, '.');
  const FieldPath fields = ResolveFieldPath(profile->GetDescriptor(), parts);
  if (fields.stop == FieldPath::Stop::kUnknownField) {
    const std::string& part = parts[fields.fields.size()];
    const std::string near = NearestName(part, FieldNames(fields.type));
    return absl::InvalidArgumentError(absl::StrCat(
        "hardware.", path, ": the profile has no field '", part, "'",
        near.empty() ? "" : absl::StrCat(" (did you mean '", near, "'?)")));
  }
  if (fields.stop == FieldPath::Stop::kNotSection) {
    return absl::InvalidArgumentError(
        absl::StrCat("hardware.", path, ": '", parts[fields.fields.size() - 1],
                     "' is not a section"));
  }
  const FieldDescriptor* f = fields.fields.back();
  if (f->is_repeated()) {
    return absl::InvalidArgumentError(
        absl::StrCat("hardware.", path,
                     ": curves cannot be set from the command line; "
                     "write a profile file"));
  }
  if (!SetScalarFromText(MutableOwner(profile, fields.fields), f, value)) {
    return absl::InvalidArgumentError(absl::StrCat("hardware.", path, ": '",
                                                   value, "' is not a valid ",
                                                   f->cpp_type_name()));
  }
  return absl::OkStatus();
}

}  // namespace

// Expands the scenario into variants (the cross product of `vary`, the first
// key slowest).
absl::StatusOr<std::vector<Variant>> Expand(const Scenario& s) {
  Variant base;
  base.hardware = s.hardware();
  base.model = s.model();
  base.gpus = s.gpus();
  base.tp = s.tp();
  base.micro_batch = s.micro_batch();
  base.micro_batch_set = s.has_micro_batch();
  base.seq = s.seq();
  base.accumulation = s.accumulation();
  base.accumulation_set = s.has_accumulation();
  for (const auto& [key, n] :
       {std::pair<std::string, int64_t>{"gpus", base.gpus},
        {"tp", base.tp},
        {"micro_batch", base.micro_batch},
        {"seq", base.seq},
        {"accumulation", base.accumulation},
        {"steps", s.steps()}}) {
    ZR_RETURN_IF_ERROR(InRange(key, n, absl::StrCat(n)).status());
  }
  for (const std::string& set : s.set()) {
    std::string key, value;
    ZR_RETURN_IF_ERROR(SplitSetting(set, &key, &value));
    ZR_RETURN_IF_ERROR(Apply(key, value, &base));
  }
  std::vector<Variant> variants = {base};
  for (const Vary& vary : s.vary()) {
    if (vary.key().empty() || vary.values().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "vary '", vary.key(), "': needs a key and at least one value"));
    }
    std::vector<Variant> next;
    for (const Variant& v : variants) {
      for (const std::string& value : vary.values()) {
        Variant w = v;
        ZR_RETURN_IF_ERROR(Apply(vary.key(), value, &w));
        w.settings.push_back({vary.key(), value});
        next.push_back(std::move(w));
      }
    }
    variants = std::move(next);
  }
  return variants;
}

absl::StatusOr<int> FindBaseline(const Scenario& s,
                                 const std::vector<Variant>& variants) {
  if (s.baseline().empty()) return 0;
  std::vector<std::pair<std::string, std::string>> want;
  for (absl::string_view part :
       absl::StrSplit(s.baseline(), ',', absl::SkipEmpty())) {
    std::string key, value;
    ZR_RETURN_IF_ERROR(SplitSetting(std::string(part), &key, &value));
    want.push_back({Canonical(key), value});
  }
  for (size_t i = 0; i < variants.size(); ++i) {
    bool match = true;
    for (const auto& [key, value] : want) {
      bool found = false;
      for (const auto& [k, v] : variants[i].settings) {
        if (Canonical(k) == key) found = (v == value);
      }
      match = match && found;
    }
    if (match) return static_cast<int>(i);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "baseline '", s.baseline(),
      "' matches no variant: give KEY=VALUE pairs of the varied keys"));
}

absl::StatusOr<Resolved> Resolve(const Scenario& s, const Variant& v,
                                 const RunOptions& run) {
  if (v.gpus % v.tp != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("tp (", v.tp, ") must divide gpus (", v.gpus, ")"));
  }
  Resolved r;
  ZR_ASSIGN_OR_RETURN(r.profile, sim::LoadProfile(v.hardware));
  for (const auto& [path, value] : v.profile_overrides) {
    ZR_RETURN_IF_ERROR(SetProfileField(&r.profile, path, value));
  }
  if (v.host_cores_per_gpu > 0) {
    ZR_RETURN_IF_ERROR(sim::SetHostCores(static_cast<int>(v.host_cores_per_gpu),
                                         0, &r.profile));
  }
  ZR_RETURN_IF_ERROR(sim::CostModel::Create(r.profile).status());
  ZR_ASSIGN_OR_RETURN(r.spec, model::LoadModelSpecOrHfConfig(v.model));

  config::LoadOptions load;
  load.world_size = v.gpus / v.tp;
  if (!s.config().empty()) {
    std::string path = s.config();
    if (!run.base_dir.empty() && path[0] != '/')
      path = run.base_dir + "/" + path;
    if (v.micro_batch_set) {
      load.overrides.push_back(
          absl::StrCat("train_micro_batch_size_per_gpu=", v.micro_batch));
    }
    if (v.accumulation_set) {
      load.overrides.push_back(
          absl::StrCat("gradient_accumulation_steps=", v.accumulation));
    }
    load.overrides.insert(load.overrides.end(), v.config_overrides.begin(),
                          v.config_overrides.end());
    ZR_ASSIGN_OR_RETURN(config::LoadedConfig c,
                        config::LoadConfigFile(path, load));
    ZR_ASSIGN_OR_RETURN(r.options,
                        engine::OptionsFromConfig(c.config, v.seq, 0));
    r.checkpoint_async = config::ModesOf(c.config).checkpoint_write ==
                         config::CheckpointWrite::kAsync;
    r.notices = c.notices;
    r.notices.insert(r.notices.end(), c.warnings.begin(), c.warnings.end());
  } else {
    load.overrides = {
        "zero_optimization.stage=3", "bf16.enabled=true",
        "zero_optimization.offload_optimizer.device=cpu",
        absl::StrCat("train_micro_batch_size_per_gpu=", v.micro_batch),
        absl::StrCat("gradient_accumulation_steps=", v.accumulation)};
    load.overrides.insert(load.overrides.end(), v.config_overrides.begin(),
                          v.config_overrides.end());
    ZR_ASSIGN_OR_RETURN(config::LoadedConfig c, config::DefaultConfig(load));
    ZR_ASSIGN_OR_RETURN(r.options,
                        engine::OptionsFromConfig(c.config, v.seq, 0));
    r.checkpoint_async = config::ModesOf(c.config).checkpoint_write ==
                         config::CheckpointWrite::kAsync;
    r.notices = c.notices;
  }
  r.options.tensor_parallel = static_cast<int>(v.tp);
  return r;
}

}  // namespace internal

}  // namespace whatif
}  // namespace zero3
