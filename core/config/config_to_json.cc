// Copyright 2026 The zero3 Authors.

#include "core/config/config_to_json.h"

#include <cmath>

#include "core/config/config.pb.h"
#include "core/config/schema.h"
#include "core/util/check.h"
#include "google/protobuf/descriptor.h"

namespace zero3 {
namespace config {
namespace {

using ::google::protobuf::Descriptor;
using ::google::protobuf::FieldDescriptor;
using ::google::protobuf::Message;
using ::google::protobuf::Reflection;

JsonValue DoubleAsJson(double v) {
  // A hand-built config may hold a non-finite double; print it as a string
  // so that it reads back as an error instead of aborting here.
  if (!std::isfinite(v)) {
    return JsonValue::String(std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"));
  }
  return JsonValue::Double(v);
}

// Field `f` of `msg` (element `index` of a repeated field) as JSON.
JsonValue FieldValueAsJson(const Message& msg, const FieldDescriptor* f,
                           int index = -1) {
  const Reflection* r = msg.GetReflection();
  const bool rep = index >= 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return JsonValue::Int(rep ? r->GetRepeatedInt32(msg, f, index)
                                : r->GetInt32(msg, f));
    case FieldDescriptor::CPPTYPE_INT64:
      return JsonValue::Int(rep ? r->GetRepeatedInt64(msg, f, index)
                                : r->GetInt64(msg, f));
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return DoubleAsJson(rep ? r->GetRepeatedDouble(msg, f, index)
                              : r->GetDouble(msg, f));
    case FieldDescriptor::CPPTYPE_BOOL:
      return JsonValue::Bool(rep ? r->GetRepeatedBool(msg, f, index)
                                 : r->GetBool(msg, f));
    case FieldDescriptor::CPPTYPE_STRING:
      return JsonValue::String(rep ? r->GetRepeatedString(msg, f, index)
                                   : r->GetString(msg, f));
    default:
      ZR_CHECK(false) << "config.proto field of unhandled type: "
                      << f->full_name();
  }
  return JsonValue();
}

}  // namespace

JsonValue MessageToJson(const Message& msg, bool only_set) {
  JsonValue out = JsonValue::Object();
  const Descriptor* d = msg.GetDescriptor();
  const Reflection* r = msg.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (f->is_repeated()) {
      const int n = r->FieldSize(msg, f);
      if (only_set && n == 0) continue;
      JsonValue array = JsonValue::Array();
      if (n == 0 && f->name() == "betas") {
        for (double b : kDefaultBetas) array.Append(JsonValue::Double(b));
      }
      for (int k = 0; k < n; ++k) array.Append(FieldValueAsJson(msg, f, k));
      out.Set(f->name(), std::move(array));
      continue;
    }
    const bool has = r->HasField(msg, f);
    if (only_set && !has) continue;
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      // The scheduler holds only what its type takes, and
      // activation_checkpointing and aio their given keys: printed as set,
      // and only when given.
      const bool as_set =
          f->message_type() == Scheduler::descriptor() ||
          f->message_type() == ActivationCheckpointing::descriptor() ||
          f->message_type() == Aio::descriptor();
      if (as_set && !has) continue;
      out.Set(f->name(),
              MessageToJson(r->GetMessage(msg, f), only_set || as_set));
      continue;
    }
    // String and bool fields without a default (nvme_path, super_offload)
    // are printed only when set.
    if (!has && !f->has_default_value() &&
        (f->cpp_type() == FieldDescriptor::CPPTYPE_STRING ||
         f->cpp_type() == FieldDescriptor::CPPTYPE_BOOL)) {
      continue;
    }
    // Unset batch sizes (an unresolved config) are printed only when set.
    if (!has && d == Config::descriptor() && IsBatchKey(f->name())) continue;
    out.Set(f->name(), FieldValueAsJson(msg, f));
  }
  return out;
}

}  // namespace config
}  // namespace zero3
