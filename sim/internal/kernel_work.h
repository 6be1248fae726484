// Copyright 2026 The zero3 Authors.
//
// kernel_work.h: the FLOPs and bytes of a KernelCall, for the cost model.

#ifndef ZERO3_SIM_INTERNAL_KERNEL_WORK_H_
#define ZERO3_SIM_INTERNAL_KERNEL_WORK_H_

#include "core/runtime/kernel_call.h"
#include "sim/cost_model.h"

namespace zero3 {
namespace sim {
namespace internal {

KernelWork WorkOf(const runtime::KernelCall& call);

}  // namespace internal
}  // namespace sim
}  // namespace zero3

#endif  // ZERO3_SIM_INTERNAL_KERNEL_WORK_H_
