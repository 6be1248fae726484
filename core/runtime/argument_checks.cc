// Copyright 2026 The zero3 Authors.

#include "core/runtime/argument_checks.h"

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace runtime {

absl::Status CheckAllGather(const TensorRef& send, const TensorRef& recv,
                            int size, absl::string_view label) {
  if (recv.elements() != send.elements() * size || recv.dtype != send.dtype) {
    return absl::InvalidArgumentError(absl::StrCat(
        "all-gather '", label, "': recv must hold ", size, " x ",
        send.elements(), " elements of the send dtype, has ", recv.elements()));
  }
  return absl::OkStatus();
}

absl::Status CheckAllGatherGroup(absl::Span<const AllGatherPart> parts,
                                 int size, absl::string_view label) {
  if (parts.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("all-gather group '", label, "' has no parts"));
  }
  for (const AllGatherPart& part : parts) {
    ZR_RETURN_IF_ERROR(CheckAllGather(part.send, part.recv, size, label));
  }
  return absl::OkStatus();
}

absl::Status CheckReduceScatter(const TensorRef& send, const TensorRef& recv,
                                int size, absl::string_view label) {
  if (send.elements() != recv.elements() * size || recv.dtype != send.dtype) {
    return absl::InvalidArgumentError(absl::StrCat(
        "reduce-scatter '", label, "': send must hold ", size, " x ",
        recv.elements(), " elements of the recv dtype, has ", send.elements()));
  }
  return absl::OkStatus();
}

absl::Status CheckAllReduce(const TensorRef& send, const TensorRef& recv,
                            absl::string_view label) {
  if (send.elements() != recv.elements() || recv.dtype != send.dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat("all-reduce '", label, "': send and recv must match"));
  }
  return absl::OkStatus();
}

absl::Status CheckBroadcast(int root, int size, absl::string_view label) {
  if (root < 0 || root >= size) {
    return absl::InvalidArgumentError(
        absl::StrCat("broadcast '", label, "': root ", root, " out of range"));
  }
  return absl::OkStatus();
}

absl::Status CheckCopy2D(const BufferSlice& dst, int64_t dst_pitch,
                         const BufferSlice& src, int64_t src_pitch,
                         int64_t row_bytes, int64_t rows,
                         absl::string_view label) {
  if (IsHost(dst.space()) || IsHost(src.space())) {
    return absl::InvalidArgumentError(
        absl::StrCat("copy2d '", label, "': device-to-device only"));
  }
  if (rows < 0 || row_bytes < 0 || row_bytes > dst_pitch ||
      row_bytes > src_pitch) {
    return absl::InvalidArgumentError(absl::StrCat(
        "copy2d '", label, "': row of ", row_bytes,
        " bytes does not fit pitches ", src_pitch, " / ", dst_pitch));
  }
  if (rows > 0 && ((rows - 1) * dst_pitch + row_bytes > dst.bytes() ||
                   (rows - 1) * src_pitch + row_bytes > src.bytes())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "copy2d '", label, "': ", rows, " rows do not fit the slices"));
  }
  return absl::OkStatus();
}

}  // namespace runtime
}  // namespace zero3
