// Copyright 2026 The zero3 Authors.

#include "core/config/ignored_key_types.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/config/coerce.h"
#include "core/config/schema.h"
#include "core/util/suggest.h"

namespace zero3 {
namespace config {
namespace {

// The type DeepSpeed's pydantic model gives a key zero3 ignores.
enum class Want {
  kBool,
  kBoolOrNull,
  kInt,
  kIntGe0,
  kFraction,
  kString,
  kStringOrNull,
  kArray,
  kObject,
  kObjectOrNull,
};

struct TypedKey {
  absl::string_view section;
  absl::string_view name;
  Want want;
};

// Sources: runtime/zero/config.py, offload_config.py, precision_config.py,
// monitor/config.py, comm/config.py.
constexpr TypedKey kTypedKeys[] = {
    {"zero_optimization", "allgather_bucket_size", Want::kIntGe0},
    {"zero_optimization", "allgather_partitions", Want::kBool},
    {"zero_optimization", "use_multi_rank_bucket_allreduce", Want::kBool},
    {"zero_optimization", "round_robin_gradients", Want::kBool},
    {"zero_optimization", "ignore_unused_parameters", Want::kBool},
    {"zero_optimization", "legacy_stage1", Want::kBool},
    {"zero_optimization", "load_from_fp32_weights", Want::kBool},
    {"zero_optimization", "elastic_checkpoint", Want::kBool},
    {"zero_optimization", "pipeline_loading_checkpoint", Want::kBool},
    {"zero_optimization", "stage3_module_granularity_threshold", Want::kInt},
    {"zero_optimization", "module_granularity_threshold", Want::kInt},
    {"zero_optimization", "stage3_use_all_reduce_for_fetch_params",
     Want::kBool},
    {"zero_optimization", "use_all_reduce_for_fetch_params", Want::kBool},
    {"zero_optimization", "stage3_allgather_sequential", Want::kBool},
    {"zero_optimization", "allgather_sequential", Want::kBool},
    {"zero_optimization", "zero_hpz_partition_size", Want::kIntGe0},
    {"zero_optimization", "zero_quantized_weights", Want::kBool},
    {"zero_optimization", "zero_quantized_nontrainable_weights", Want::kBool},
    {"zero_optimization", "zero_quantized_gradients", Want::kBool},
    {"zero_optimization", "zeropp_loco_param", Want::kObjectOrNull},
    {"zero_optimization", "mics_shard_size", Want::kInt},
    {"zero_optimization", "mics_hierarchical_params_gather", Want::kBool},
    {"zero_optimization", "memory_efficient_linear", Want::kBool},
    {"zero_optimization", "override_module_apply", Want::kBool},
    {"zero_optimization", "log_trace_cache_warnings", Want::kBool},
    {"zero_optimization", "enable_sanity_checks", Want::kBool},
    {"zero_optimization", "save_muon_momentum_buffer_in_memory", Want::kBool},
    {"zero_optimization", "leaf_module", Want::kObject},
    {"zero_optimization.offload_optimizer", "cpuadam_cores_perc",
     Want::kFraction},
    {"bf16", "immediate_grad_update", Want::kBool},
    {"bf16", "check_grad_overflow", Want::kBool},
    {"fp16", "auto_cast", Want::kBool},
    {"fp16", "fp16_master_weights_and_grads", Want::kBool},
    {"wandb", "enabled", Want::kBool},
    {"wandb", "group", Want::kStringOrNull},
    {"wandb", "team", Want::kStringOrNull},
    {"wandb", "project", Want::kString},
    {"comet", "enabled", Want::kBool},
    {"comet", "samples_log_interval", Want::kInt},
    {"comet", "project", Want::kStringOrNull},
    {"comet", "workspace", Want::kStringOrNull},
    {"comet", "api_key", Want::kStringOrNull},
    {"comet", "experiment_name", Want::kStringOrNull},
    {"comet", "experiment_key", Want::kStringOrNull},
    {"comet", "online", Want::kBoolOrNull},
    {"comet", "mode", Want::kStringOrNull},
    {"comms_logger", "enabled", Want::kBool},
    {"comms_logger", "prof_all", Want::kBool},
    {"comms_logger", "prof_ops", Want::kArray},
    {"comms_logger", "verbose", Want::kBool},
    {"comms_logger", "debug", Want::kBool},
};

// Sections zero3 ignores whole that DeepSpeed reads with a model of its
// own, which forbids keys it does not know.
constexpr absl::string_view kClosedSections[] = {"wandb", "comet",
                                                 "comms_logger"};

// "" when `v` has type `want` as pydantic reads it, else what was expected.
std::string Mismatch(const JsonValue& v, Want want, const std::string& path) {
  switch (want) {
    case Want::kBool:
      return LaxBool(v, path).has_value() ? "" : "true or false";
    case Want::kBoolOrNull:
      return v.is_null() || LaxBool(v, path).has_value()
                 ? ""
                 : "true, false or null";
    case Want::kString:
      return v.is_string() ? "" : "a string";
    case Want::kStringOrNull:
      return v.is_string() || v.is_null() ? "" : "a string or null";
    case Want::kArray:
      return v.is_array() ? "" : "an array";
    case Want::kInt:
    case Want::kIntGe0: {
      absl::optional<int64_t> i;
      if (v.is_number()) {
        i = v.AsExactInt64();
      } else if (auto c = CoerceLax(v, LaxType::kInt, path)) {
        i = c->AsExactInt64();
      }
      if (!i.has_value()) return "an integer";
      return want == Want::kIntGe0 && *i < 0 ? "an integer >= 0" : "";
    }
    case Want::kFraction: {
      absl::optional<double> d;
      if (v.is_number()) {
        d = v.number_value();
      } else if (auto c = CoerceLax(v, LaxType::kFloat, path)) {
        d = c->number_value();
      }
      return d.has_value() && *d >= 0 && *d <= 1 ? "" : "a number in [0, 1]";
    }
    case Want::kObject:
      return v.is_object() ? "" : "an object";
    case Want::kObjectOrNull:
      return v.is_object() || v.is_null() ? "" : "an object or null";
  }
  return "";
}

// The section at dotted `path` of `settings` (bf16 also as bfloat16).
const JsonValue* Section(const JsonValue& settings, absl::string_view path) {
  const JsonValue* node = &settings;
  for (absl::string_view part : absl::StrSplit(path, '.')) {
    const JsonValue* next = node->Find(part);
    if (next == nullptr && part == "bf16") next = node->Find("bfloat16");
    if (next == nullptr || !next->is_object()) return nullptr;
    node = next;
  }
  return node;
}

// Reports the keys of closed section `name` that DeepSpeed's model lacks.
void CheckClosedSection(const JsonValue& settings, absl::string_view name,
                        Diagnostics* diag) {
  const JsonValue* section = settings.Find(name);
  if (section == nullptr) return;
  const std::string path(name);
  if (!section->is_object()) {
    diag->ValueError(path, absl::StrCat("expected an object, found ",
                                        DescribeValue(*section),
                                        ": DeepSpeed's config model rejects "
                                        "it (zero3 ignores the section)"));
    return;
  }
  std::vector<std::string> known;
  for (const TypedKey& key : kTypedKeys) {
    if (key.section == name) known.push_back(std::string(key.name));
  }
  for (const JsonValue::Member& m : section->members()) {
    if (std::find(known.begin(), known.end(), m.key) != known.end()) continue;
    const std::string near = NearestName(m.key, known);
    diag->SetPosition(JoinPath(path, m.key), m.key_position);
    diag->ValueError(
        JoinPath(path, m.key),
        absl::StrCat(
            "unknown key",
            near.empty() ? "" : absl::StrCat(" (did you mean \"", near, "\"?)"),
            ": DeepSpeed's config model for ", name,
            " forbids it, so DeepSpeed would not run this config "
            "(zero3 ignores the section)"));
  }
}

}  // namespace

void CheckIgnoredKeyTypes(const JsonValue& settings, Diagnostics* diag) {
  for (absl::string_view name : kClosedSections) {
    CheckClosedSection(settings, name, diag);
  }
  for (const TypedKey& key : kTypedKeys) {
    const JsonValue* section = Section(settings, key.section);
    const JsonValue* v = section == nullptr ? nullptr : section->Find(key.name);
    if (v == nullptr) continue;
    const std::string path = absl::StrCat(key.section, ".", key.name);
    const std::string want = Mismatch(*v, key.want, path);
    if (want.empty()) continue;
    diag->SetPosition(path, v->position());
    diag->ValueError(
        path, absl::StrCat("expected ", want, ", found ", DescribeValue(*v),
                           ": DeepSpeed's config model rejects it, so "
                           "DeepSpeed would not run this config (zero3 "
                           "ignores the key)"));
  }
}

}  // namespace config
}  // namespace zero3
