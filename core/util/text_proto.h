// Copyright 2026 The zero3 Authors.
//
// text_proto.h: read text-format protobuf messages with errors that say
// where.
//
// ReadTextProto is the one reader: it collects every error of protobuf's
// parser with its one-based line and column, and recognizes unknown field
// names so that callers can suggest the field meant. Callers format the
// errors the way their users expect:
//
//   std::vector<TextProtoError> errors;
//   if (!ReadTextProto(text, &message, &errors)) {
//     for (const TextProtoError& e : errors) print e.InFile("a.textproto");
//   }
//
// Thread-compatible: plain functions.

#ifndef ZERO3_CORE_UTIL_TEXT_PROTO_H_
#define ZERO3_CORE_UTIL_TEXT_PROTO_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace zero3 {

// One error of the text-format parser.
struct TextProtoError {
  int line = 0;    // one-based
  int column = 0;  // one-based
  // The parser's words, e.g. 'Expected ":", found "}".'
  std::string message;
  // For a field name the message type does not have: that type and the
  // name as written. Otherwise null and empty.
  const google::protobuf::Descriptor* type = nullptr;
  std::string unknown_field;

  // "SOURCE:LINE:COLUMN: MESSAGE", as compilers and editors print errors.
  std::string InFile(absl::string_view source) const;
  // "line LINE, column COLUMN: MESSAGE".
  std::string InText() const;
};

// Parses `text` into `message`. Returns false when `text` is not a valid
// message; `errors` then holds every error the parser reported, in order
// (it may report none).
bool ReadTextProto(absl::string_view text, google::protobuf::Message* message,
                   std::vector<TextProtoError>* errors);

// Parses `text` into `message`. InvalidArgument "SOURCE:LINE:COLUMN: what
// is wrong" on the first error.
absl::Status ParseTextProto(absl::string_view text, absl::string_view source,
                            google::protobuf::Message* message);

// Reads and parses the file at `path`; NotFound "cannot read WHAT PATH"
// when it cannot be read.
absl::Status ReadTextProtoFile(const std::string& path, absl::string_view what,
                               google::protobuf::Message* message);

}  // namespace zero3

#endif  // ZERO3_CORE_UTIL_TEXT_PROTO_H_
