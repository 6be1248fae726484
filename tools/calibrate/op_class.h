// Copyright 2026 The zero3 Authors.
//
// op_class.h: which in-step factor of a hardware profile an operation of a
// training step falls under, by its stream and label.
//
// The engine labels its operations the same on every backend ("layer 3
// q_proj fwd", "adamw sub-group 0 part 1"), and op timing reports host
// tasks on a stream called "host" (the CUDA backend's op timing and
// whatif::SimulateStep alike), so a measured step and its prediction sort
// into the same classes. Copies, memsets and collectives are in none.
//
// Thread-compatible: functions over values.

#ifndef ZERO3_TOOLS_CALIBRATE_OP_CLASS_H_
#define ZERO3_TOOLS_CALIBRATE_OP_CLASS_H_

#include <string>

#include "absl/strings/string_view.h"

namespace zero3 {
namespace calibrate {

enum class OpClass {
  kGemm,         // the linear layers and the head (gemm_in_step_factor)
  kAttention,    // flash attention forward and backward
  kElementwise,  // norms, biases, rotary, residuals, SwiGLU, loss, casts
  kOptimizer,    // the device AdamW (optimizer_in_step_factor)
  kHostAdam,     // the host AdamW's tasks (the host's memory bandwidth)
  kStridedCopy,  // the gradient reducer's strided bucket copies (copy2d)
  kPageableH2D,  // the optimizer's write-back from pageable host memory
  kPageableD2H,  // gradient copies to pageable host memory
  kOther,        // copies, memsets, collectives, other host work
};

// The class of an operation on `stream` labelled `label`, in a run whose
// optimizer state is in pageable host memory (`pageable_host`: the
// write-back of the parameters and the gradient copies are pageable
// copies) or pinned.
OpClass ClassifyOp(absl::string_view stream, absl::string_view label,
                   bool pageable_host = false);

// "gemm", "attention", ... for reports.
absl::string_view OpClassName(OpClass c);

// The label with every run of digits replaced by '#'.
std::string OpLabelKey(absl::string_view label);

}  // namespace calibrate
}  // namespace zero3

#endif  // ZERO3_TOOLS_CALIBRATE_OP_CLASS_H_
