// Copyright 2026 The zero3 Authors.

#include "core/model/token_stream.h"

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

TEST(TokenStreamTest, ReadsFlatFilesOfBothDTypes) {
  const std::vector<int64_t> ids = {0, 1, 258, 65535, 7};
  for (TokenDType dtype : {TokenDType::kUint16, TokenDType::kUint32}) {
    const std::string path = TempPath("flat.bin");
    WriteFileBytes(path, TokenBytes(ids, dtype));
    ASSERT_OK_AND_ASSIGN(TokenStream s, OpenFlatTokens(path, dtype));
    EXPECT_EQ(s.tokens(), 5);
    EXPECT_EQ(s.path(), path);
    std::vector<int32_t> out(3);
    ASSERT_OK(s.Read(2, 3, 65536, out.data()));
    EXPECT_EQ(out, (std::vector<int32_t>{258, 65535, 7}));
  }
  // uint32 ids past 16 bits.
  const std::string path = TempPath("wide.bin");
  WriteFileBytes(path, TokenBytes({151935, 70000}, TokenDType::kUint32));
  ASSERT_OK_AND_ASSIGN(TokenStream s,
                       OpenFlatTokens(path, TokenDType::kUint32));
  std::vector<int32_t> out(2);
  ASSERT_OK(s.Read(0, 2, 151936, out.data()));
  EXPECT_EQ(out, (std::vector<int32_t>{151935, 70000}));
}

TEST(TokenStreamTest, IdOutsideTheVocabularyNamesFileAndOffset) {
  const std::string path = TempPath("big_id.bin");
  WriteFileBytes(path, TokenBytes({5, 6, 300, 7}, TokenDType::kUint16));
  ASSERT_OK_AND_ASSIGN(TokenStream s,
                       OpenFlatTokens(path, TokenDType::kUint16));
  std::vector<int32_t> out(4);
  ASSERT_OK(s.Read(0, 2, 259, out.data()));
  EXPECT_THAT(
      s.Read(1, 3, 259, out.data()),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr(path), HasSubstr("token id 300"),
                     HasSubstr("byte offset 4"), HasSubstr("[0, 259)"))));
}

TEST(TokenStreamTest, BadFlatFiles) {
  const std::string odd = TempPath("odd.bin");
  WriteFileBytes(odd, std::string("\x01\x00\x02", 3));
  EXPECT_THAT(OpenFlatTokens(odd, TokenDType::kUint16),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(odd), HasSubstr("3 bytes"),
                             HasSubstr("uint16"))));
  const std::string six = TempPath("six.bin");
  WriteFileBytes(six, std::string(6, '\0'));
  EXPECT_THAT(OpenFlatTokens(six, TokenDType::kUint32),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(six), HasSubstr("uint32"))));
  const std::string empty = TempPath("empty.bin");
  WriteFileBytes(empty, "");
  EXPECT_THAT(OpenFlatTokens(empty, TokenDType::kUint16),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(empty), HasSubstr("empty"))));
  EXPECT_THAT(OpenFlatTokens(TempPath("missing.bin"), TokenDType::kUint16),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing.bin")));
}

TEST(TokenStreamTest, DTypeNamesAndDefault) {
  EXPECT_EQ(*ParseTokenDType("uint16"), TokenDType::kUint16);
  EXPECT_EQ(*ParseTokenDType("uint32"), TokenDType::kUint32);
  EXPECT_THAT(ParseTokenDType("int16"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--data-dtype must be uint16 or uint32")));
  EXPECT_EQ(DefaultTokenDType(259), TokenDType::kUint16);
  EXPECT_EQ(DefaultTokenDType(65536), TokenDType::kUint16);
  EXPECT_EQ(DefaultTokenDType(65537), TokenDType::kUint32);
  EXPECT_EQ(DefaultTokenDType(151936), TokenDType::kUint32);
}

}  // namespace
}  // namespace model
}  // namespace zero3
