// Copyright 2026 The zero3 Authors.

#include "core/config/hf_auto.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/config/overrides.h"
#include "core/config/schema.h"

namespace zero3 {
namespace config {
namespace {

constexpr absl::string_view kTrainer = "the Hugging Face Trainer";

bool IsAuto(const JsonValue* v) {
  return v != nullptr && v->is_string() && v->string_value() == "auto";
}

// The value at dotted canonical `path`, under any of its names; null if
// absent.
JsonValue* FindPath(JsonValue* root, absl::string_view path) {
  JsonValue* node = root;
  std::string section;
  for (absl::string_view part : absl::StrSplit(path, '.')) {
    if (node == nullptr || !node->is_object()) return nullptr;
    JsonValue* child = nullptr;
    for (const std::string& name : EquivalentNames(section, part)) {
      child = node->Find(name);
      if (child != nullptr) break;
    }
    node = child;
    section = JoinPath(section, part);
  }
  return node;
}

// A value zero3 fills in, with its JSON text for notices.
struct Fill {
  JsonValue value;
  std::string text;
};

Fill IntFill(int64_t v) { return {JsonValue::Int(v), absl::StrCat(v)}; }
Fill DoubleFill(double v) {
  return {JsonValue::Double(v), FormatJsonDouble(v)};
}

class Resolver {
 public:
  Resolver(JsonValue* settings, Diagnostics* diag)
      : settings_(settings), diag_(diag) {}

  // "auto" at `path` becomes `fill`; `how` completes the notice.
  void FillAuto(absl::string_view path, const Fill& fill,
                absl::string_view how) {
    JsonValue* node = FindPath(settings_, path);
    if (!IsAuto(node)) return;
    const SourcePosition position = node->position();
    *node = fill.value;
    node->set_position(position);
    diag_->Notice(std::string(path),
                  absl::StrCat("\"auto\" resolved to ", fill.text, how));
  }

  // A flag's value for `path`, as the Trainer's fill_match: fills "auto",
  // must equal a number given in the file, and (with `set_if_absent`) sets
  // a key the file leaves out.
  void FromFlag(absl::string_view path, const Fill& fill,
                absl::string_view flag, bool set_if_absent) {
    JsonValue* node = FindPath(settings_, path);
    const std::string p(path);
    if (IsAuto(node)) {
      FillAuto(path, fill, absl::StrCat(" from ", flag));
    } else if (node != nullptr && node->is_number()) {
      if (node->number_value() == fill.value.number_value()) return;
      diag_->SetPosition(p, node->position());
      diag_->ValueError(
          p, absl::StrCat(node->number_text(), " here, but ", flag, " is ",
                          fill.text, ": write \"auto\" to take ", flag, " (as ",
                          kTrainer,
                          " would ask you to), or leave out one of them"));
    } else if (node == nullptr && set_if_absent) {
      if (SetSettingsKey(settings_, path, fill.text).ok()) {
        diag_->Notice(
            p, absl::StrCat("not given; set to ", fill.text, " by ", flag));
      }
    }
  }

  // The number at `path` as an integer, if it is one.
  std::optional<int64_t> Int(absl::string_view path) {
    const JsonValue* node = FindPath(settings_, path);
    if (node == nullptr || !node->is_number()) return std::nullopt;
    const absl::optional<int64_t> v = node->AsExactInt64();
    if (!v.has_value()) return std::nullopt;
    return *v;
  }

  // "auto" at `path` becomes `fill` and sets `flag_path` to true: for a
  // choice zero3 makes at start-up rather than from the configuration.
  void AutoAtStartUp(absl::string_view path, const Fill& fill,
                     absl::string_view flag_path, absl::string_view how) {
    if (!IsAuto(FindPath(settings_, path))) return;
    FillAuto(path, fill, how);
    SetSettingsKey(settings_, flag_path, "true").IgnoreError();
  }

  bool Has(absl::string_view path) {
    const JsonValue* node = FindPath(settings_, path);
    return node != nullptr && !node->is_null();
  }

 private:
  JsonValue* settings_;
  Diagnostics* diag_;
};

void ResolveBatchAuto(const AutoValues& v, int64_t world_size, Resolver& r) {
  if (v.micro_batch) {
    r.FromFlag("train_micro_batch_size_per_gpu", IntFill(*v.micro_batch),
               "--micro-batch", true);
  }
  if (v.accumulation) {
    r.FromFlag("gradient_accumulation_steps", IntFill(*v.accumulation),
               "--accumulation", true);
  }
  // The Trainer's world_size x per_device_train_batch_size x
  // gradient_accumulation_steps (whose default is 1).
  const std::optional<int64_t> micro = r.Int("train_micro_batch_size_per_gpu");
  if (!micro || (r.Has("gradient_accumulation_steps") &&
                 !r.Int("gradient_accumulation_steps"))) {
    return;
  }
  const int64_t accumulation = r.Int("gradient_accumulation_steps").value_or(1);
  int64_t batch = 0;
  if (__builtin_mul_overflow(*micro, accumulation, &batch) ||
      __builtin_mul_overflow(batch, world_size, &batch)) {
    return;  // the batch check reports it
  }
  r.FillAuto(
      "train_batch_size", IntFill(batch),
      absl::StrCat(" = train_micro_batch_size_per_gpu ", *micro,
                   " x gradient_accumulation_steps ", accumulation, " x ",
                   world_size, " ranks, as ", kTrainer, " computes it"));
}

void ResolveSchedulerAuto(const AutoValues& v, Resolver& r, Diagnostics* diag) {
  r.FillAuto("scheduler.params.warmup_min_lr", DoubleFill(0),
             absl::StrCat(", as ", kTrainer, " fills it"));
  if (v.lr) {
    r.FromFlag("scheduler.params.warmup_max_lr", DoubleFill(*v.lr), "--lr",
               false);
  }
  if (v.steps) {
    // Not checked against a number in the file: a run may be the start of
    // a longer schedule.
    r.FillAuto("scheduler.params.total_num_steps", IntFill(*v.steps),
               " from --steps");
  }
  if (!v.warmup_steps) return;
  if (!r.Has("scheduler")) {
    diag->Error("scheduler",
                "not given: --warmup-steps sets "
                "scheduler.params.warmup_num_steps of a scheduler section; "
                "add one, such as \"scheduler\": {\"type\": \"WarmupLR\"}, "
                "or leave out --warmup-steps");
    return;
  }
  r.FromFlag("scheduler.params.warmup_num_steps", IntFill(*v.warmup_steps),
             "--warmup-steps", true);
}

void ResolveHiddenAuto(const AutoValues& v, Resolver& r) {
  if (!v.hidden_size) return;
  const int64_t h = *v.hidden_size;
  const std::string of = absl::StrCat(" for the model's hidden size ", h,
                                      ", as ", kTrainer, " fills it");
  r.FillAuto("zero_optimization.reduce_bucket_size", IntFill(h * h),
             absl::StrCat(" = hidden_size²", of));
  // 0.9·h², rounded down to the integer DeepSpeed needs.
  r.FillAuto("zero_optimization.stage3_prefetch_bucket_size",
             IntFill(h * h * 9 / 10),
             absl::StrCat(" = 0.9 x hidden_size² rounded down", of));
  r.FillAuto("zero_optimization.stage3_param_persistence_threshold",
             IntFill(10 * h), absl::StrCat(" = 10 x hidden_size", of));
}

// The Trainer's defaults of arguments zero3 has no flag for.
void ResolveTrainerDefaults(Resolver& r) {
  auto how = [](absl::string_view arg) {
    return absl::StrCat(", ", kTrainer, "'s default ", arg,
                        " (zero3 has no flag for it)");
  };
  r.FillAuto("gradient_clipping", DoubleFill(1.0), how("max_grad_norm"));
  JsonValue betas = JsonValue::Array();
  betas.Append(JsonValue::Double(0.9));
  betas.Append(JsonValue::Double(0.999));
  r.FillAuto("optimizer.params.betas", {betas, "[0.9, 0.999]"},
             how("adam_beta1 and adam_beta2"));
  r.FillAuto("optimizer.params.eps", DoubleFill(1e-8), how("adam_epsilon"));
  r.FillAuto("optimizer.params.weight_decay", DoubleFill(0),
             how("weight_decay"));
  // fp16.enabled and bf16.enabled stay errors: the Trainer's --fp16 and
  // --bf16 decide them, and guessing "off" would silently train in fp32
  // what the same command line trained in bf16 there.
}

}  // namespace

void ResolveAuto(const AutoValues& values, int64_t world_size,
                 JsonValue* settings, Diagnostics* diag) {
  if (!settings->is_object()) return;
  Resolver r(settings, diag);
  ResolveBatchAuto(values, world_size, r);
  if (values.lr) {
    r.FromFlag("optimizer.params.lr", DoubleFill(*values.lr), "--lr", true);
  }
  ResolveSchedulerAuto(values, r, diag);
  ResolveHiddenAuto(values, r);
  ResolveTrainerDefaults(r);
  r.AutoAtStartUp("zero_optimization.offload_optimizer.ratio", DoubleFill(1),
                  "zero3.auto_offload_ratio",
                  " here and chosen at start-up from the device's free "
                  "memory (zero3.auto_offload_ratio)");
}

std::string AutoHint(absl::string_view path) {
  struct Hint {
    absl::string_view path, flag;
  };
  static constexpr Hint kHints[] = {
      {"train_micro_batch_size_per_gpu", "--micro-batch"},
      {"gradient_accumulation_steps", "--accumulation"},
      {"train_batch_size", "--micro-batch"},
      {"optimizer.params.lr", "--lr"},
      {"scheduler.params.warmup_max_lr", "--lr"},
      {"scheduler.params.warmup_num_steps", "--warmup-steps"},
      {"scheduler.params.total_num_steps", "--steps"},
  };
  for (const Hint& h : kHints) {
    if (h.path != path) continue;
    return absl::StrCat("zero3 train fills it from ", h.flag,
                        ", which is not given: give ", h.flag,
                        ", or replace \"auto\" with a value");
  }
  for (absl::string_view key : {"fp16.enabled", "bf16.enabled"}) {
    if (path != key) continue;
    const absl::string_view type = path.substr(0, 4);
    return absl::StrCat("the Hugging Face Trainer fills it from its --", type,
                        " flag, which zero3 does not have: give --set ", path,
                        "=true or --set ", path,
                        "=false, or replace \"auto\" with true or false");
  }
  for (absl::string_view key :
       {"reduce_bucket_size", "stage3_prefetch_bucket_size",
        "stage3_param_persistence_threshold", "prefetch_bucket_size",
        "param_persistence_threshold"}) {
    if (path == JoinPath("zero_optimization", key)) {
      return "zero3 train fills it from the hidden size of its --model; "
             "elsewhere replace \"auto\" with a number";
    }
  }
  return "";
}

}  // namespace config
}  // namespace zero3
