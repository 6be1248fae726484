// Copyright 2026 The zero3 Authors.

#include "core/config/deepspeed_rules.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/config/coerce.h"
#include "core/config/ignored_key_types.h"
#include "core/config/modes.h"
#include "core/config/schema.h"

namespace zero3 {
namespace config {
namespace {

// Python's truth value of a JSON value (how DeepSpeed's `if value:` reads).
bool Truthy(const JsonValue& v) {
  switch (v.kind()) {
    case JsonValue::Kind::kNull:
      return false;
    case JsonValue::Kind::kBool:
      return v.bool_value();
    case JsonValue::Kind::kNumber:
      return v.number_value() != 0;
    case JsonValue::Kind::kString:
      return !v.string_value().empty();
    case JsonValue::Kind::kArray:
      return !v.array().empty();
    case JsonValue::Kind::kObject:
      return !v.members().empty();
  }
  return false;
}

// Python's `value == 1.0` (true == 1.0 holds; "1" == 1.0 does not).
bool EqualsOne(const JsonValue& v) {
  return (v.is_number() && v.number_value() == 1) ||
         (v.is_bool() && v.bool_value());
}

void GradientAllreduceOp(const JsonValue& v, Diagnostics* diag) {
  const std::string path = "gradient_allreduce_op";
  const std::string op =
      v.is_string() ? absl::AsciiStrToLower(v.string_value()) : "";
  if (op == "mean") {
    diag->Notice(path,
                 "\"mean\": gradients are averaged, as zero3 always "
                 "does; the key changes nothing");
  } else if (op == "sum") {
    diag->ValueError(path,
                     "\"sum\": DeepSpeed rejects a summed gradient "
                     "reduction with ZeRO stage 3 (runtime/config.py, "
                     "_do_error_check); zero3 averages gradients: "
                     "remove the key or write \"mean\"");
  } else {
    diag->ValueError(
        path, absl::StrCat("DeepSpeed accepts only \"mean\" or \"sum\" "
                           "(runtime/config.py, get_gradient_allreduce_op), "
                           "found ",
                           DescribeValue(v),
                           "; zero3 averages gradients: remove the key or "
                           "write \"mean\""));
  }
}

void Amp(const JsonValue& v, Diagnostics* diag) {
  const JsonValue* enabled = v.is_object() ? v.Find("enabled") : nullptr;
  if (enabled == nullptr) {
    diag->ValueError("amp",
                     absl::StrCat("DeepSpeed needs an object with \"enabled\" "
                                  "here (runtime/config.py, get_amp_params "
                                  "fails without it), found ",
                                  DescribeValue(v),
                                  "; zero3 has no Apex AMP: remove the "
                                  "section, or use bf16 or fp16"));
  } else if (Truthy(*enabled)) {
    diag->SetPosition("amp.enabled", enabled->position());
    diag->ValueError("amp.enabled",
                     "Apex AMP with ZeRO: DeepSpeed rejects it (\"Amp and ZeRO "
                     "are not currently compatible\", runtime/engine.py); "
                     "use bf16 or fp16 instead");
  } else {
    diag->Notice("amp", "Apex AMP is off; ignored (zero3 has none)");
  }
}

// A pydantic bool flag of `section` ("fp16", "bf16"), false when absent or
// unreadable (its type error is reported elsewhere).
bool Flag(const JsonValue* section, const char* key, const std::string& path) {
  const JsonValue* v = section == nullptr ? nullptr : section->Find(key);
  if (v == nullptr) return false;
  return LaxBool(*v, path).value_or(false);
}

// The master-weight settings, as DeepSpeed's ZeRO-3 optimizer checks them
// (runtime/base_optimizer.py _configure_master_weights, with the offload
// requirement of runtime/zero/stage3.py), and what zero3's bf16 master and
// optimizer states (the host AdamW's) need besides.
void MasterWeights(const JsonValue* fp16, const JsonValue* bf16,
                   const Config& config, Diagnostics* diag) {
  const std::string fp16_key = "fp16.fp16_master_weights_and_grads";
  const std::string bf16_key = "bf16.bf16_master_weights_and_grads";
  const std::string states_key = "bf16.bf16_optimizer_states";
  const bool fp16_master =
      Flag(fp16, "fp16_master_weights_and_grads", fp16_key);
  const bool bf16_master = config.bf16().bf16_master_weights_and_grads();
  const bool bf16_states = config.bf16().bf16_optimizer_states();
  const bool offload =
      config.zero_optimization().offload_optimizer().device() != "none";
  const std::string needs_offload =
      ": DeepSpeed's ZeRO-3 requires optimizer offload with its CPU Adam for "
      "it (\"Master weights feature requires ZeRO-3 Offload with "
      "DeepSpeedCPUAdam\", runtime/zero/stage3.py)";
  if (bf16_states && !bf16_master) {
    diag->ValueError(states_key,
                     "true without bf16_master_weights_and_grads: "
                     "DeepSpeed rejects it (\"bf16_optimizer_states "
                     "requires bf16_master_weights_and_grads to be "
                     "enabled\", runtime/config.py): set both, or remove it");
  }
  if (fp16_master && bf16_master) {
    diag->ValueError(bf16_key, "true together with " + fp16_key +
                                   ": DeepSpeed rejects the two together "
                                   "(runtime/base_optimizer.py); remove both");
    return;
  }
  if (fp16_master && !offload) {
    diag->ValueError(fp16_key, "true without optimizer offload" +
                                   needs_offload +
                                   "; zero3 keeps fp32 master weights either "
                                   "way: remove the key, or set "
                                   "zero_optimization.offload_optimizer.device "
                                   "\"cpu\"");
  }
  if (!bf16_master) return;
  const std::string key = bf16_states ? states_key : bf16_key;
  if (!offload) {
    // DeepSpeed's BF16 optimizer would keep them on the GPU; zero3's device
    // AdamW is fp32.
    diag->ValueError(key, "true without optimizer offload" + needs_offload +
                              "; zero3 keeps bf16 master weights and states "
                              "only on the host: set "
                              "zero_optimization.offload_optimizer.device "
                              "\"cpu\", or remove the key");
  } else if (!config.bf16().enabled()) {
    diag->ValueError(key,
                     "true without bf16.enabled: set bf16.enabled true, "
                     "or remove the key");
  } else if (config.zero3().auto_offload_ratio() ||
             config.zero_optimization().offload_optimizer().ratio() < 1) {
    diag->ValueError(
        key,
        "true with part of the optimizer on the device "
        "(zero_optimization.offload_optimizer.ratio below 1 or \"auto\"): "
        "zero3's device AdamW keeps fp32 states; set the ratio to 1, or "
        "remove the key");
  } else if (ModesOf(config).grad_offload_copy ==
             GradOffloadCopy::kPerParamFp32) {
    diag->ValueError(key,
                     "true with zero3.grad_offload_copy "
                     "\"per_param_fp32\", which sends the fp32 master "
                     "back: set it to \"bucketed\", or remove the key");
  }
}

void Zenflow(const JsonValue& v, Diagnostics* diag) {
  const std::string path = "zero_optimization.zenflow";
  if (v.is_object()) {
    diag->Notice(path,
                 "ZenFlow is not implemented; ignored: every step "
                 "updates all parameters on the host");
  } else if (v.is_null()) {
    diag->Notice(path, "null: no ZenFlow, as zero3 runs; ignored");
  } else {
    diag->ValueError(
        path, absl::StrCat("DeepSpeed needs an object here (ZenFlowConfig, "
                           "runtime/zero/config.py), found ",
                           DescribeValue(v),
                           "; ZenFlow is not implemented: remove the key"));
  }
}

void CommunicationDataType(const std::string& path, const JsonValue& v,
                           Diagnostics* diag) {
  const std::string type =
      v.is_string() ? absl::AsciiStrToLower(v.string_value()) : "";
  if (v.is_null() || type == "fp32" || type == "fp16" || type == "bf16") {
    diag->Notice(path,
                 "not configurable in zero3; ignored: gradients are "
                 "reduced in the training precision's type");
    return;
  }
  diag->ValueError(
      path, absl::StrCat("DeepSpeed accepts \"fp16\", \"bf16\" or \"fp32\" "
                         "(runtime/config.py, get_communication_data_type), "
                         "found ",
                         DescribeValue(v), "; remove the key"));
}

// gradient_predivide_factor and prescale_gradients: ZeRO-3 with
// reduce_scatter asserts the defaults (runtime/zero/stage3.py); without it
// both only move where the average's division happens.
void GradientScaling(const JsonValue& settings, bool reduce_scatter,
                     Diagnostics* diag) {
  const std::string scatter_rule =
      " with reduce_scatter (runtime/zero/stage3.py); zero3 divides by the "
      "number of ranks in the reduction itself: remove the key";
  if (const JsonValue* f = settings.Find("gradient_predivide_factor")) {
    const std::string path = "gradient_predivide_factor";
    if (EqualsOne(*f)) {
      diag->Notice(path, "1 is what zero3 does; ignored");
    } else if (reduce_scatter) {
      diag->ValueError(
          path, absl::StrCat(DescribeValue(*f),
                             ": DeepSpeed's ZeRO-3 requires 1", scatter_rule));
    } else if (f->is_number()) {
      diag->Notice(path,
                   "ignored: the average it computes in two steps is "
                   "the one zero3 computes");
    } else {
      diag->ValueError(
          path, absl::StrCat("expected a number, found ", DescribeValue(*f)));
    }
  }
  if (const JsonValue* p = settings.Find("prescale_gradients")) {
    const std::string path = "prescale_gradients";
    if (!Truthy(*p)) {
      diag->Notice(path, "false is what zero3 does; ignored");
    } else if (reduce_scatter) {
      diag->ValueError(path, absl::StrCat(DescribeValue(*p),
                                          ": DeepSpeed's ZeRO-3 does not "
                                          "pre-scale gradients",
                                          scatter_rule));
    } else {
      diag->Notice(path,
                   "ignored: gradients are averaged in the reduction "
                   "itself, which pre-scaling does not change");
    }
  }
}

void SequenceParallelSize(const JsonValue& v, Diagnostics* diag) {
  const std::string path = "sequence_parallel_size";
  if (v.is_number() && v.number_value() == 1) {
    diag->Notice(path, "1: no sequence parallelism, as zero3 runs; ignored");
    return;
  }
  diag->ValueError(
      path, absl::StrCat(DescribeValue(v),
                         ": DeepSpeed divides the data-parallel size by it "
                         "(Ulysses sequence parallelism, runtime/config.py), "
                         "so ranks share batches; zero3 has no sequence "
                         "parallelism: remove the key (or write 1) and give "
                         "batch sizes for the data-parallel ranks you "
                         "launch"));
}

}  // namespace

void ApplyDeepSpeedRules(const JsonValue& settings, const Config& config,
                         Diagnostics* diag) {
  if (const JsonValue* v = settings.Find("gradient_allreduce_op")) {
    GradientAllreduceOp(*v, diag);
  }
  if (const JsonValue* v = settings.Find("amp")) Amp(*v, diag);
  const JsonValue* bf16 = settings.Find("bf16");
  if (bf16 == nullptr) bf16 = settings.Find("bfloat16");
  const JsonValue* fp16 = settings.Find("fp16");
  MasterWeights(fp16 != nullptr && fp16->is_object() ? fp16 : nullptr,
                bf16 != nullptr && bf16->is_object() ? bf16 : nullptr, config,
                diag);
  const JsonValue* zero = settings.Find("zero_optimization");
  if (zero != nullptr && zero->is_object()) {
    if (const JsonValue* v = zero->Find("zenflow")) Zenflow(*v, diag);
  }
  for (const char* key :
       {"communication_data_type", "seq_parallel_communication_data_type"}) {
    if (const JsonValue* v = settings.Find(key)) {
      CommunicationDataType(key, *v, diag);
    }
  }
  GradientScaling(settings, config.zero_optimization().reduce_scatter(), diag);
  if (const JsonValue* v = settings.Find("sequence_parallel_size")) {
    SequenceParallelSize(*v, diag);
  }
  CheckIgnoredKeyTypes(settings, diag);
}

}  // namespace config
}  // namespace zero3
