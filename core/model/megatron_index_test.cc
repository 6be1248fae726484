// Copyright 2026 The zero3 Authors.

#include "core/model/megatron_index.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/model/token_file_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace model {
namespace {

using ::testing::HasSubstr;
using ::zero3::testing::StatusIs;

// Three documents of 3, 1 and 4 tokens.
const std::vector<std::vector<int64_t>> kDocs = {
    {10, 11, 12}, {13}, {14, 15, 16, 17}};

// Writes kDocs, then replaces the .idx bytes at `offset` with `patch`.
std::string Patched(const std::string& name, size_t offset,
                    const std::string& patch) {
  const std::string prefix = TempPath(name);
  WriteMegatronDataset(prefix, kDocs, TokenDType::kUint16);
  std::string idx = ReadFileBytes(prefix + ".idx");
  idx.replace(offset, patch.size(), patch);
  WriteFileBytes(prefix + ".idx", idx);
  return prefix;
}

template <typename T>
std::string Bytes(T v) {
  return std::string(reinterpret_cast<const char*>(&v), sizeof(T));
}

TEST(MegatronIndexTest, ReadsTheIndexAndTheDocumentsInOrder) {
  for (TokenDType dtype : {TokenDType::kUint16, TokenDType::kInt32,
                           TokenDType::kUint8, TokenDType::kInt64}) {
    const std::string prefix = TempPath("docs");
    WriteMegatronDataset(prefix, kDocs, dtype);
    ASSERT_OK_AND_ASSIGN(MegatronIndex index,
                         ReadMegatronIndex(prefix + ".idx"));
    EXPECT_EQ(index.dtype, dtype);
    EXPECT_EQ(index.sequences, 3);
    EXPECT_EQ(index.documents, 3);
    EXPECT_EQ(index.first_byte, 0);
    EXPECT_EQ(index.tokens, 8);
    ASSERT_OK_AND_ASSIGN(TokenStream s, OpenMegatronTokens(prefix));
    EXPECT_EQ(s.path(), prefix + ".bin");
    std::vector<int32_t> out(8);
    ASSERT_OK(s.Read(0, 8, 100, out.data()));
    EXPECT_EQ(out, (std::vector<int32_t>{10, 11, 12, 13, 14, 15, 16, 17}));
  }
}

TEST(MegatronIndexTest, BadHeaders) {
  std::string p = Patched("magic", 0, "MMIDIDY");
  EXPECT_THAT(ReadMegatronIndex(p + ".idx"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(p + ".idx"), HasSubstr("MMIDIDX"))));
  p = Patched("version", 9, Bytes<uint64_t>(2));
  EXPECT_THAT(ReadMegatronIndex(p + ".idx"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(p + ".idx"), HasSubstr("version 2"))));
  p = Patched("float", 17, Bytes<uint8_t>(7));
  EXPECT_THAT(
      ReadMegatronIndex(p + ".idx"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("dtype code 7"), HasSubstr("floating-point"))));
  p = Patched("code", 17, Bytes<uint8_t>(9));
  EXPECT_THAT(
      ReadMegatronIndex(p + ".idx"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dtype code 9")));
  p = Patched("count", 18, Bytes<uint64_t>(1000));
  EXPECT_THAT(ReadMegatronIndex(p + ".idx"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(p + ".idx"), HasSubstr("truncated"))));
  const std::string short_idx = TempPath("short.idx");
  WriteFileBytes(short_idx, "MMIDIDX");
  EXPECT_THAT(ReadMegatronIndex(short_idx),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(short_idx), HasSubstr("header"))));
  EXPECT_THAT(ReadMegatronIndex(TempPath("none.idx")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("none.idx")));
}

TEST(MegatronIndexTest, BadTables) {
  // Header 34 bytes, lengths 3 x 4, pointers 3 x 8, document indices 4 x 8.
  std::string p = Patched("gap", 34 + 12 + 8, Bytes<int64_t>(8));
  EXPECT_THAT(ReadMegatronIndex(p + ".idx"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("sequence 1 starts at byte 8"),
                             HasSubstr("contiguous"))));
  p = Patched("negative", 34 + 4, Bytes<int32_t>(-1));
  EXPECT_THAT(ReadMegatronIndex(p + ".idx"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("sequence 1 has length -1")));
  p = Patched("docs", 34 + 12 + 24 + 24, Bytes<int64_t>(2));
  EXPECT_THAT(ReadMegatronIndex(p + ".idx"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("document index 3 is 2")));
}

TEST(MegatronIndexTest, MissingOrShortBin) {
  const std::string prefix = TempPath("nobin");
  WriteMegatronDataset(prefix, kDocs, TokenDType::kUint16);
  ASSERT_EQ(std::remove((prefix + ".bin").c_str()), 0);
  EXPECT_THAT(
      OpenMegatronTokens(prefix),
      StatusIs(absl::StatusCode::kNotFound,
               AllOf(HasSubstr(prefix + ".bin"), HasSubstr("needs the .bin"))));
  WriteFileBytes(prefix + ".bin", std::string(10, '\0'));
  EXPECT_THAT(
      OpenMegatronTokens(prefix),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr(prefix + ".bin"), HasSubstr("has 10 bytes"),
                     HasSubstr("up to byte 16"))));
  const std::string empty = TempPath("emptyset");
  WriteMegatronDataset(empty, {}, TokenDType::kUint16);
  EXPECT_THAT(OpenMegatronTokens(empty),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("holds no tokens")));
}

}  // namespace
}  // namespace model
}  // namespace zero3
