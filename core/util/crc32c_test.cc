// Copyright 2026 The zero3 Authors.

#include "core/util/crc32c.h"

#include <string>

#include "gtest/gtest.h"

namespace zero3 {
namespace {

// Check values of CRC-32C: the catalogue's "123456789" and RFC 3720's
// (iSCSI) appendix B.4 vectors.
TEST(Crc32cTest, KnownVectors) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(""), 0u);
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  std::string ascending, descending;
  for (int i = 0; i < 32; ++i) {
    ascending.push_back(static_cast<char>(i));
    descending.push_back(static_cast<char>(31 - i));
  }
  EXPECT_EQ(Crc32c(ascending), 0x46DD794Eu);
  EXPECT_EQ(Crc32c(descending), 0x113FDB5Cu);
}

TEST(Crc32cTest, ExtendContinuesAcrossPieces) {
  EXPECT_EQ(ExtendCrc32c(Crc32c("1234"), "56789"), 0xE3069283u);
  EXPECT_EQ(ExtendCrc32c(Crc32c("123456789"), ""), 0xE3069283u);
  EXPECT_NE(ExtendCrc32c(Crc32c("1234"), "56788"), 0xE3069283u);
}

// Every length and split point up to a few words, against a bit-at-a-time
// CRC (the definition), so the 8-byte path and its byte tail agree.
TEST(Crc32cTest, AgreesWithTheDefinition) {
  auto bitwise = [](const std::string& data) {
    uint32_t crc = 0xFFFFFFFF;
    for (unsigned char c : data) {
      crc ^= c;
      for (int bit = 0; bit < 8; ++bit) {
        crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
      }
    }
    return crc ^ 0xFFFFFFFF;
  };
  std::string data;
  uint32_t x = 12345;
  for (int i = 0; i < 40; ++i) {
    x = x * 1103515245u + 12345u;
    data.push_back(static_cast<char>(x >> 24));
  }
  for (size_t n = 0; n <= data.size(); ++n) {
    const std::string piece = data.substr(0, n);
    EXPECT_EQ(Crc32c(piece), bitwise(piece)) << n;
    for (size_t split = 0; split <= n; ++split) {
      EXPECT_EQ(
          ExtendCrc32c(Crc32c(piece.substr(0, split)), piece.substr(split)),
          bitwise(piece))
          << n << " split at " << split;
    }
  }
}

// TFRecord's mask, by its definition: rotate right 15, add 0xA282EAD8.
TEST(Crc32cTest, Mask) {
  EXPECT_EQ(MaskCrc32c(0), 0xA282EAD8u);
  EXPECT_EQ(MaskCrc32c(0x00008000u), 0xA282EAD9u);  // bit 15 -> bit 0
  EXPECT_EQ(MaskCrc32c(0x00000001u), 0xA284EAD8u);  // bit 0 -> bit 17
  EXPECT_EQ(MaskCrc32c(0xFFFFFFFFu), 0xA282EAD7u);  // wraps modulo 2^32
}

}  // namespace
}  // namespace zero3
