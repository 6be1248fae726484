// Copyright 2026 The zero3 Authors.
//
// text_proto.h: read text-format protobuf messages with errors that say
// where.
//
// Thread-compatible: plain functions.

#ifndef ZERO3_CORE_UTIL_TEXT_PROTO_H_
#define ZERO3_CORE_UTIL_TEXT_PROTO_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace zero3 {

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
