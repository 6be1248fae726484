// Copyright 2026 The zero3 Authors.

#include "core/config/field_bounds.h"

#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "core/config/config.pb.h"
#include "core/config/json.h"
#include "core/config/schema.h"
#include "core/util/check.h"
#include "google/protobuf/descriptor.h"

namespace zero3 {
namespace config {
namespace {

using ::google::protobuf::FieldDescriptor;
using ::google::protobuf::Message;
using ::google::protobuf::Reflection;

// "must be >= 0 (WHY), found " without the value.
std::string BoundsText(const FieldBounds& b) {
  std::string text = "must be ";
  if (b.has_ge() && b.has_le()) {
    absl::StrAppend(&text, "in [", b.ge(), ", ", b.le(), "]");
  } else if (b.has_ge()) {
    absl::StrAppend(&text, ">= ", b.ge());
  } else {
    ZR_CHECK(b.has_gt() && !b.has_le()) << "unsupported bounds";
    absl::StrAppend(&text, "> ", b.gt());
  }
  if (b.has_why()) absl::StrAppend(&text, " (", b.why(), ")");
  absl::StrAppend(&text, ", found ");
  return text;
}

bool InBounds(const FieldBounds& b, double v) {
  return (!b.has_ge() || v >= b.ge()) && (!b.has_gt() || v > b.gt()) &&
         (!b.has_le() || v <= b.le());
}

// Checks field `f` of `msg`, at `path`, against its bounds.
void CheckField(const Message& msg, const FieldDescriptor* f,
                const std::string& path, Diagnostics* diag) {
  const FieldBounds& b = f->options().GetExtension(bounds);
  const Reflection* r = msg.GetReflection();
  ZR_CHECK(!f->is_repeated()) << "bounds on a repeated field: " << path;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_INT64: {
      const int64_t v = f->cpp_type() == FieldDescriptor::CPPTYPE_INT32
                            ? r->GetInt32(msg, f)
                            : r->GetInt64(msg, f);
      std::string message = absl::StrCat(BoundsText(b), v);
      if (b.has_unit()) absl::StrAppend(&message, " (", b.unit(), ")");
      diag->Check(InBounds(b, static_cast<double>(v)), path, message);
      return;
    }
    case FieldDescriptor::CPPTYPE_DOUBLE: {
      const double v = r->GetDouble(msg, f);
      if (!std::isfinite(v)) {
        diag->Check(false, path,
                    absl::StrCat("must be a finite number, found ", v));
        return;
      }
      diag->Check(InBounds(b, v), path,
                  absl::StrCat(BoundsText(b), FormatJsonDouble(v)));
      return;
    }
    default:
      ZR_CHECK(false) << "bounds on a non-numeric field: " << path;
  }
}

void Walk(const Message& msg, const std::string& section, Diagnostics* diag,
          const std::function<void(const std::string&)>& after_field) {
  const google::protobuf::Descriptor* d = msg.GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    const std::string path = JoinPath(section, f->name());
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      Walk(msg.GetReflection()->GetMessage(msg, f), path, diag, after_field);
    } else if (f->options().HasExtension(bounds) &&
               msg.GetReflection()->HasField(msg, f)) {
      // Unset fields are those a resolved Config leaves out (the scheduler
      // parameters its type does not take); a hand-built Config's unset
      // fields read as their defaults, which are in bounds.
      CheckField(msg, f, path, diag);
    }
    after_field(path);
  }
}

}  // namespace

void CheckFieldBounds(
    const Message& msg, Diagnostics* diag,
    const std::function<void(const std::string& path)>& after_field) {
  Walk(msg, "", diag, after_field);
}

}  // namespace config
}  // namespace zero3
