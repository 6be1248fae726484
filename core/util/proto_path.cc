// Copyright 2026 The zero3 Authors.

#include "core/util/proto_path.h"

#include <cmath>
#include <cstdint>

#include "absl/strings/numbers.h"

namespace zero3 {

using ::google::protobuf::Descriptor;
using ::google::protobuf::FieldDescriptor;
using ::google::protobuf::Message;
using ::google::protobuf::Reflection;

FieldPath ResolveFieldPath(const Descriptor* root,
                           absl::Span<const std::string> components,
                           const FieldLookup& lookup) {
  FieldPath path;
  const Descriptor* type = root;
  for (size_t i = 0; i < components.size(); ++i) {
    const FieldDescriptor* f = lookup ? lookup(type, components[i])
                                      : type->FindFieldByName(components[i]);
    if (f == nullptr) {
      path.stop = FieldPath::Stop::kUnknownField;
      path.type = type;
      return path;
    }
    path.fields.push_back(f);
    if (i + 1 == components.size()) break;
    if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE || f->is_repeated()) {
      path.stop = FieldPath::Stop::kNotSection;
      return path;
    }
    type = f->message_type();
  }
  return path;
}

std::vector<std::string> FieldNames(const Descriptor* type) {
  std::vector<std::string> names;
  for (int i = 0; i < type->field_count(); ++i) {
    names.push_back(type->field(i)->name());
  }
  return names;
}

Message* MutableOwner(Message* root,
                      absl::Span<const FieldDescriptor* const> fields) {
  Message* msg = root;
  for (size_t i = 0; i + 1 < fields.size(); ++i) {
    msg = msg->GetReflection()->MutableMessage(msg, fields[i]);
  }
  return msg;
}

bool SetScalarFromText(Message* msg, const FieldDescriptor* field,
                       absl::string_view text) {
  const Reflection* r = msg->GetReflection();
  double d = 0;
  bool b = false;
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_DOUBLE:
      if (!absl::SimpleAtod(text, &d)) return false;
      r->SetDouble(msg, field, d);
      return true;
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_INT64:
      if (!absl::SimpleAtod(text, &d) || d != std::floor(d)) return false;
      if (field->cpp_type() == FieldDescriptor::CPPTYPE_INT32) {
        r->SetInt32(msg, field, static_cast<int32_t>(d));
      } else {
        r->SetInt64(msg, field, static_cast<int64_t>(d));
      }
      return true;
    case FieldDescriptor::CPPTYPE_BOOL:
      if (!absl::SimpleAtob(text, &b)) return false;
      r->SetBool(msg, field, b);
      return true;
    case FieldDescriptor::CPPTYPE_STRING:
      r->SetString(msg, field, std::string(text));
      return true;
    default:
      return false;
  }
}

}  // namespace zero3
