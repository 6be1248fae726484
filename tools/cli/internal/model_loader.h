// Copyright 2026 The zero3 Authors.
//
// model_loader.h: what --model names, as a spec and initial weights.
//
// A preset name or a text-format ModelSpec file gives the spec and the
// seeded initialization; a directory is a Hugging Face checkpoint
// (core/model/hf_checkpoint.h), opened and checked here, before any rank
// starts or allocates, and read later by each rank for its own partitions.

#ifndef ZERO3_TOOLS_CLI_INTERNAL_MODEL_LOADER_H_
#define ZERO3_TOOLS_CLI_INTERNAL_MODEL_LOADER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/model/model_spec.pb.h"
#include "core/model/param_source.h"

namespace zero3 {
namespace cli {
namespace internal {

struct LoadedModel {
  model::ModelSpec spec;
  // The checkpoint's weights; null for the seeded initialization.
  std::shared_ptr<const model::ParamSource> weights;
};

// `name_or_path`: a preset name, or a path (already resolved against the
// user's directory) of a ModelSpec file or a checkpoint directory.
absl::StatusOr<LoadedModel> LoadModel(const std::string& name_or_path);

}  // namespace internal
}  // namespace cli
}  // namespace zero3

#endif  // ZERO3_TOOLS_CLI_INTERNAL_MODEL_LOADER_H_
