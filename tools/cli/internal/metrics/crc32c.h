// Copyright 2026 The zero3 Authors.
//
// crc32c.h: CRC-32C (Castagnoli), as TFRecord files checksum their records.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_METRICS_CRC32C_H_
#define ZERO3_TOOLS_CLI_INTERNAL_METRICS_CRC32C_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace metrics {

// The CRC-32C of `data` (reflected polynomial 0x82F63B78, initial value and
// final XOR 0xFFFFFFFF): "123456789" gives 0xE3069283.
uint32_t Crc32c(absl::string_view data);

// TFRecord's masked CRC: the CRC rotated right by 15 bits plus 0xA282EAD8,
// so that a CRC stored beside the data it covers checks poorly against
// itself.
uint32_t MaskCrc32c(uint32_t crc);

}  // namespace metrics
}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_METRICS_CRC32C_H_
