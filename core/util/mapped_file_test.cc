// Copyright 2026 The zero3 Authors.

#include "core/util/mapped_file.h"

#include <fstream>
#include <string>
#include <utility>

#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace {

using ::zero3::testing::StatusIs;

TEST(MappedFileTest, MapsTheBytes) {
  const std::string path = ::testing::TempDir() + "/mapped.bin";
  std::ofstream(path, std::ios::binary) << "hello";
  ASSERT_OK_AND_ASSIGN(MappedFile file, MappedFile::Open(path));
  EXPECT_EQ(file.path(), path);
  ASSERT_EQ(file.size(), 5);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(file.data()), 5),
            "hello");
  MappedFile moved = std::move(file);
  EXPECT_EQ(moved.size(), 5);
  EXPECT_EQ(moved.data()[4], 'o');
}

TEST(MappedFileTest, EmptyAndMissingFiles) {
  const std::string path = ::testing::TempDir() + "/empty.bin";
  std::ofstream(path, std::ios::binary).close();
  ASSERT_OK_AND_ASSIGN(MappedFile file, MappedFile::Open(path));
  EXPECT_EQ(file.size(), 0);
  EXPECT_EQ(file.data(), nullptr);
  EXPECT_THAT(MappedFile::Open(path + ".missing"),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(MappedFile::Open(::testing::TempDir()),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace zero3
