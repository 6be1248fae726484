// Copyright 2026 The zero3 Authors.

#include "core/model/data_file.h"

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

DataFileOptions Options(int64_t vocab, std::string dtype = "") {
  DataFileOptions o;
  o.dtype = std::move(dtype);
  o.vocab = vocab;
  o.seq = 4;
  o.seed = 1;
  return o;
}

std::vector<int64_t> Ids(int64_t n) {
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back(i % 200);
  return ids;
}

TEST(DataFileTest, BinIsTokensWithTheDTypeTheVocabularyNeeds) {
  const std::string path = TempPath("tokens.bin");
  WriteFileBytes(path, TokenBytes(Ids(41), TokenDType::kUint16));
  ASSERT_OK_AND_ASSIGN(auto source, OpenDataFile(path, Options(259)));
  EXPECT_THAT(source->description(),
              AllOf(HasSubstr("uint16"), HasSubstr("41 tokens")));
  // A vocabulary past 16 bits reads uint32 by default: 82 bytes are 20.5
  // of them.
  EXPECT_THAT(OpenDataFile(path, Options(151936)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(path), HasSubstr("uint32"))));
  ASSERT_OK_AND_ASSIGN(source, OpenDataFile(path, Options(151936, "uint16")));
  EXPECT_THAT(source->description(), HasSubstr("uint16"));
  EXPECT_THAT(
      OpenDataFile(path, Options(259, "int8")),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--data-dtype")));
}

TEST(DataFileTest, TextStaysTextUnlessGivenADType) {
  const std::string text = TempPath("notes.txt");
  std::ofstream(text) << "plain words, read as bytes as always\n";
  ASSERT_OK_AND_ASSIGN(auto source, OpenDataFile(text, Options(259)));
  EXPECT_THAT(source->description(), HasSubstr("text file"));
  EXPECT_THAT(OpenDataFile(text, Options(259, "uint16")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(text), HasSubstr("looks like text"),
                             HasSubstr("drop --data-dtype"))));
  // Token ids under another name, given a dtype.
  const std::string ids = TempPath("train.tokens");
  WriteFileBytes(ids, TokenBytes(Ids(41), TokenDType::kUint32));
  ASSERT_OK_AND_ASSIGN(source, OpenDataFile(ids, Options(259, "uint32")));
  EXPECT_THAT(source->description(), HasSubstr("uint32"));
  EXPECT_THAT(OpenDataFile(TempPath("missing.txt"), Options(259)),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST(DataFileTest, MegatronPairsByBinIdxOrPrefix) {
  const std::string prefix = TempPath("mega");
  WriteMegatronDataset(prefix, {Ids(20), Ids(21)}, TokenDType::kInt32);
  for (const std::string& path : {prefix, prefix + ".bin", prefix + ".idx"}) {
    ASSERT_OK_AND_ASSIGN(auto source, OpenDataFile(path, Options(259)));
    EXPECT_THAT(source->description(),
                AllOf(HasSubstr("mega.bin"), HasSubstr("int32"),
                      HasSubstr("41 tokens")));
  }
  EXPECT_THAT(OpenDataFile(prefix, Options(259, "uint16")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("disagrees"), HasSubstr("int32"))));
  const std::string lone = TempPath("lone");
  WriteMegatronDataset(lone, {Ids(20)}, TokenDType::kUint16);
  ASSERT_EQ(std::remove((lone + ".bin").c_str()), 0);
  for (const std::string& path : {lone, lone + ".idx", lone + ".bin"}) {
    EXPECT_THAT(
        OpenDataFile(path, Options(259)),
        StatusIs(absl::StatusCode::kNotFound, HasSubstr(lone + ".bin")));
  }
}

TEST(DataFileTest, TheShippedTinyCorpusIsTheCorpusAsUint16Bytes) {
  const std::string corpus = ReadFileBytes("testing/testdata/text/corpus.txt");
  const std::string shipped =
      ReadFileBytes("testing/testdata/tokens/tiny_corpus_u16.bin");
  ASSERT_FALSE(corpus.empty());
  std::vector<int64_t> ids(corpus.begin(), corpus.end());
  for (int64_t& id : ids) id = static_cast<unsigned char>(id);
  EXPECT_EQ(shipped, TokenBytes(ids, TokenDType::kUint16));
  ASSERT_OK_AND_ASSIGN(
      auto source, OpenDataFile("testing/testdata/tokens/tiny_corpus_u16.bin",
                                Options(259)));
  std::vector<int32_t> tokens, targets;
  EXPECT_OK(source->Fill({4, 4, 1, 2}, 0, 0, 1, &tokens, &targets));
}

}  // namespace
}  // namespace model
}  // namespace zero3
