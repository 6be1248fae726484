// Copyright 2026 The zero3 Authors.
//
// presets.h: model shapes by name, and model specs from files.
//
// Presets carry the published shapes of Qwen2.5 models (their config.json on
// Hugging Face), so a preset's parameter count equals the published one, and
// `tiny`, a two-layer model with small, deliberately uneven widths for tests.

#ifndef ZERO3_CORE_MODEL_PRESETS_H_
#define ZERO3_CORE_MODEL_PRESETS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model/model_spec.pb.h"

namespace zero3 {
namespace model {

std::vector<std::string> PresetNames();

// A preset by name, or a text-format ModelSpec file by path. The result is
// validated (see ValidateModelSpec) and has head_dim filled in.
absl::StatusOr<ModelSpec> LoadModelSpec(absl::string_view name_or_path);

// Checks the shape: positive sizes, heads dividing evenly, even head_dim.
// Errors name the field and the fix.
absl::Status ValidateModelSpec(const ModelSpec& spec);

// Number of trainable parameters (tied embeddings counted once).
int64_t ParameterCount(const ModelSpec& spec);

}  // namespace model
}  // namespace zero3

#endif  // ZERO3_CORE_MODEL_PRESETS_H_
