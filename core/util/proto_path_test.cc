// Copyright 2026 The zero3 Authors.

#include "core/util/proto_path.h"

#include <string>
#include <vector>

#include "google/protobuf/descriptor.pb.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace {

using ::google::protobuf::FileDescriptorProto;
using ::google::protobuf::FileOptions;

TEST(ResolveFieldPathTest, FollowsSections) {
  const FieldPath path = ResolveFieldPath(FileDescriptorProto::descriptor(),
                                          {"options", "java_package"});
  EXPECT_EQ(path.stop, FieldPath::Stop::kNone);
  ASSERT_EQ(path.fields.size(), 2);
  EXPECT_EQ(path.fields[1]->name(), "java_package");
}

TEST(ResolveFieldPathTest, StopsAtAnUnknownName) {
  const FieldPath path = ResolveFieldPath(FileDescriptorProto::descriptor(),
                                          {"options", "jav_package", "x"});
  EXPECT_EQ(path.stop, FieldPath::Stop::kUnknownField);
  EXPECT_EQ(path.fields.size(), 1);
  EXPECT_EQ(path.type, FileOptions::descriptor());
}

TEST(ResolveFieldPathTest, StopsBelowAValueOrARepeatedSection) {
  FieldPath path =
      ResolveFieldPath(FileDescriptorProto::descriptor(), {"name", "x"});
  EXPECT_EQ(path.stop, FieldPath::Stop::kNotSection);
  EXPECT_EQ(path.fields.size(), 1);
  path = ResolveFieldPath(FileDescriptorProto::descriptor(),
                          {"message_type", "name"});
  EXPECT_EQ(path.stop, FieldPath::Stop::kNotSection);
}

TEST(ResolveFieldPathTest, UsesTheLookup) {
  const FieldLookup lookup = [](const google::protobuf::Descriptor* type,
                                absl::string_view name) {
    return type->FindFieldByName(name == "pkg" ? "package" : std::string(name));
  };
  const FieldPath path =
      ResolveFieldPath(FileDescriptorProto::descriptor(), {"pkg"}, lookup);
  EXPECT_EQ(path.stop, FieldPath::Stop::kNone);
  EXPECT_EQ(path.fields[0]->name(), "package");
}

TEST(FieldNamesTest, InDeclarationOrder) {
  const std::vector<std::string> names =
      FieldNames(FileDescriptorProto::descriptor());
  ASSERT_GE(names.size(), 2);
  EXPECT_EQ(names[0], "name");
  EXPECT_EQ(names[1], "package");
}

TEST(SetScalarFromTextTest, SetsEachScalarType) {
  FileDescriptorProto file;
  const FieldPath path = ResolveFieldPath(FileDescriptorProto::descriptor(),
                                          {"options", "cc_enable_arenas"});
  google::protobuf::Message* owner = MutableOwner(&file, path.fields);
  EXPECT_TRUE(SetScalarFromText(owner, path.fields.back(), "false"));
  EXPECT_TRUE(file.options().has_cc_enable_arenas());
  EXPECT_FALSE(SetScalarFromText(owner, path.fields.back(), "maybe"));

  google::protobuf::FieldDescriptorProto field;
  const auto* number = field.GetDescriptor()->FindFieldByName("number");
  EXPECT_TRUE(SetScalarFromText(&field, number, "1e3"));
  EXPECT_EQ(field.number(), 1000);
  EXPECT_FALSE(SetScalarFromText(&field, number, "1.5"));
  EXPECT_EQ(field.number(), 1000);

  google::protobuf::UninterpretedOption option;
  const auto* value = option.GetDescriptor()->FindFieldByName("double_value");
  EXPECT_TRUE(SetScalarFromText(&option, value, "2.5"));
  EXPECT_EQ(option.double_value(), 2.5);
  const auto* name = field.GetDescriptor()->FindFieldByName("name");
  EXPECT_TRUE(SetScalarFromText(&field, name, "x"));
  EXPECT_EQ(field.name(), "x");
  const auto* type = field.GetDescriptor()->FindFieldByName("type");
  EXPECT_FALSE(SetScalarFromText(&field, type, "TYPE_INT32"));
}

}  // namespace
}  // namespace zero3
