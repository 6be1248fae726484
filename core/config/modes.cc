// Copyright 2026 The zero3 Authors.

#include "core/config/modes.h"

#include <string>
#include <utility>

namespace zero3 {
namespace config {
namespace {

// The value of `text` in `table` (DeepSpeed's strings), or `fallback`.
template <typename E, size_t N>
E Lookup(const std::string& text, const std::pair<const char*, E> (&table)[N],
         E fallback) {
  for (const auto& [name, value] : table) {
    if (text == name) return value;
  }
  return fallback;
}

constexpr std::pair<const char*, OffloadDevice> kDevices[] = {
    {"none", OffloadDevice::kNone},
    {"cpu", OffloadDevice::kCpu},
    {"nvme", OffloadDevice::kNvme}};
constexpr std::pair<const char*, GradOffload> kGradOffloads[] = {
    {"async", GradOffload::kAsync}, {"blocking", GradOffload::kBlocking}};
constexpr std::pair<const char*, GradOffloadCopy> kCopies[] = {
    {"bucketed", GradOffloadCopy::kBucketed},
    {"per_param_fp32", GradOffloadCopy::kPerParamFp32}};
constexpr std::pair<const char*, HostStepOverlap> kOverlaps[] = {
    {"none", HostStepOverlap::kNone},
    {"forward", HostStepOverlap::kForward},
    {"delayed", HostStepOverlap::kDelayed}};
constexpr std::pair<const char*, OffloadedStep> kOffloadedSteps[] = {
    {"host", OffloadedStep::kHost},
    {"device", OffloadedStep::kDevice},
    {"auto", OffloadedStep::kAuto}};
constexpr std::pair<const char*, CheckpointWrite> kWrites[] = {
    {"async", CheckpointWrite::kAsync},
    {"blocking", CheckpointWrite::kBlocking}};
constexpr std::pair<const char*, CheckpointOnFailure> kOnFailure[] = {
    {"stop", CheckpointOnFailure::kStop},
    {"continue", CheckpointOnFailure::kContinue}};
constexpr std::pair<const char*, PinnedFallback> kFallbacks[] = {
    {"error", PinnedFallback::kError}, {"pageable", PinnedFallback::kPageable}};

}  // namespace

Modes ModesOf(const Config& config) {
  const ZeroOptimization& z = config.zero_optimization();
  const Zero3& z3 = config.zero3();
  Modes m;
  m.offload_optimizer =
      Lookup(z.offload_optimizer().device(), kDevices, OffloadDevice::kNone);
  m.offload_param =
      Lookup(z.offload_param().device(), kDevices, OffloadDevice::kNone);
  m.grad_offload =
      Lookup(z3.grad_offload(), kGradOffloads, GradOffload::kAsync);
  m.grad_offload_copy =
      Lookup(z3.grad_offload_copy(), kCopies, GradOffloadCopy::kBucketed);
  m.host_step_overlap =
      Lookup(z3.host_step_overlap(), kOverlaps, HostStepOverlap::kNone);
  m.offloaded_step =
      Lookup(z3.offloaded_step(), kOffloadedSteps, OffloadedStep::kHost);
  m.checkpoint_write =
      Lookup(z3.checkpoint_write(), kWrites, CheckpointWrite::kAsync);
  m.checkpoint_on_failure = Lookup(z3.checkpoint_on_failure(), kOnFailure,
                                   CheckpointOnFailure::kStop);
  m.pinned_fallback =
      Lookup(z3.pinned_fallback(), kFallbacks, PinnedFallback::kError);
  m.super_offload = z.offload_optimizer().super_offload();
  return m;
}

HostStepAsk HostStepAskOf(const Modes& modes) {
  HostStepAsk ask;
  ask.offload_optimizer = modes.offload_optimizer != OffloadDevice::kNone;
  ask.nvme = modes.offload_optimizer == OffloadDevice::kNvme;
  ask.offload_param = modes.offload_param != OffloadDevice::kNone;
  ask.per_param_fp32 =
      modes.grad_offload_copy == GradOffloadCopy::kPerParamFp32;
  ask.speculative = modes.super_offload;
  ask.overlap = modes.host_step_overlap;
  return ask;
}

HostStepPlan PlanHostStep(const HostStepAsk& ask) {
  HostStepPlan plan;
  if (!ask.offload_optimizer) {
    plan.cannot_move =
        "the optimizer is not offloaded (offload_optimizer.device \"none\")";
  } else if (ask.nvme) {
    plan.cannot_move =
        "the optimizer state on NVMe is stepped at the step's end, each "
        "piece as the drive delivers it (offload_optimizer.device \"nvme\")";
  } else if (ask.offload_param) {
    plan.cannot_move = "offload_param keeps the working shards on the host";
  } else if (ask.per_param_fp32) {
    plan.cannot_move =
        "zero3.grad_offload_copy \"per_param_fp32\" sends the fp32 master "
        "back";
  }
  if (plan.cannot_move != nullptr) return plan;
  plan.delayed = ask.overlap == HostStepOverlap::kDelayed;
  plan.speculative = ask.speculative && !plan.delayed;
  plan.in_forward = ask.overlap == HostStepOverlap::kForward;
  plan.carries_over = plan.speculative && plan.in_forward;
  return plan;
}

const char* OffloadedStepCannotLeaveHost(const OffloadedStepAsk& ask) {
  if (!ask.offload_optimizer) {
    return "the optimizer is not offloaded (offload_optimizer.device "
           "\"none\")";
  }
  if (ask.offload_param) {
    return "offload_param keeps the working shards on the host";
  }
  if (ask.nvme) {
    return "the optimizer state on NVMe is stepped by the host as the drive "
           "delivers it";
  }
  if (ask.auto_offload_ratio) {
    return "zero3.auto_offload_ratio sizes the device share at start-up; "
           "set offload_optimizer.ratio instead";
  }
  return nullptr;
}

const char* OffloadedStepStaysOnHost(const Config& config) {
  const Modes modes = ModesOf(config);
  if (modes.offloaded_step == OffloadedStep::kHost) return nullptr;
  OffloadedStepAsk ask;
  ask.offload_optimizer = modes.offload_optimizer != OffloadDevice::kNone;
  ask.offload_param = modes.offload_param != OffloadDevice::kNone;
  ask.nvme = modes.offload_optimizer == OffloadDevice::kNvme;
  ask.auto_offload_ratio = config.zero3().auto_offload_ratio();
  return OffloadedStepCannotLeaveHost(ask);
}

}  // namespace config
}  // namespace zero3
