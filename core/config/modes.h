// Copyright 2026 The zero3 Authors.
//
// modes.h: the configuration's modes as types, resolved once.
//
// DeepSpeed's keys carry modes as strings ("cpu", "async", "delayed", ...).
// The loader checks each against its choices; ModesOf maps the resolved
// configuration to the enums below, and this file's tables are the only
// place a mode's string is compared. Where the modes interact (whether the
// host share's optimizer step can leave the end of the step, and which of
// the ways asked for then applies), PlanHostStep is the one rule, for the
// loader's notices and for the engine alike.
//
// Thread-compatible: plain functions over values.

#ifndef ZERO3_CORE_CONFIG_MODES_H_
#define ZERO3_CORE_CONFIG_MODES_H_

#include "core/config/config.pb.h"

namespace zero3 {
namespace config {

// zero_optimization.offload_optimizer.device and offload_param.device.
enum class OffloadDevice { kNone, kCpu, kNvme };

// zero3.grad_offload: how offloaded gradients reach the host.
enum class GradOffload {
  // One asynchronous copy per bucket on the reduce stream, ordered before
  // the optimizer by the end-of-backward synchronize.
  kAsync,
  // DeepSpeed before 2026: a blocking copy per parameter (copy, then
  // synchronize the reduce stream), for comparison.
  kBlocking,
};

// zero3.grad_offload_copy: "bucketed" or "per_param_fp32".
enum class GradOffloadCopy { kBucketed, kPerParamFp32 };

// zero3.host_step_overlap: "none", "forward" or "delayed".
enum class HostStepOverlap { kNone, kForward, kDelayed };

// zero3.offloaded_step: where the offloaded optimizer's AdamW runs.
enum class OffloadedStep { kHost, kDevice, kAuto };

// zero3.checkpoint_write: "async" or "blocking".
enum class CheckpointWrite { kAsync, kBlocking };

// zero3.checkpoint_on_failure: "stop" or "continue".
enum class CheckpointOnFailure { kStop, kContinue };

// zero3.pinned_fallback: "error" or "pageable".
enum class PinnedFallback { kError, kPageable };

struct Modes {
  OffloadDevice offload_optimizer = OffloadDevice::kNone;
  OffloadDevice offload_param = OffloadDevice::kNone;
  GradOffload grad_offload = GradOffload::kAsync;
  GradOffloadCopy grad_offload_copy = GradOffloadCopy::kBucketed;
  HostStepOverlap host_step_overlap = HostStepOverlap::kNone;
  OffloadedStep offloaded_step = OffloadedStep::kHost;
  CheckpointWrite checkpoint_write = CheckpointWrite::kAsync;
  CheckpointOnFailure checkpoint_on_failure = CheckpointOnFailure::kStop;
  PinnedFallback pinned_fallback = PinnedFallback::kError;
  bool super_offload = false;  // offload_optimizer.super_offload
};

// The modes of a configuration the loader accepted (a string outside a
// mode's choices, which the loader refuses, reads as its default).
Modes ModesOf(const Config& config);

// What the modes ask of the host share's optimizer step.
struct HostStepAsk {
  bool offload_optimizer = false;
  bool nvme = false;  // the optimizer state on NVMe
  bool offload_param = false;
  bool per_param_fp32 = false;
  bool speculative = false;  // super_offload
  HostStepOverlap overlap = HostStepOverlap::kNone;
};

HostStepAsk HostStepAskOf(const Modes& modes);

// Where the host share's step runs, by the one rule: it can leave the end
// of the step only with the optimizer offloaded, the working copy going
// back through staging (not offload_param) and gradients in bucketed copies
// (not per_param_fp32); then the delayed update takes precedence over the
// speculative step, and the update under the next forward combines with the
// speculative step (which then carries the pieces it has not reached over
// to that forward).
struct HostStepPlan {
  // Null where the step can move; else why not, for the loader's notice.
  const char* cannot_move = nullptr;
  bool delayed = false;       // ZeRO-Offload's one-step delayed update
  bool speculative = false;   // the speculative step (super_offload)
  bool in_forward = false;    // the update under the next forward
  bool carries_over = false;  // speculative and in_forward
  bool moves() const { return delayed || speculative || in_forward; }
};

HostStepPlan PlanHostStep(const HostStepAsk& ask);

// What the offloaded step on the device needs of the rest of a run.
struct OffloadedStepAsk {
  bool offload_optimizer = false;
  bool offload_param = false;
  bool nvme = false;  // the optimizer state on NVMe
  bool auto_offload_ratio = false;
};

// Why the offloaded optimizer's AdamW cannot leave the host for `ask`, or
// nullptr where it may: the one rule the loader's notice and the engine's
// check both use.
const char* OffloadedStepCannotLeaveHost(const OffloadedStepAsk& ask);

// Why the offloaded optimizer's AdamW stays on the host in `config` although
// zero3.offloaded_step asks for "device" or "auto" (the loader's notice;
// the engine's options then say "host"), or nullptr where it may leave, and
// always for "host".
const char* OffloadedStepStaysOnHost(const Config& config);

}  // namespace config
}  // namespace zero3

#endif  // ZERO3_CORE_CONFIG_MODES_H_
