// Copyright 2026 The zero3 Authors.

#include "core/io/safetensors.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/util/crc32c.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace io {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::zero3::testing::StatusIs;

std::string TempPath(absl::string_view name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/", name);
}

void WriteRaw(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A file with `header` as its JSON header (length from `length` when >= 0)
// and `data` as its data section.
std::string Craft(const std::string& header, const std::string& data,
                  int64_t length = -1) {
  const uint64_t n =
      length >= 0 ? static_cast<uint64_t>(length) : header.size();
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

absl::Status OpenCrafted(absl::string_view name, const std::string& bytes) {
  const std::string path = TempPath(name);
  WriteRaw(path, bytes);
  return SafetensorsFile::Open(path).status();
}

TEST(SafetensorsTest, WritesAndReadsBack) {
  const std::vector<float> a = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, 8.0f};
  const std::vector<uint16_t> b = {0x3f80, 0xc000, 0x4040};
  const std::string c = "xyz";
  std::vector<TensorToWrite> tensors(3);
  tensors[0] = {
      "c", TensorDType::kU8, {3}, absl::string_view(c.data(), c.size())};
  tensors[1] = {"b",
                TensorDType::kBF16,
                {3},
                absl::string_view(reinterpret_cast<const char*>(b.data()), 6)};
  tensors[2] = {"a",
                TensorDType::kF32,
                {2, 3},
                absl::string_view(reinterpret_cast<const char*>(a.data()), 24)};
  const std::string path = TempPath("roundtrip.safetensors");
  ASSERT_OK(WriteSafetensors(path, tensors, {{"format", "pt"}}));
  ASSERT_OK_AND_ASSIGN(auto file, SafetensorsFile::Open(path));
  EXPECT_EQ(file->data_offset() % 8, 0);
  ASSERT_EQ(file->tensors().size(), 3u);
  // Largest elements first: every tensor aligned to its element size.
  EXPECT_EQ(file->tensors()[0].name, "a");
  EXPECT_EQ(file->tensors()[1].name, "b");
  EXPECT_EQ(file->tensors()[2].name, "c");
  ASSERT_EQ(file->metadata().size(), 1u);
  EXPECT_EQ(file->metadata()[0].second, "pt");
  const TensorEntry* ta = file->Find("a");
  ASSERT_NE(ta, nullptr);
  EXPECT_EQ(ta->ShapeString(), "[2, 3]");
  EXPECT_EQ(ta->numel(), 6);
  std::vector<float> got(2);
  ASSERT_OK(file->Read(*ta, 8, 8, got.data()));  // elements 2 and 3
  EXPECT_EQ(got[0], 3.25f);
  EXPECT_EQ(got[1], 0.0f);
  std::vector<uint16_t> gb(3);
  ASSERT_OK(file->Read(*file->Find("b"), 0, 6, gb.data()));
  EXPECT_EQ(gb, b);
  EXPECT_EQ(file->Find("missing"), nullptr);
}

TEST(SafetensorsTest, FailedWriteLeavesTargetUntouched) {
  const std::string path = TempPath("untouched.safetensors");
  WriteRaw(path, "old");
  std::vector<TensorToWrite> bad = {{"a", TensorDType::kF32, {2}, "abc"}};
  EXPECT_THAT(WriteSafetensors(path, bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'a'"), HasSubstr("needs 8 bytes"))));
  std::ifstream f(path);
  std::string contents((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ(contents, "old");
}

TEST(SafetensorsTest, DigestIsTheWrittenFiles) {
  const std::vector<float> a = {1.5f, -2.0f, 3.25f};
  const std::vector<TensorToWrite> tensors = {
      {"a",
       TensorDType::kF32,
       {3},
       absl::string_view(reinterpret_cast<const char*>(a.data()), 12)}};
  const std::string path = TempPath("digest.safetensors");
  FileDigest digest;
  ASSERT_OK(WriteSafetensors(path, tensors, {{"k", "v"}}, &digest));
  std::ifstream f(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ(digest.bytes, static_cast<int64_t>(bytes.size()));
  EXPECT_EQ(digest.crc32c, Crc32c(bytes));
}

TEST(SafetensorsTest, ReadsTransformersFile) {
  ASSERT_OK_AND_ASSIGN(auto file,
                       SafetensorsFile::Open(
                           "testing/testdata/hf/qwen2_tied/model.safetensors"));
  const TensorEntry* e = file->Find("model.embed_tokens.weight");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->dtype, TensorDType::kF32);
  EXPECT_EQ(e->ShapeString(), "[96, 32]");
  EXPECT_EQ(file->Find("lm_head.weight"), nullptr);  // tied
}

struct BadCase {
  const char* name;
  std::string bytes;
  const char* message;
};

TEST(SafetensorsTest, RejectsBadFilesNamingFileAndTensor) {
  const std::string f32x2(8, '\0');
  const std::vector<BadCase> cases = {
      {"short", "abc", "fewer than the 8"},
      {"length_past_end", Craft("{}", "", 1000), "reaches past the end"},
      {"not_json", Craft("{\"a\": ", ""), "the header is not JSON"},
      {"not_object", Craft("[1, 2]", ""), "not a JSON object"},
      {"unknown_dtype",
       Craft(R"({"w": {"dtype": "F33", "shape": [2], "data_offsets": [0, 8]}})",
             f32x2),
       "tensor 'w': unknown dtype 'F33'"},
      {"truncated",
       Craft(
           R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})",
           f32x2),
       "tensor 'w': data_offsets [0, 16] reach past the data section"},
      {"wrong_size",
       Craft(R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})",
             f32x2),
       "tensor 'w': shape [3] of F32 needs 12 bytes"},
      {"overlap",
       Craft(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
             R"( "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
             f32x2),
       "tensors 'a' and 'b' overlap"},
      {"misaligned",
       Craft(
           R"({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},)"
           R"( "b": {"dtype": "BF16", "shape": [3], "data_offsets": [2, 8]},)"
           R"( "c": {"dtype": "F32", "shape": [1], "data_offsets": [6, 10]}})",
           std::string(10, '\0')),
       "tensor 'c' starts at byte 6, not aligned"},
      {"hole",
       Craft(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
             f32x2),
       "bytes [0, 4) of the data section before tensor 'w' belong to no "
       "tensor"},
      {"trailing",
       Craft(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})",
             f32x2),
       "the data section has 8 bytes, the tensors cover 4"},
      {"bad_shape",
       Craft(
           R"({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})",
           f32x2),
       "tensor 'w' has a shape entry"},
      {"bad_metadata", Craft(R"({"__metadata__": {"a": 1}})", ""),
       "__metadata__ value 'a'"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string name = absl::StrCat(c.name, ".safetensors");
    EXPECT_THAT(OpenCrafted(name, c.bytes),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr(name), HasSubstr(c.message))));
  }
  EXPECT_THAT(SafetensorsFile::Open(TempPath("absent.safetensors")).status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("absent")));
}

}  // namespace
}  // namespace io
}  // namespace zero3
