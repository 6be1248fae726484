// Copyright 2026 The zero3 Authors.

#include "core/config/scheduler.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace zero3 {
namespace config {

const std::vector<std::string>& SchedulerTypes() {
  static const auto* const types = new std::vector<std::string>{
      "WarmupLR", "WarmupDecayLR", "WarmupCosineLR", "OneCycle", "LRRangeTest"};
  return *types;
}

std::vector<std::string> SchedulerParamNames(absl::string_view type) {
  if (type == "WarmupLR") {
    return {"warmup_min_lr", "warmup_max_lr", "warmup_num_steps", "warmup_type",
            "last_batch_iteration"};
  }
  if (type == "WarmupDecayLR") {
    return {"total_num_steps",  "warmup_min_lr", "warmup_max_lr",
            "warmup_num_steps", "warmup_type",   "last_batch_iteration"};
  }
  if (type == "WarmupCosineLR") {
    return {"total_num_steps", "warmup_min_ratio", "warmup_num_steps",
            "cos_min_ratio",   "warmup_type",      "last_batch_iteration"};
  }
  if (type == "OneCycle") {
    return {"cycle_min_lr",
            "cycle_max_lr",
            "decay_lr_rate",
            "cycle_first_step_size",
            "cycle_second_step_size",
            "cycle_first_stair_count",
            "cycle_second_stair_count",
            "decay_step_size",
            "cycle_momentum",
            "cycle_min_mom",
            "cycle_max_mom",
            "decay_mom_rate",
            "last_batch_iteration"};
  }
  if (type == "LRRangeTest") {
    return {"lr_range_test_min_lr", "lr_range_test_step_size",
            "lr_range_test_step_rate", "lr_range_test_staircase",
            "last_batch_iteration"};
  }
  return {};
}

namespace {

// Sets each parameter `names` lists that has a default in the proto (the
// constructor's) and is not given.
void FillProtoDefaults(const std::vector<std::string>& names,
                       SchedulerParams* p) {
  const google::protobuf::Descriptor* d = SchedulerParams::descriptor();
  const google::protobuf::Reflection* r = p->GetReflection();
  for (const std::string& name : names) {
    const google::protobuf::FieldDescriptor* f = d->FindFieldByName(name);
    if (f == nullptr || !f->has_default_value() || r->HasField(*p, f)) {
      continue;
    }
    switch (f->cpp_type()) {
      case google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE:
        r->SetDouble(p, f, f->default_value_double());
        break;
      case google::protobuf::FieldDescriptor::CPPTYPE_INT64:
        r->SetInt64(p, f, f->default_value_int64());
        break;
      case google::protobuf::FieldDescriptor::CPPTYPE_BOOL:
        r->SetBool(p, f, f->default_value_bool());
        break;
      case google::protobuf::FieldDescriptor::CPPTYPE_STRING:
        r->SetString(p, f, f->default_value_string());
        break;
      default:
        break;
    }
  }
}

}  // namespace

void ResolveScheduler(Config* config, Diagnostics* diag) {
  if (!config->has_scheduler() || diag->IsPoisoned("scheduler.params")) {
    return;
  }
  const std::string type = config->scheduler().type();
  const std::vector<std::string> names = SchedulerParamNames(type);
  if (names.empty()) return;
  SchedulerParams* p = config->mutable_scheduler()->mutable_params();
  auto takes = [&](const char* name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  // DeepSpeed's constructor defaults; those without a fixed value first.
  if (takes("warmup_max_lr") && !p->has_warmup_max_lr()) {
    p->set_warmup_max_lr(type == "WarmupLR" ? config->optimizer().params().lr()
                                            : 0.001);
  }
  FillProtoDefaults(names, p);
  // None in DeepSpeed: the first half's.
  if (takes("cycle_second_step_size") && !p->has_cycle_second_step_size()) {
    p->set_cycle_second_step_size(p->cycle_first_step_size());
  }
  if (takes("cycle_second_stair_count") && !p->has_cycle_second_stair_count()) {
    p->set_cycle_second_stair_count(p->cycle_first_stair_count());
  }
  if (p->has_total_num_steps() &&
      p->total_num_steps() < p->warmup_num_steps() &&
      !diag->IsPoisoned("scheduler.params.total_num_steps")) {
    diag->Notice(
        "scheduler.params.total_num_steps",
        absl::StrCat(p->total_num_steps(), " is less than warmup_num_steps ",
                     p->warmup_num_steps(),
                     ": the decay starts only after the warmup "
                     "(DeepSpeed warns about this too)"));
  }
}

}  // namespace config
}  // namespace zero3
