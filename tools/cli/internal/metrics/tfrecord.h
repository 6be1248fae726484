// Copyright 2026 The zero3 Authors.
//
// tfrecord.h: TFRecord framing, the container of TensorBoard event files.
// Each record is
//
//   uint64 length, little-endian
//   uint32 masked CRC-32C of those 8 bytes
//   length bytes of data
//   uint32 masked CRC-32C of the data
//
// (crc32c.h for the mask).

#ifndef ZERO3_TOOLS_CLI_INTERNAL_METRICS_TFRECORD_H_
#define ZERO3_TOOLS_CLI_INTERNAL_METRICS_TFRECORD_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace metrics {

// `data` framed as one record.
std::string FrameRecord(absl::string_view data);

// The records of a file's contents, every length and CRC checked. An error
// names the byte offset of the record at fault (`name` is the file).
absl::StatusOr<std::vector<std::string>> ReadRecords(absl::string_view bytes,
                                                     absl::string_view name);

}  // namespace metrics
}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_METRICS_TFRECORD_H_
