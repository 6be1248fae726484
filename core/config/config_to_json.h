// Copyright 2026 The zero3 Authors.
//
// config_to_json.h: a Config (or one of its sections) as DeepSpeed-named
// JSON, fields in schema order.
//
// Thread-compatible: a plain function. Internal to the loader
// (config_loader.h), which also uses it to read the text format.

#ifndef ZERO3_CORE_CONFIG_CONFIG_TO_JSON_H_
#define ZERO3_CORE_CONFIG_CONFIG_TO_JSON_H_

#include "core/config/json.h"
#include "google/protobuf/message.h"

namespace zero3 {
namespace config {

// Every field (`only_set` false: unset ones print their default, except
// unset batch sizes and strings without a default) or only the fields set
// (true). A non-finite double prints as a string ("nan", "inf") so that it
// reads back as an error.
JsonValue MessageToJson(const google::protobuf::Message& msg, bool only_set);

}  // namespace config
}  // namespace zero3

#endif  // ZERO3_CORE_CONFIG_CONFIG_TO_JSON_H_
