// Copyright 2026 The zero3 Authors.
//
// op_timing.h: when one stream operation ran on the device.
//
// Backends that measure their operations (the CUDA backend with op timing
// on) and the simulator's trace both come down to these records, so a run
// on GPUs and its simulated prediction can be compared operation by
// operation. A plain value type.

#ifndef ZERO3_CORE_RUNTIME_OP_TIMING_H_
#define ZERO3_CORE_RUNTIME_OP_TIMING_H_

#include <cstdint>
#include <string>

namespace zero3 {
namespace runtime {

struct OpTiming {
  std::string stream;  // the stream's name
  std::string label;   // the operation's label (kernel, copy or collective)
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  // A kernel's kind (KernelCall::OpName()) where the backend reports it (the
  // simulator does); else empty.
  std::string kind;
};

}  // namespace runtime
}  // namespace zero3

#endif  // ZERO3_CORE_RUNTIME_OP_TIMING_H_
