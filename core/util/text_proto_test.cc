// Copyright 2026 The zero3 Authors.

#include "core/util/text_proto.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "google/protobuf/descriptor.pb.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace {

using ::google::protobuf::FileDescriptorProto;

TEST(ReadTextProtoTest, Parses) {
  FileDescriptorProto file;
  std::vector<TextProtoError> errors;
  EXPECT_TRUE(ReadTextProto("name: \"a.proto\"", &file, &errors));
  EXPECT_EQ(file.name(), "a.proto");
  EXPECT_TRUE(errors.empty());
}

TEST(ReadTextProtoTest, ErrorsSayWhere) {
  FileDescriptorProto file;
  std::vector<TextProtoError> errors;
  EXPECT_FALSE(ReadTextProto("name: \"a\"\npackage }", &file, &errors));
  ASSERT_EQ(errors.size(), 1);
  EXPECT_EQ(errors[0].line, 2);
  EXPECT_EQ(errors[0].column, 9);
  EXPECT_EQ(errors[0].type, nullptr);
  EXPECT_EQ(errors[0].InText(),
            "line 2, column 9: Expected \":\", found \"}\".");
  EXPECT_EQ(errors[0].InFile("f.textproto"),
            "f.textproto:2:9: Expected \":\", found \"}\".");
}

TEST(ReadTextProtoTest, RecognizesUnknownFields) {
  FileDescriptorProto file;
  std::vector<TextProtoError> errors;
  EXPECT_FALSE(ReadTextProto("options { jav_package: \"x\" }", &file, &errors));
  ASSERT_EQ(errors.size(), 1);
  EXPECT_EQ(errors[0].type, google::protobuf::FileOptions::descriptor());
  EXPECT_EQ(errors[0].unknown_field, "jav_package");
}

TEST(ParseTextProtoTest, FirstErrorWithSource) {
  FileDescriptorProto file;
  const absl::Status status = ParseTextProto("bogus: 1", "b.txt", &file);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "b.txt:1:6: Message type \"google.protobuf.FileDescriptorProto\" "
            "has no field named \"bogus\".");
}

TEST(ReadTextProtoFileTest, ADirectoryIsNotAFile) {
  FileDescriptorProto file;
  const std::string dir = std::getenv("TEST_TMPDIR");
  const absl::Status status = ReadTextProtoFile(dir, "scenario", &file);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "cannot read scenario " + dir + ": it is a directory, not a file");
}

}  // namespace
}  // namespace zero3
