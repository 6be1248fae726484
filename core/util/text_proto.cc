// Copyright 2026 The zero3 Authors.

#include "core/util/text_proto.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

namespace zero3 {
namespace {

// The text between `open` and the next '"' in `message`, or "" when there is
// none.
absl::string_view QuotedAfter(absl::string_view message,
                              absl::string_view open) {
  const size_t start = message.find(open);
  if (start == absl::string_view::npos) return "";
  const size_t begin = start + open.size();
  const size_t end = message.find('"', begin);
  if (end == absl::string_view::npos) return "";
  return message.substr(begin, end - begin);
}

// Collects every error; recognizes protobuf's unknown-field message,
//   Message type "zero3.config.ZeroOptimization" has no field named "x".
class Collector : public google::protobuf::io::ErrorCollector {
 public:
  Collector(const google::protobuf::DescriptorPool* pool,
            std::vector<TextProtoError>* errors)
      : pool_(pool), errors_(errors) {}

  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    TextProtoError error;
    error.line = line + 1;
    error.column = column + 1;
    error.message = message;
    const absl::string_view type = QuotedAfter(message, "Message type \"");
    const absl::string_view field =
        QuotedAfter(message, "has no field named \"");
    if (!type.empty() && !field.empty()) {
      error.type = pool_->FindMessageTypeByName(std::string(type));
      if (error.type != nullptr) error.unknown_field = std::string(field);
    }
    errors_->push_back(std::move(error));
  }

 private:
  const google::protobuf::DescriptorPool* pool_;
  std::vector<TextProtoError>* errors_;
};

}  // namespace

std::string TextProtoError::InFile(absl::string_view source) const {
  return absl::StrCat(source, ":", line, ":", column, ": ", message);
}

std::string TextProtoError::InText() const {
  return absl::StrCat("line ", line, ", column ", column, ": ", message);
}

bool ReadTextProto(absl::string_view text, google::protobuf::Message* message,
                   std::vector<TextProtoError>* errors) {
  Collector collector(message->GetDescriptor()->file()->pool(), errors);
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&collector);
  return parser.ParseFromString(std::string(text), message);
}

absl::Status ParseTextProto(absl::string_view text, absl::string_view source,
                            google::protobuf::Message* message) {
  std::vector<TextProtoError> errors;
  if (ReadTextProto(text, message, &errors)) return absl::OkStatus();
  return absl::InvalidArgumentError(errors.empty()
                                        ? absl::StrCat(source, ":")
                                        : errors.front().InFile(source));
}

absl::Status ReadTextProtoFile(const std::string& path, absl::string_view what,
                               google::protobuf::Message* message) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot read ", what, " ", path, ": it is a directory, not a file"));
  }
  std::ifstream in(path);
  if (!in)
    return absl::NotFoundError(absl::StrCat("cannot read ", what, " ", path));
  std::stringstream text;
  text << in.rdbuf();
  return ParseTextProto(text.str(), path, message);
}

}  // namespace zero3
