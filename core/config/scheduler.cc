// Copyright 2026 The zero3 Authors.

#include "core/config/scheduler.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace zero3 {
namespace config {

const std::vector<std::string>& SchedulerTypes() {
  static const auto* const types = new std::vector<std::string>{
      "WarmupLR", "WarmupDecayLR", "WarmupCosineLR"};
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
  return {};
}

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
  // DeepSpeed's constructor defaults.
  if (takes("warmup_min_lr") && !p->has_warmup_min_lr()) {
    p->set_warmup_min_lr(p->warmup_min_lr());
  }
  if (takes("warmup_max_lr") && !p->has_warmup_max_lr()) {
    p->set_warmup_max_lr(type == "WarmupLR" ? config->optimizer().params().lr()
                                            : 0.001);
  }
  if (!p->has_warmup_num_steps()) {
    p->set_warmup_num_steps(p->warmup_num_steps());
  }
  if (!p->has_warmup_type()) p->set_warmup_type(p->warmup_type());
  if (takes("warmup_min_ratio") && !p->has_warmup_min_ratio()) {
    p->set_warmup_min_ratio(p->warmup_min_ratio());
  }
  if (takes("cos_min_ratio") && !p->has_cos_min_ratio()) {
    p->set_cos_min_ratio(p->cos_min_ratio());
  }
  if (!p->has_last_batch_iteration()) {
    p->set_last_batch_iteration(p->last_batch_iteration());
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
