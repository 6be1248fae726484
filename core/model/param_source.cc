// Copyright 2026 The zero3 Authors.

#include "core/model/param_source.h"

#include "absl/strings/str_cat.h"
#include "core/util/check.h"

namespace zero3 {
namespace model {

std::string SeededInit::description() const {
  return absl::StrCat("seeded initialization (seed ", seed_, ")");
}

absl::Status SeededInit::Fill(const ParamInfo& param, int64_t offset, int64_t n,
                              float* out) const {
  ZR_CHECK(offset >= 0 && n >= 0 && offset + n <= param.numel())
      << param.name << " [" << offset << ", " << offset + n << ")";
  for (int64_t i = 0; i < n; ++i) {
    out[i] = InitialValue(spec_, param, seed_, offset + i);
  }
  return absl::OkStatus();
}

}  // namespace model
}  // namespace zero3
