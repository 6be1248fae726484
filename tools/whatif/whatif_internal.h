// Copyright 2026 The zero3 Authors.

// whatif_internal.h: what the parts of tools/whatif's library share: a
// scenario expanded into variants (variants.cc), each resolved into a
// profile, a model and engine options and simulated (simulate.cc), run as
// a scenario (whatif.cc), explained (explain.cc) and formatted (format.cc).
// Not part of whatif.h's interface.

#ifndef ZERO3_TOOLS_WHATIF_WHATIF_INTERNAL_H_
#define ZERO3_TOOLS_WHATIF_WHATIF_INTERNAL_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/model/model_spec.pb.h"
#include "core/zero/options.h"
#include "sim/profile.pb.h"
#include "tools/whatif/whatif.h"

namespace zero3 {
namespace whatif {
namespace internal {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// Device memory (GiB) of the run that measures a variant's need.
constexpr double kUnlimitedGiB = 1 << 20;

// One variant's inputs, before running.
struct Variant {
  std::vector<std::pair<std::string, std::string>> settings;
  std::string hardware, model;
  int64_t gpus = 0, tp = 1, micro_batch = 0, seq = 0, accumulation = 0;
  bool micro_batch_set = false, accumulation_set = false;
  int64_t host_cores_per_gpu = 0;  // 0: the profile's
  std::vector<std::string> config_overrides;
  std::vector<std::pair<std::string, std::string>> profile_overrides;
};

// The scenario's variants: the cross product of its `vary` settings over
// its base, in order.
absl::StatusOr<std::vector<Variant>> Expand(const Scenario& s);

// The index of the variant the scenario's `baseline` names (0 without one).
absl::StatusOr<int> FindBaseline(const Scenario& s,
                                 const std::vector<Variant>& variants);

struct Resolved {
  sim::HardwareProfile profile;
  model::ModelSpec spec;
  zero::ZeroOptions options;
  bool checkpoint_async = true;  // zero3.checkpoint_write
  std::vector<std::string> notices;
};

// A variant's profile, model and engine options, with the loader's notices.
absl::StatusOr<Resolved> Resolve(const Scenario& s, const Variant& v,
                                 const RunOptions& run);

// Simulates one variant (its notices added to `notices` once each).
absl::StatusOr<VariantResult> RunVariant(const Scenario& s, const Variant& v,
                                         const RunOptions& run,
                                         std::vector<std::string>* notices);

// "key=value ..." of a variant's settings, keys whole or after their last
// dot; "(base)" for none.
std::string Label(
    const std::vector<std::pair<std::string, std::string>>& settings,
    bool full_keys);

// Whether the varied keys stay distinct after their last dot.
bool ShortKeysAreUnique(const ScenarioResult& r);

// What "fastest" compares: tokens/s, per GPU when the GPU count varies.
double ComparedRate(const ScenarioResult& r, const VariantResult& v);

}  // namespace internal
}  // namespace whatif
}  // namespace zero3

#endif  // ZERO3_TOOLS_WHATIF_WHATIF_INTERNAL_H_
