// Copyright 2026 The zero3 Authors.
//
// proto_path.h: dotted field paths ("comm.nvlink_gbps") through protobuf
// messages, and scalar values set from text.
//
// ResolveFieldPath is the one walk from a message type down a dotted path;
// callers word its failures their own way (a hardware-profile figure, a
// configuration key):
//
//   FieldPath path = ResolveFieldPath(Profile::descriptor(), {"comm", "x"});
//   if (path.stop == FieldPath::Stop::kUnknownField) suggest from
//       FieldNames(path.type);
//
// Stateless and thread-safe.

#ifndef ZERO3_CORE_UTIL_PROTO_PATH_H_
#define ZERO3_CORE_UTIL_PROTO_PATH_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace zero3 {

// Where a dotted path leads from a message type.
struct FieldPath {
  enum class Stop {
    kNone,          // every component names a field
    kUnknownField,  // component fields.size() names no field of `type`
    kNotSection,    // fields.back() is followed by more components but is
                    // not a singular message field
  };
  // The field each resolved component names, in order.
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  Stop stop = Stop::kNone;
  // The message type at the component where the walk stopped (kUnknownField).
  const google::protobuf::Descriptor* type = nullptr;
};

// Maps one path component to a field of `type` (nullptr: none). The default
// looks the name up as written.
using FieldLookup = std::function<const google::protobuf::FieldDescriptor*(
    const google::protobuf::Descriptor* type, absl::string_view name)>;

// Resolves `components` from message type `root`, each but the last through
// a singular message field.
FieldPath ResolveFieldPath(const google::protobuf::Descriptor* root,
                           absl::Span<const std::string> components,
                           const FieldLookup& lookup = nullptr);

// The field names of `type`, in declaration order (for suggestions).
std::vector<std::string> FieldNames(const google::protobuf::Descriptor* type);

// The message that holds the last of `fields` (resolved from `root`'s type),
// creating the sections on the way.
google::protobuf::Message* MutableOwner(
    google::protobuf::Message* root,
    absl::Span<const google::protobuf::FieldDescriptor* const> fields);

// Sets singular scalar field `field` of `msg` from `text`: a number for
// double fields, an integral number (also as 1e9) for integer fields, true
// or false (also 1, yes, ...) for bool fields, any text for string fields.
// False, leaving `msg` unchanged, when `text` is not such a value or the
// field is of another type.
bool SetScalarFromText(google::protobuf::Message* msg,
                       const google::protobuf::FieldDescriptor* field,
                       absl::string_view text);

}  // namespace zero3

#endif  // ZERO3_CORE_UTIL_PROTO_PATH_H_
