// Copyright 2026 The zero3 Authors.
//
// runs.h: run ZeRO-3 on simulated ranks and the reference trainer on
// the same model and data, and measure how far apart they are.
//
// Used by the equivalence tests and by `zero3 train --check-reference`.

#ifndef ZERO3_REFERENCE_RUNS_H_
#define ZERO3_REFERENCE_RUNS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/engine/engine.h"
#include "core/model/data.h"
#include "core/model/model_spec.pb.h"
#include "core/model/param_source.h"
#include "core/zero/options.h"
#include "reference/reference_trainer.h"
#include "sim/simulator.h"

namespace zero3 {
namespace reference {

struct RunResult {
  std::vector<double> losses;  // per step, mean over ranks
  std::vector<bool> skipped;   // per step: no update (non-finite gradients)
  std::vector<double> lrs;     // per applied step: the update's lr
  // Full fp32 master of every parameter after the last step.
  std::vector<std::vector<float>> params;
  std::vector<std::string> races;        // race reports
  std::vector<engine::StepStats> rank0;  // rank 0's step stats
};

// ZeRO-3 on `world` simulated ranks (data mode; `sim` supplies the profile
// and detector settings; its world_size and mode are overridden), starting
// from `params` (null: the seeded initialization).
absl::StatusOr<RunResult> RunZero(const model::ModelSpec& spec,
                                  const zero::ZeroOptions& options, int world,
                                  int steps, const model::BatchSource& data,
                                  sim::SimOptions sim,
                                  const model::ParamSource* params = nullptr);

// The reference trainer on the global batch of `world` ranks, starting from
// `params` (null: the seeded initialization) or, with `resume`, from that
// state (its steps_done counts towards `steps`). With `params_by_step`,
// also every parameter after every step it takes.
absl::StatusOr<RunResult> RunReference(
    const model::ModelSpec& spec, const zero::ZeroOptions& options, int world,
    int steps, const model::BatchSource& data,
    const sim::HardwareProfile& profile,
    std::vector<std::vector<std::vector<float>>>* params_by_step = nullptr,
    const model::ParamSource* params = nullptr,
    const ReferenceState* resume = nullptr);

// The larger of two differences, NaN if either is NaN: a comparison that
// produced NaN is the worst result, never one that passes.
double WorseOf(double a, double b);

// Relative difference of parameter tensors: max|a - b| / max|b|, the largest
// over tensors, and which tensor; NaN if any element differs by NaN.
double ParamDifference(const std::vector<std::vector<float>>& got,
                       const std::vector<std::vector<float>>& reference,
                       int* worst = nullptr);

struct Difference {
  // Largest |a - b| / |b| of the per-step loss.
  double loss = 0;
  // Largest over parameters of max|a - b| / max|b| (per tensor).
  double param = 0;
  int worst_param = -1;
  int worst_step = -1;
};

Difference Compare(const RunResult& got, const RunResult& reference);

}  // namespace reference
}  // namespace zero3

#endif  // ZERO3_REFERENCE_RUNS_H_
