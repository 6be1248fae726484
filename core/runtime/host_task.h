// Copyright 2026 The zero3 Authors.
//
// host_task.h: work the host thread does on host buffers.
//
// The CPU optimizer step, a loss read, a gradient-norm sum: anything the host
// computes from or into host buffers goes through a HostTask, which declares
// the byte ranges it reads and writes and what it costs. The declaration is
// what lets the simulator order the task against asynchronous copies (and
// report it when it is not ordered), and cost it against the host profile.
//
// Runtime::RunHostTask runs the task on the calling host thread and returns
// when it is done. `run` is not called when the backend computes no values
// (the simulator in timing mode).

#ifndef ZERO3_CORE_RUNTIME_HOST_TASK_H_
#define ZERO3_CORE_RUNTIME_HOST_TASK_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/runtime/buffer.h"

namespace zero3 {
namespace runtime {

struct HostTask {
  std::string label;
  std::vector<BufferSlice> reads;
  std::vector<BufferSlice> writes;

  // What the work costs: floating-point operations, bytes of memory traffic,
  // and the threads it spreads over (bounded by the rank's cores).
  double flops = 0;
  int64_t memory_bytes = 0;
  int threads = 1;
  // Host time the task takes beyond its flops and bytes: work of fixed
  // length, as a framework's per-call overhead (ZeroOptions::
  // host_work_per_grad_ns). The simulator adds it to the task's cost; the
  // CUDA backend spins for it after `run`.
  int64_t fixed_nanos = 0;

  std::function<absl::Status()> run;
};

}  // namespace runtime
}  // namespace zero3

#endif  // ZERO3_CORE_RUNTIME_HOST_TASK_H_
