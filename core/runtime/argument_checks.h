// Copyright 2026 The zero3 Authors.
//
// argument_checks.h: the argument rules of communicator.h and stream.h that
// do not depend on the backend, checked once for every backend.
//
// Each returns InvalidArgument naming the operation, its label and what is
// wrong, or OK. Thread-compatible: plain functions.

#ifndef ZERO3_CORE_RUNTIME_ARGUMENT_CHECKS_H_
#define ZERO3_CORE_RUNTIME_ARGUMENT_CHECKS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/runtime/buffer.h"
#include "core/runtime/communicator.h"

namespace zero3 {
namespace runtime {

// Communicator over `size` ranks.
absl::Status CheckAllGather(const TensorRef& send, const TensorRef& recv,
                            int size, absl::string_view label);
// At least one part, each an all-gather's (CheckAllGather).
absl::Status CheckAllGatherGroup(absl::Span<const AllGatherPart> parts,
                                 int size, absl::string_view label);
absl::Status CheckReduceScatter(const TensorRef& send, const TensorRef& recv,
                                int size, absl::string_view label);
absl::Status CheckAllReduce(const TensorRef& send, const TensorRef& recv,
                            absl::string_view label);
absl::Status CheckBroadcast(int root, int size, absl::string_view label);

// Stream::Copy2D: device memory on both sides, rows that fit their pitches
// and slices.
absl::Status CheckCopy2D(const BufferSlice& dst, int64_t dst_pitch,
                         const BufferSlice& src, int64_t src_pitch,
                         int64_t row_bytes, int64_t rows,
                         absl::string_view label);

}  // namespace runtime
}  // namespace zero3

#endif  // ZERO3_CORE_RUNTIME_ARGUMENT_CHECKS_H_
