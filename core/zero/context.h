// Copyright 2026 The zero3 Authors.
//
// context.h: what the ZeRO-3 components of one rank share.
//
// The streams: model kernels run on `compute`; parameter all-gathers (and
// the copies that feed them) on `gather`; gradient bucketing, reduce-scatter,
// partition accumulation and the gradient copies to the host on `reduce`.
// Without overlap_comm all three are the compute stream, as in DeepSpeed.
// Nothing here is owned; the engine owns all of it and outlives the
// components. Not thread-safe.

#ifndef ZERO3_CORE_ZERO_CONTEXT_H_
#define ZERO3_CORE_ZERO_CONTEXT_H_

#include "core/runtime/runtime.h"
#include "core/zero/options.h"
#include "core/zero/shard_layout.h"

namespace zero3 {
namespace zero {

struct ZeroContext {
  runtime::Runtime* rt = nullptr;
  // The data-parallel group the shards are spread over (all ranks without
  // tensor parallelism).
  runtime::Communicator* dp = nullptr;
  runtime::Stream* compute = nullptr;
  runtime::Stream* gather = nullptr;
  runtime::Stream* reduce = nullptr;
  const ShardLayout* layout = nullptr;
  const ZeroOptions* options = nullptr;
  runtime::DType dtype = runtime::DType::kF32;
  // The flat-layout elements [0, host_begin) are updated on the device and
  // [host_begin, layout->total()) on the host: total() without
  // offload_optimizer, 0 with all of the optimizer offloaded, a parameter
  // boundary in between (offload_optimizer.ratio).
  int64_t host_begin = 0;
  // Of the device-updated elements, [streamed_begin, host_begin) keep their
  // master and moments on the host and stream them through the device for
  // the update (zero3.offloaded_step, streamed_step.h); host_begin without.
  int64_t streamed_begin = 0;

  // Elements of the host share of the optimizer state.
  int64_t host_elements() const { return layout->total() - host_begin; }

  bool sync(Sync s) const { return options->syncs.enabled(s); }
  int data_parallel_size() const { return layout->data_parallel_size(); }
};

// Whether the boundary backward steps the streamed elements speculatively
// (streamed_step.h): there are some, and the host step plan speculates.
inline bool StreamsSpeculatively(const ZeroContext& ctx) {
  return ctx.host_begin > ctx.streamed_begin &&
         HostStepPlanOf(*ctx.options).speculative;
}

}  // namespace zero
}  // namespace zero3

#endif  // ZERO3_CORE_ZERO_CONTEXT_H_
