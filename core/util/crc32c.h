// Copyright 2026 The zero3 Authors.
//
// crc32c.h: CRC-32C (Castagnoli), as TFRecord files checksum their records
// and checkpoints their files.

#ifndef ZERO3_CORE_UTIL_CRC32C_H_
#define ZERO3_CORE_UTIL_CRC32C_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace zero3 {

// The CRC-32C of `data` (reflected polynomial 0x82F63B78, initial value and
// final XOR 0xFFFFFFFF): "123456789" gives 0xE3069283.
uint32_t Crc32c(absl::string_view data);

// The CRC-32C of the bytes whose CRC is `crc` followed by `data`, for data
// read in pieces: ExtendCrc32c(Crc32c(a), b) == Crc32c(a + b).
uint32_t ExtendCrc32c(uint32_t crc, absl::string_view data);

// TFRecord's masked CRC: the CRC rotated right by 15 bits plus 0xA282EAD8,
// so that a CRC stored beside the data it covers checks poorly against
// itself.
uint32_t MaskCrc32c(uint32_t crc);

}  // namespace zero3

#endif  // ZERO3_CORE_UTIL_CRC32C_H_
