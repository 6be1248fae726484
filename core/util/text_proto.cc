// Copyright 2026 The zero3 Authors.

#include "core/util/text_proto.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

namespace zero3 {
namespace {

class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (first.empty()) {
      first = absl::StrCat(line + 1, ":", column + 1, ": ", message);
    }
  }
  std::string first;
};

}  // namespace

absl::Status ParseTextProto(absl::string_view text, absl::string_view source,
                            google::protobuf::Message* message) {
  FirstError errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(std::string(text), message)) {
    return absl::InvalidArgumentError(absl::StrCat(source, ":", errors.first));
  }
  return absl::OkStatus();
}

absl::Status ReadTextProtoFile(const std::string& path, absl::string_view what,
                               google::protobuf::Message* message) {
  std::ifstream in(path);
  if (!in)
    return absl::NotFoundError(absl::StrCat("cannot read ", what, " ", path));
  std::stringstream text;
  text << in.rdbuf();
  return ParseTextProto(text.str(), path, message);
}

}  // namespace zero3
