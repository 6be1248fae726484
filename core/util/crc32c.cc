// Copyright 2026 The zero3 Authors.

#include "core/util/crc32c.h"

#include <array>
#include <cstddef>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define ZERO3_CRC32C_SSE42 1
#endif

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

// The CRC register after `data`, a byte at a time (no final XOR).
uint32_t ExtendBytes(uint32_t crc, absl::string_view data) {
  static const std::array<uint32_t, 256> table = MakeTable();
  for (unsigned char c : data) crc = table[(crc ^ c) & 0xFF] ^ (crc >> 8);
  return crc;
}

#ifdef ZERO3_CRC32C_SSE42
// The same with SSE4.2's CRC32 instruction, 8 bytes at a time: the
// checkpoint writer and reader checksum gigabytes.
__attribute__((target("sse4.2"))) uint32_t ExtendSse42(uint32_t crc,
                                                       absl::string_view data) {
  const char* p = data.data();
  size_t n = data.size();
  uint64_t c = crc;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  for (; n > 0; ++p, --n) c32 = _mm_crc32_u8(c32, static_cast<uint8_t>(*p));
  return c32;
}

bool HasSse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

}  // namespace

uint32_t Crc32c(absl::string_view data) { return ExtendCrc32c(0, data); }

uint32_t ExtendCrc32c(uint32_t crc, absl::string_view data) {
  crc ^= 0xFFFFFFFF;
#ifdef ZERO3_CRC32C_SSE42
  if (HasSse42()) return ExtendSse42(crc, data) ^ 0xFFFFFFFF;
#endif
  return ExtendBytes(crc, data) ^ 0xFFFFFFFF;
}

uint32_t MaskCrc32c(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

}  // namespace zero3
