// Copyright 2026 The zero3 Authors.
//
// kernel_call_checks.h: the argument rules of kernel_call.h's ops that do
// not depend on the backend, checked once for every backend (the reference
// executor, the simulator, the CUDA launcher), as argument_checks.h does for
// collectives and copies.
//
// A call passes when its counts are non-negative (dimensions positive where
// a zero one has no meaning), its scalars finite where the op needs them
// so, its tensors of the dtypes the op takes and large enough for the
// counts, and its ids and byte buffers large enough. With `need_data`,
// every tensor the op touches must also have memory behind it (the
// simulator's timing mode runs on buffers without any). A backend adds its
// own limits (grid sizes, library support) with a KernelCallChecker.
//
// Thread-compatible: plain functions; a KernelCallChecker is one call's.

#ifndef ZERO3_CORE_RUNTIME_KERNEL_CALL_CHECKS_H_
#define ZERO3_CORE_RUNTIME_KERNEL_CALL_CHECKS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/runtime/buffer.h"
#include "core/runtime/kernel_call.h"

namespace zero3 {
namespace runtime {

// InvalidArgument naming the call's label, op and the first rule it breaks;
// FailedPrecondition for a tensor without data when `need_data`; OK
// otherwise.
absl::Status CheckKernelCall(const KernelCall& call, bool need_data);

// Collects the first failure of one call's checks, naming the call.
class KernelCallChecker {
 public:
  KernelCallChecker(const KernelCall& call, bool need_data)
      : call_(call), need_data_(need_data) {}

  // InvalidArgument: "label (op): what".
  void Fail(absl::string_view what);
  // Unimplemented: a valid call this backend cannot run.
  void Unsupported(absl::string_view what);
  void NonNegative(int64_t value, const char* name);
  void Positive(int64_t value, const char* name);
  // A float that must be finite (and >= 0 where non_negative).
  void Finite(float value, const char* name, bool non_negative);
  // `t` holds at least `elements` elements (and data, with need_data,
  // where elements > 0).
  void Need(const TensorRef& t, int64_t elements, const char* name);
  // A raw slice of `count` int32 ids, or of `bytes` bytes.
  void NeedIds(const BufferSlice& s, int64_t count, const char* name);
  void NeedBytes(const BufferSlice& s, int64_t bytes, const char* name);
  void NeedF32(const TensorRef& t, const char* name);

  bool ok() const { return status_.ok(); }
  const absl::Status& status() const { return status_; }

 private:
  const KernelCall& call_;
  const bool need_data_;
  absl::Status status_;
};

}  // namespace runtime
}  // namespace zero3

#endif  // ZERO3_CORE_RUNTIME_KERNEL_CALL_CHECKS_H_
