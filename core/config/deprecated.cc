// Copyright 2026 The zero3 Authors.

#include "core/config/deprecated.h"

#include <functional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/config/json_to_config.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace zero3 {
namespace config {
namespace {

using ::google::protobuf::FieldDescriptor;
using ::google::protobuf::Message;
using ::google::protobuf::Reflection;

std::string Quote(absl::string_view s) { return QuoteJsonString(s); }

class Translator {
 public:
  Translator(absl::Span<const DeprecatedUse> uses, Diagnostics* diag)
      : uses_(uses), diag_(diag) {}

  // Translates every use into `config`.
  void Apply(Config* config) {
    ZeroOptimization* zero = config->mutable_zero_optimization();
    // DeepSpeed rejects a deprecated key given with its replacement.
    const bool optimizer_given = zero->has_offload_optimizer();
    const bool param_given = zero->has_offload_param();
    // The device keys first: cpu_offload_use_pin_memory applies to the
    // offload sections they enable.
    if (const DeprecatedUse* use = FindDeprecated("cpu_offload")) {
      if (!RejectPair(*use, optimizer_given,
                      "zero_optimization.offload_optimizer")) {
        ApplyDeviceKey(*use, zero->mutable_offload_optimizer(),
                       "zero_optimization.offload_optimizer.device");
      }
    }
    if (const DeprecatedUse* use = FindDeprecated("cpu_offload_param")) {
      if (!RejectPair(*use, param_given, "zero_optimization.offload_param")) {
        ApplyDeviceKey(*use, zero->mutable_offload_param(),
                       "zero_optimization.offload_param.device");
      }
    }
    // Not a DeepSpeed key (it rejects it as unknown): kept for the old docs
    // that told users to write it.
    if (const DeprecatedUse* use = FindDeprecated("cpu_offload_params")) {
      ApplyDeviceKey(*use, zero->mutable_offload_param(),
                     "zero_optimization.offload_param.device");
    }
    if (const DeprecatedUse* use =
            FindDeprecated("cpu_offload_use_pin_memory")) {
      ApplyPinMemoryKey(*use, zero);
    }
    if (const DeprecatedUse* use =
            FindDeprecated("stage3_gather_fp16_weights_on_model_save")) {
      bool on = false;
      const std::string target =
          "zero_optimization.stage3_gather_16bit_weights_on_model_save";
      if (DeprecatedBool(*use, &on) && !diag_->IsPoisoned(target)) {
        if (!RejectPair(*use,
                        zero->has_stage3_gather_16bit_weights_on_model_save(),
                        target)) {
          zero->set_stage3_gather_16bit_weights_on_model_save(on);
          diag_->Notice(use->path, absl::StrCat("deprecated; read as ", target,
                                                " = ", on ? "true" : "false",
                                                ". Write that instead"));
        }
      }
    }
  }

 private:
  // Reports `use` given together with its replacement `target` (when
  // `target_given`), as DeepSpeed rejects the pair; returns whether it did.
  bool RejectPair(const DeprecatedUse& use, bool target_given,
                  const std::string& target) {
    if (!target_given) return false;
    diag_->ValueError(use.path,
                      absl::StrCat("deprecated, and given together with its "
                                   "replacement ",
                                   target,
                                   ": DeepSpeed rejects the pair (\"Cannot "
                                   "provide deprecated parameter ... and "
                                   "replacing parameter ... together\", "
                                   "runtime/config_utils.py); remove ",
                                   use.path, " and keep ", target));
    return true;
  }

  // Reads a deprecated key's boolean value; false on a type error.
  bool DeprecatedBool(const DeprecatedUse& use, bool* out) {
    if (use.value.is_bool()) {
      *out = use.value.bool_value();
      return true;
    }
    ReportTypeError(use.value, use.path, FieldDescriptor::CPPTYPE_BOOL,
                    "true or false", "", diag_);
    return false;
  }

  const DeprecatedUse* FindDeprecated(absl::string_view key) const {
    for (const DeprecatedUse& use : uses_) {
      if (use.key == key) return &use;
    }
    return nullptr;
  }

  // cpu_offload / cpu_offload_param(s): true means device "cpu", false
  // "none". `owner` holds the device field at `device_path`.
  void ApplyDeviceKey(const DeprecatedUse& use, Message* owner,
                      const std::string& device_path) {
    bool on = false;
    if (!DeprecatedBool(use, &on)) return;
    const std::string wanted = on ? "cpu" : "none";
    const FieldDescriptor* f =
        owner->GetDescriptor()->FindFieldByName("device");
    const Reflection* r = owner->GetReflection();
    if (diag_->IsPoisoned(device_path)) return;
    if (r->HasField(*owner, f)) {
      const std::string current = r->GetString(*owner, f);
      const auto setter = set_by_.find(device_path);
      if (current == wanted) {
        if (setter == set_by_.end()) {
          diag_->Notice(use.path,
                        absl::StrCat("deprecated, and repeats ", device_path,
                                     " = ", Quote(current),
                                     "; remove it (DeepSpeed rejects the two "
                                     "together)"));
        } else {
          diag_->Notice(use.path,
                        absl::StrCat("deprecated, and repeats ", setter->second,
                                     "; remove both and write ", device_path,
                                     " = ", Quote(current)));
        }
        return;
      }
      const std::string other =
          setter != set_by_.end()
              ? setter->second
              : absl::StrCat(device_path, " = ", Quote(current));
      diag_->ValueError(
          use.path, absl::StrCat(on ? "true" : "false", " (deprecated: means ",
                                 device_path, " = ", Quote(wanted),
                                 ") contradicts ", other, "; remove ", use.path,
                                 " and keep ", device_path));
      return;
    }
    r->SetString(owner, f, wanted);
    set_by_[device_path] = absl::StrCat(use.path, ": ", on ? "true" : "false");
    diag_->Notice(use.path,
                  absl::StrCat("deprecated; read as ", device_path, " = ",
                               Quote(wanted), ". Write that instead",
                               on ? "" : " (or nothing: it is the default)"));
  }

  // cpu_offload_use_pin_memory sets pin_memory of every enabled offload
  // section. DeepSpeed only logs a warning and drops the value, so since its
  // pin_memory default became true an explicit false there silently pins;
  // here it is honoured.
  void ApplyPinMemoryKey(const DeprecatedUse& use, ZeroOptimization* zero) {
    bool pin = false;
    if (!DeprecatedBool(use, &pin)) return;
    struct Section {
      const char* path;
      bool enabled;
      bool has_pin;
      bool current;
      std::function<void(bool)> set;
    };
    OffloadOptimizer* opt = zero->mutable_offload_optimizer();
    OffloadParam* param = zero->mutable_offload_param();
    const Section sections[] = {
        {"zero_optimization.offload_optimizer",
         opt->has_device() && opt->device() != "none", opt->has_pin_memory(),
         opt->pin_memory(), [opt](bool v) { opt->set_pin_memory(v); }},
        {"zero_optimization.offload_param",
         param->has_device() && param->device() != "none",
         param->has_pin_memory(), param->pin_memory(),
         [param](bool v) { param->set_pin_memory(v); }},
    };
    const char* value = pin ? "true" : "false";
    bool any = false;
    for (const Section& s : sections) {
      if (!s.enabled) continue;
      any = true;
      const std::string pin_path = absl::StrCat(s.path, ".pin_memory");
      if (diag_->IsPoisoned(pin_path)) continue;
      if (s.has_pin) {
        if (s.current == pin) {
          diag_->Notice(use.path,
                        absl::StrCat("deprecated, and repeats ", pin_path,
                                     " = ", value, "; remove it"));
        } else {
          diag_->ValueError(
              use.path,
              absl::StrCat(value, " (deprecated: means ", pin_path, " = ",
                           value, ") contradicts ", pin_path, " = ",
                           s.current ? "true" : "false", "; remove ", use.path,
                           " and keep ", pin_path));
        }
        continue;
      }
      s.set(pin);
      diag_->Notice(
          use.path,
          absl::StrCat(
              "deprecated; read as ", pin_path, " = ", value,
              ". Write that instead",
              pin ? ""
                  : "; DeepSpeed ignores this key and would pin host memory "
                    "(its pin_memory default is true)"));
    }
    if (!any) {
      diag_->Notice(use.path,
                    "deprecated, and has no effect: no offload section is "
                    "enabled (it sets pin_memory of offload_optimizer and "
                    "offload_param); remove it");
    }
  }

  absl::Span<const DeprecatedUse> uses_;
  Diagnostics* diag_;
  // Target path -> the deprecated key that set it, for contradictions
  // between two deprecated keys.
  absl::flat_hash_map<std::string, std::string> set_by_;
};

}  // namespace

void ApplyDeprecated(absl::Span<const DeprecatedUse> uses, Config* config,
                     Diagnostics* diag) {
  if (uses.empty()) return;
  Translator(uses, diag).Apply(config);
}

}  // namespace config
}  // namespace zero3
