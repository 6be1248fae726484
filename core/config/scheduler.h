// Copyright 2026 The zero3 Authors.
//
// scheduler.h: the `scheduler` section's types and the parameters each
// takes, and the loader stage that fills in each given type's defaults.
//
// DeepSpeed builds the scheduler as type(optimizer, **params), so each type
// takes exactly the keyword arguments of its constructor
// (deepspeed/runtime/lr_schedules.py); zero3 fills in those and only those.
//
// Thread-compatible: plain functions over static tables. Internal to the
// loader (config_loader.h).

#ifndef ZERO3_CORE_CONFIG_SCHEDULER_H_
#define ZERO3_CORE_CONFIG_SCHEDULER_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/config/config.pb.h"
#include "core/config/diagnostics.h"

namespace zero3 {
namespace config {

// "WarmupLR", "WarmupDecayLR", "WarmupCosineLR", "OneCycle", "LRRangeTest".
const std::vector<std::string>& SchedulerTypes();

// The SchedulerParams fields `type` takes, in the constructor's order;
// empty for a type zero3 does not implement.
std::vector<std::string> SchedulerParamNames(absl::string_view type);

// Fills in the defaults of the parameters the given scheduler's type takes
// (warmup_max_lr of WarmupLR: the optimizer's lr, so after FillDefaults),
// and notes a decay that ends before the warmup does. Nothing without a
// scheduler section or with a type zero3 does not implement (Validate
// reports it).
void ResolveScheduler(Config* config, Diagnostics* diag);

}  // namespace config
}  // namespace zero3

#endif  // ZERO3_CORE_CONFIG_SCHEDULER_H_
