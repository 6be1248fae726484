// Copyright 2026 The zero3 Authors.

#include "reference/runs.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "reference/reference_trainer.h"

namespace zero3 {
namespace reference {

absl::StatusOr<RunResult> RunZero(const model::ModelSpec& spec,
                                  const zero::ZeroOptions& options, int world,
                                  int steps, const model::BatchSource& data,
                                  sim::SimOptions sim,
                                  const model::ParamSource* params) {
  sim.world_size = world;
  sim.mode = sim::SimMode::kData;
  sim.symmetric = false;
  ZR_ASSIGN_OR_RETURN(auto simulated, sim::SimWorld::Create(sim));
  std::vector<std::vector<double>> losses(world);
  std::vector<std::vector<std::vector<float>>> shards(world);
  std::vector<engine::StepStats> rank0;
  ZR_RETURN_IF_ERROR(simulated->Run([&](runtime::Runtime& rt) -> absl::Status {
    ZR_ASSIGN_OR_RETURN(
        auto e, engine::Engine::Create(spec, options, &data, rt, params));
    for (int s = 0; s < steps; ++s) {
      ZR_ASSIGN_OR_RETURN(engine::StepStats stats, e->Step());
      losses[rt.rank()].push_back(stats.loss);
      if (rt.rank() == 0) rank0.push_back(stats);
    }
    for (int p = 0; p < e->layout().num_params(); ++p) {
      ZR_ASSIGN_OR_RETURN(std::vector<float> shard, e->MasterParam(p));
      shards[rt.rank()].push_back(std::move(shard));
    }
    return absl::OkStatus();
  }));
  RunResult result;
  for (int s = 0; s < steps; ++s) {
    double sum = 0;
    for (int r = 0; r < world; ++r) sum += losses[r][s];
    result.losses.push_back(sum / world);
  }
  const size_t num_params = shards[0].size();
  for (size_t p = 0; p < num_params; ++p) {
    std::vector<float> full;
    for (int r = 0; r < world; ++r) {
      full.insert(full.end(), shards[r][p].begin(), shards[r][p].end());
    }
    result.params.push_back(std::move(full));
  }
  for (const sim::RaceReport& r : simulated->races()) {
    result.races.push_back(r.message);
  }
  for (const engine::StepStats& s : rank0) {
    result.skipped.push_back(s.skipped);
    if (!s.skipped) result.lrs.push_back(s.lr);
  }
  result.rank0 = std::move(rank0);
  return result;
}

absl::StatusOr<RunResult> RunReference(
    const model::ModelSpec& spec, const zero::ZeroOptions& options, int world,
    int steps, const model::BatchSource& data,
    const sim::HardwareProfile& profile,
    std::vector<std::vector<std::vector<float>>>* params_by_step,
    const model::ParamSource* params, const ReferenceState* resume) {
  sim::SimOptions o;
  o.profile = profile;
  o.world_size = 1;
  o.mode = sim::SimMode::kData;
  ZR_ASSIGN_OR_RETURN(auto simulated, sim::SimWorld::Create(o));
  RunResult result;
  ZR_RETURN_IF_ERROR(simulated->Run([&](runtime::Runtime& rt) -> absl::Status {
    ZR_ASSIGN_OR_RETURN(auto t, ReferenceTrainer::Create(spec, options, world,
                                                         &data, rt, params));
    int first = 0;
    if (resume != nullptr) {
      ZR_RETURN_IF_ERROR(t->Resume(*resume));
      first = static_cast<int>(resume->steps_done);
    }
    for (int s = first; s < steps; ++s) {
      ZR_ASSIGN_OR_RETURN(ReferenceStep step, t->Step());
      result.losses.push_back(step.loss);
      result.skipped.push_back(step.skipped);
      if (!step.skipped) result.lrs.push_back(step.lr);
      if (params_by_step != nullptr) {
        params_by_step->emplace_back();
        for (int p = 0; p < t->num_params(); ++p) {
          params_by_step->back().push_back(t->master(p));
        }
      }
    }
    for (int p = 0; p < t->num_params(); ++p)
      result.params.push_back(t->master(p));
    return absl::OkStatus();
  }));
  for (const sim::RaceReport& r : simulated->races()) {
    result.races.push_back(r.message);
  }
  return result;
}

Difference Compare(const RunResult& got, const RunResult& reference) {
  Difference d;
  const size_t steps = std::min(got.losses.size(), reference.losses.size());
  for (size_t s = 0; s < steps; ++s) {
    const double ref = reference.losses[s];
    const double rel =
        std::abs(got.losses[s] - ref) / std::max(std::abs(ref), 1e-30);
    if (!std::isnan(d.loss) && !(rel <= d.loss)) {
      d.loss = rel;
      d.worst_step = static_cast<int>(s);
    }
  }
  d.param = ParamDifference(got.params, reference.params, &d.worst_param);
  return d;
}

double WorseOf(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return std::max(a, b);
}

double ParamDifference(const std::vector<std::vector<float>>& got,
                       const std::vector<std::vector<float>>& reference,
                       int* worst) {
  double worst_rel = 0;
  if (worst != nullptr) *worst = -1;
  if (got.size() != reference.size()) {
    return std::numeric_limits<double>::infinity();
  }
  for (size_t p = 0; p < got.size(); ++p) {
    const std::vector<float>& a = got[p];
    const std::vector<float>& b = reference[p];
    double rel = std::numeric_limits<double>::infinity();
    if (a.size() == b.size()) {
      double diff = 0, scale = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        diff = WorseOf(diff, std::abs(static_cast<double>(a[i]) - b[i]));
        scale = std::max(scale, std::abs(static_cast<double>(b[i])));
      }
      rel = diff / std::max(scale, 1e-30);
    }
    if (!std::isnan(worst_rel) && !(rel <= worst_rel)) {
      worst_rel = rel;
      if (worst != nullptr) *worst = static_cast<int>(p);
    }
  }
  return worst_rel;
}

}  // namespace reference
}  // namespace zero3
