// Copyright 2026 The zero3 Authors.

#include "core/util/crc32c.h"

#include <array>

namespace zero3 {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78;  // Castagnoli, reflected

// The CRC of every byte value, one bit at a time.
std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 1) ? (crc >> 1) ^ kPolynomial : crc >> 1;
    }
    table[byte] = crc;
  }
  return table;
}

}  // namespace

uint32_t Crc32c(absl::string_view data) { return ExtendCrc32c(0, data); }

uint32_t ExtendCrc32c(uint32_t crc, absl::string_view data) {
  static const std::array<uint32_t, 256> table = MakeTable();
  crc ^= 0xFFFFFFFF;
  for (unsigned char c : data) crc = table[(crc ^ c) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFF;
}

uint32_t MaskCrc32c(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

}  // namespace zero3
