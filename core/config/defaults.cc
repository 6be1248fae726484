// Copyright 2026 The zero3 Authors.

#include "core/config/defaults.h"

#include "core/config/config.pb.h"
#include "core/config/schema.h"
#include "core/config/validate.h"
#include "core/util/check.h"
#include "google/protobuf/descriptor.h"

namespace zero3 {
namespace config {

using ::google::protobuf::Descriptor;
using ::google::protobuf::FieldDescriptor;
using ::google::protobuf::Message;
using ::google::protobuf::Reflection;

void FillDefaults(Message* msg) {
  const Descriptor* d = msg->GetDescriptor();
  const Reflection* r = msg->GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (f->is_repeated()) {
      if (f->name() == "betas" && r->FieldSize(*msg, f) == 0) {
        for (double b : kDefaultBetas) r->AddDouble(msg, f, b);
      }
      continue;
    }
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      // The scheduler stays absent when not given; its parameters depend on
      // its type (scheduler.h). activation_checkpointing and aio stay as
      // given: their defaults are read where they are used.
      if (f->message_type() == Scheduler::descriptor() ||
          f->message_type() == ActivationCheckpointing::descriptor() ||
          f->message_type() == Aio::descriptor()) {
        continue;
      }
      FillDefaults(r->MutableMessage(msg, f));
      continue;
    }
    if (r->HasField(*msg, f)) continue;
    if (d == Config::descriptor() && IsBatchKey(f->name())) continue;
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        r->SetInt32(msg, f, f->default_value_int32());
        break;
      case FieldDescriptor::CPPTYPE_INT64:
        r->SetInt64(msg, f, f->default_value_int64());
        break;
      case FieldDescriptor::CPPTYPE_DOUBLE:
        r->SetDouble(msg, f, f->default_value_double());
        break;
      case FieldDescriptor::CPPTYPE_BOOL:
        // super_offload has no default: printed only when given.
        if (f->has_default_value()) r->SetBool(msg, f, f->default_value_bool());
        break;
      case FieldDescriptor::CPPTYPE_STRING:
        // nvme_path has no default: leave it unset rather than "".
        if (f->has_default_value()) {
          r->SetString(msg, f, f->default_value_string());
        }
        break;
      default:
        ZR_CHECK(false) << "config.proto field of unhandled type: "
                        << f->full_name();
    }
  }
}

void FillDependentDefaults(Config* config) {
  const ZeroOptimization& zero = config->zero_optimization();
  if (!config->zero3().has_host_step_overlap() &&
      zero.offload_optimizer().super_offload() &&
      HostStepCannotMove(*config) == nullptr) {
    config->mutable_zero3()->set_host_step_overlap("forward");
  }
}

}  // namespace config
}  // namespace zero3
