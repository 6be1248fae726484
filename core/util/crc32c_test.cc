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

// TFRecord's mask, by its definition: rotate right 15, add 0xA282EAD8.
TEST(Crc32cTest, Mask) {
  EXPECT_EQ(MaskCrc32c(0), 0xA282EAD8u);
  EXPECT_EQ(MaskCrc32c(0x00008000u), 0xA282EAD9u);  // bit 15 -> bit 0
  EXPECT_EQ(MaskCrc32c(0x00000001u), 0xA284EAD8u);  // bit 0 -> bit 17
  EXPECT_EQ(MaskCrc32c(0xFFFFFFFFu), 0xA282EAD7u);  // wraps modulo 2^32
}

}  // namespace
}  // namespace zero3
