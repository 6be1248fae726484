// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/model_loader.h"

#include "core/model/hf_checkpoint.h"
#include "core/model/hf_config.h"
#include "core/model/presets.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace cli {
namespace internal {

absl::StatusOr<LoadedModel> LoadModel(const std::string& name_or_path) {
  LoadedModel out;
  if (!model::IsDirectory(name_or_path)) {
    ZR_ASSIGN_OR_RETURN(out.spec, model::LoadModelSpecOrHfConfig(name_or_path));
    return out;
  }
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<model::HfCheckpoint> checkpoint,
                      model::HfCheckpoint::Open(name_or_path));
  out.spec = checkpoint->spec();
  out.weights = std::move(checkpoint);
  return out;
}

}  // namespace internal
}  // namespace cli
}  // namespace zero3
