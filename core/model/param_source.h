// Copyright 2026 The zero3 Authors.
//
// param_source.h: where a model's initial parameter values come from.
//
// A trainer asks a ParamSource for the fp32 values of a range of elements of
// one parameter, so that each data-parallel rank reads exactly its own
// partitions and nothing else. SeededInit computes them (InitialValue);
// core/model/hf_checkpoint.h reads them from a Hugging Face checkpoint.
//
// Implementations are immutable after construction and thread-safe: every
// rank, and every thread of a rank, may call Fill at once.

#ifndef ZERO3_CORE_MODEL_PARAM_SOURCE_H_
#define ZERO3_CORE_MODEL_PARAM_SOURCE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "core/model/model_spec.pb.h"
#include "core/model/transformer.h"

namespace zero3 {
namespace model {

class ParamSource {
 public:
  virtual ~ParamSource() = default;
  // For messages: "seeded initialization (seed 0)", a checkpoint's path.
  virtual std::string description() const = 0;
  // Writes the exact fp32 values of elements [offset, offset + n) of
  // `param` (row-major, [rows, cols]) to out[0, n). The range lies within
  // the parameter (checked).
  virtual absl::Status Fill(const ParamInfo& param, int64_t offset, int64_t n,
                            float* out) const = 0;
};

// The seeded initialization: element i of param p is InitialValue(spec, p,
// seed, i).
class SeededInit : public ParamSource {
 public:
  SeededInit(const ModelSpec& spec, uint64_t seed) : spec_(spec), seed_(seed) {}
  std::string description() const override;
  absl::Status Fill(const ParamInfo& param, int64_t offset, int64_t n,
                    float* out) const override;

 private:
  ModelSpec spec_;
  uint64_t seed_;
};

}  // namespace model
}  // namespace zero3

#endif  // ZERO3_CORE_MODEL_PARAM_SOURCE_H_
