// Copyright 2026 The zero3 Authors.

#include "tools/calibrate/in_step_fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/util/status_macros.h"
#include "tools/calibrate/op_class.h"
#include "tools/whatif/whatif.h"

namespace zero3 {
namespace calibrate {
namespace {

// The fitted classes, in the order they are judged.
constexpr std::array<OpClass, 8> kFitted = {
    OpClass::kGemm,        OpClass::kAttention,  OpClass::kElementwise,
    OpClass::kOptimizer,   OpClass::kHostAdam,   OpClass::kStridedCopy,
    OpClass::kPageableH2D, OpClass::kPageableD2H};
// The figures: one per fitted class, the one-GPU scale, then the factors of
// the elementwise kernels by kind (one figure, kept or dropped together).
constexpr int kFigures = kFitted.size() + 2;
constexpr int kElementwise = 2, kHost = 4, kCopy = 5, kPageableH2D = 6,
              kPageableD2H = 7, kScale = 8, kKinds = 9;
using Figures = std::array<double, kFigures>;
using Use = std::array<bool, kFigures>;
// The field each figure sets.
constexpr const char* kFields[kFigures] = {
    "gpu.gemm_in_step_factor",        "gpu.attention_in_step_factor",
    "gpu.elementwise_in_step_factor", "gpu.optimizer_in_step_factor",
    "host.memory_bandwidth_*",        "gpu.copy2d_gbps",
    "host_link.pageable_h2d_gbps",    "host_link.pageable_d2h_gbps",
    "gpu.single_gpu_in_step_scale",   "gpu.kernel_in_step_factor"};
constexpr int kClasses = static_cast<int>(OpClass::kOther) + 1;
using ClassMs = std::array<double, kClasses>;
constexpr const char* kPhases[] = {"FWD", "BWD", "STEP"};
// A figure is kept when leaving it out raises the held-out mean absolute
// error by more than this (0.1 percentage points: less is within what the
// fit's own rounding moves, op timing's launch gaps included).
constexpr double kMinGain = 1e-3;

int Index(OpClass c) { return static_cast<int>(c); }

// Whether a class's figure is a rate (time falls as it grows) rather than
// a factor on time.
bool IsRate(OpClass c) {
  return c == OpClass::kHostAdam || c == OpClass::kStridedCopy ||
         c == OpClass::kPageableH2D || c == OpClass::kPageableD2H;
}

// Calls f(op, its class, its device (or host task) ms per step) for each
// operation of `m`, a step of `c`.
template <typename F>
void ForEachOp(const MeasuredStep& m, const StepCase& c, F&& f) {
  const bool pageable =
      c.options.offload_optimizer && !c.options.optimizer_pin_memory;
  for (const runtime::OpTiming& op : m.ops) {
    f(op, ClassifyOp(op.stream, op.label, pageable),
      (op.end_ns - op.start_ns) / 1e6 / std::max(1, m.op_steps));
  }
}

// Time per step of each class in `m`, a step of `c`.
ClassMs TimesByClass(const MeasuredStep& m, const StepCase& c) {
  ClassMs ms{};
  ForEachOp(m, c, [&](const runtime::OpTiming&, OpClass k, double op_ms) {
    ms[Index(k)] += op_ms;
  });
  return ms;
}

// The next value of x, a figure that time grows with (a factor, or a
// rate's inverse), that makes `pred` `meas`: the ratio, or where an earlier
// round predicted at another x, the secant (time is about a + b x: kernels
// at the shortest kernel's time, fixed costs of copies and host tasks).
double NextX(double x, double meas, double pred, bool have_last, double last_x,
             double last_pred) {
  double next = x * meas / pred;
  if (have_last && x != last_x && pred != last_pred) {
    const double slope = (pred - last_pred) / (x - last_x);
    if (slope > 0) next = x + (meas - pred) / slope;
  }
  return next > 0 ? next : x * meas / pred;
}

// Scales every host memory bandwidth figure of `h` by `f`.
void ScaleHostBandwidth(double f, sim::HostProfile* h) {
  h->set_memory_bandwidth_gbps_per_rank(h->memory_bandwidth_gbps_per_rank() *
                                        f);
  h->set_memory_bandwidth_gbps_per_thread(
      h->memory_bandwidth_gbps_per_thread() * f);
  if (h->has_memory_bandwidth_gbps_per_node()) {
    h->set_memory_bandwidth_gbps_per_node(h->memory_bandwidth_gbps_per_node() *
                                          f);
  }
  for (sim::CurvePoint& p : *h->mutable_memory_bandwidth_by_threads()) {
    p.set_value(p.value() * f);
  }
}

// Elementwise kernels' in-step factors by kind (KernelCall::OpName).
using KindFactors = std::map<std::string, double>;

// `isolated` with the figures in `use`: kernel classes' factors multiply
// device time, the host's multiplies its bandwidth, the strided copies' is
// their rate, the one-GPU scale multiplies the kernel factors on one GPU,
// and `kinds` replace the elementwise factor for their kinds, with
// `kernel_us` added to each elementwise kernel.
sim::HardwareProfile WithFigures(const sim::HardwareProfile& isolated,
                                 const Figures& f, const Use& use,
                                 const KindFactors& kinds, double kernel_us) {
  sim::HardwareProfile p = isolated;
  sim::GpuProfile* g = p.mutable_gpu();
  if (use[0]) g->set_gemm_in_step_factor(f[0]);
  if (use[1]) g->set_attention_in_step_factor(f[1]);
  if (use[2]) g->set_elementwise_in_step_factor(f[2]);
  if (use[3]) g->set_optimizer_in_step_factor(f[3]);
  if (use[kHost]) ScaleHostBandwidth(f[kHost], p.mutable_host());
  if (use[kCopy]) g->set_copy2d_gbps(f[kCopy]);
  sim::HostLinkProfile* link = p.mutable_host_link();
  if (use[kPageableH2D]) link->set_pageable_h2d_gbps(f[kPageableH2D]);
  if (use[kPageableD2H]) link->set_pageable_d2h_gbps(f[kPageableD2H]);
  if (use[kScale]) g->set_single_gpu_in_step_scale(f[kScale]);
  if (use[kKinds]) {
    if (kernel_us > 0) g->set_elementwise_in_step_us(kernel_us);
    for (const auto& [kind, factor] : kinds) {
      sim::KernelFactor* k = g->add_kernel_in_step_factor();
      k->set_kind(kind);
      k->set_factor(factor);
    }
  }
  return p;
}

// The elementwise kernels of one kind in a step: time and count.
struct KindTime {
  double ms = 0;
  double kernels = 0;
};

// Elementwise time and kernels per step of each kernel kind in `m`, a step
// of `c`: operations are matched to kinds by their label's key in
// `kinds_of` (measured ops carry no kind on every backend; the simulated
// step's do).
std::map<std::string, KindTime> ElementwiseByKind(
    const MeasuredStep& m, const StepCase& c,
    const std::map<std::string, std::string>& kinds_of) {
  std::map<std::string, KindTime> by_kind;
  const double per_step = 1.0 / std::max(1, m.op_steps);
  ForEachOp(m, c, [&](const runtime::OpTiming& op, OpClass k, double op_ms) {
    if (k != OpClass::kElementwise) return;
    const auto it = kinds_of.find(OpLabelKey(op.label));
    if (it == kinds_of.end() || it->second.empty()) return;
    KindTime& t = by_kind[it->second];
    t.ms += op_ms;
    t.kernels += per_step;
  });
  return by_kind;
}

// One kind's kernels in one fit case: measured ms, ms at factor 1 (from
// the isolated figures) and kernels per step.
struct KindSample {
  double measured = 0, isolated = 0, kernels = 0;
};

// The time per kernel c (ms) and each kind's factor f that best explain
// measured = f * isolated + c * kernels over every kind's samples, relative
// errors weighted alike (least squares; the factors are linear in c, so c
// has a closed form). c is 0 where no kind's kernels differ in size between
// samples (then c and the factors cannot be told apart), and at most what
// the shortest measured kernel took.
double FitTimePerKernel(
    const std::map<std::string, std::vector<KindSample>>& samples,
    std::map<std::string, double>* factors) {
  // Per kind: f(c) = A - c B.
  std::map<std::string, std::pair<double, double>> ab;
  double num = 0, den = 0, scale = 0, c_max = 1e30;
  for (const auto& [kind, list] : samples) {
    double smi = 0, sni = 0, sii = 0;
    for (const KindSample& x : list) {
      const double w = 1 / (x.measured * x.measured);
      smi += w * x.measured * x.isolated;
      sni += w * x.kernels * x.isolated;
      sii += w * x.isolated * x.isolated;
      if (x.kernels > 0) c_max = std::min(c_max, x.measured / x.kernels);
    }
    if (sii <= 0) continue;
    ab[kind] = {smi / sii, sni / sii};
    for (const KindSample& x : list) {
      const double w = 1 / (x.measured * x.measured);
      const double a = x.measured - ab[kind].first * x.isolated;
      const double b = x.kernels - ab[kind].second * x.isolated;
      num += w * a * b;
      den += w * b * b;
      scale += w * x.kernels * x.kernels;
    }
  }
  double c = den > 1e-4 * scale && den > 0 ? num / den : 0;
  c = std::clamp(c, 0.0, c_max < 1e30 ? c_max : 0.0);
  for (const auto& [kind, f] : ab) {
    (*factors)[kind] = std::max(1e-3, f.first - c * f.second);
  }
  return c;
}

// Each label key's kernel kind in a simulated step ("" where one key has
// several kinds).
void AddKinds(const MeasuredStep& simulated,
              std::map<std::string, std::string>* kinds_of) {
  for (const runtime::OpTiming& op : simulated.ops) {
    if (op.kind.empty()) continue;
    const auto [it, fresh] = kinds_of->emplace(OpLabelKey(op.label), op.kind);
    if (!fresh && it->second != op.kind) it->second.clear();
  }
}

// Simulates `steps` steps of `c` on `profile`: the last step's phases and
// operations.
absl::StatusOr<MeasuredStep> Simulate(const sim::HardwareProfile& profile,
                                      const StepCase& c, int steps) {
  whatif::StepInput in;
  in.profile = profile;
  in.spec = c.spec;
  in.options = c.options;
  in.gpus = c.gpus;
  in.steps = steps;
  in.op_timings = true;
  in.op_timings_apart = true;  // as calibrate_steps.cc measures
  ZR_ASSIGN_OR_RETURN(whatif::VariantResult r, whatif::SimulateStep(in));
  MeasuredStep m;
  m.fwd_ms = r.metrics.fwd_ms;
  m.bwd_ms = r.metrics.bwd_ms;
  m.step_ms = r.metrics.step_ms;
  m.ops = std::move(r.ops);
  m.op_steps = 1;
  return m;
}

std::array<double, 3> Phases(const MeasuredStep& m) {
  return {m.fwd_ms, m.bwd_ms, m.step_ms};
}

std::string BatchName(std::pair<int64_t, int64_t> b) {
  return absl::StrCat(b.first, "x", b.second);
}

// One fit, with the measurements it came from.
class Fit {
 public:
  Fit(const sim::HardwareProfile& isolated, const std::vector<StepCase>& cases,
      const FitOptions& o)
      : isolated_(isolated), cases_(cases), o_(o) {
    for (const StepCase& c : cases) gpus_ = std::max(gpus_, c.gpus);
  }

  absl::Status Measure(const StepRunner& run);
  absl::Status FitFigures();
  absl::Status FitKinds();
  absl::Status FitOneGpuScale();
  absl::Status Judge();
  FitResult Finish();

 private:
  void Progress(const std::string& line) {
    if (o_.progress) o_.progress(line);
  }
  // The isolated figures with this fit's figures in `use` (WithFigures).
  sim::HardwareProfile Profile(const Use& use) const {
    return WithFigures(isolated_, figure_, use, kinds_, kernel_us_);
  }
  // A one-GPU case of a fit on several GPUs: it fits the one-GPU scale.
  bool Solo(const StepCase& c) const { return gpus_ > 1 && c.gpus == 1; }
  // How figure `k` was obtained, for the profile's header.
  std::string HowObtained(int k, const std::string& from) const;
  // Mean absolute relative error of the held-out phases under `profile`,
  // and each case's predicted phases.
  absl::StatusOr<double> HeldOutError(const sim::HardwareProfile& profile,
                                      std::vector<MeasuredStep>* predictions);
  // The fit cases of several GPUs, or with `solo` those of one.
  std::string FitCaseNames(bool solo) const;
  std::string HeldOutNames() const;
  std::string PhaseTable(const std::vector<MeasuredStep>& before,
                         const std::vector<MeasuredStep>& after) const;

  const sim::HardwareProfile& isolated_;
  const std::vector<StepCase>& cases_;
  const FitOptions& o_;
  std::vector<MeasuredStep> measured_;
  int gpus_ = 1;                                  // of the fit: its most GPUs
  Figures figure_{1, 1, 1, 1, 1, 1, 1, 1, 1, 1};  // kKinds': unused (kinds_)
  // The elementwise kernels' factors by kind, and their time over the fit
  // cases, measured and from the isolated figures.
  KindFactors kinds_;
  double kernel_us_ = 0;  // gpu.elementwise_in_step_us, with the kinds
  std::map<std::string, double> kind_measured_ms_, kind_isolated_ms_;
  Use fitted_{};
  ClassMs measured_ms_{}, isolated_ms_{};  // over the fit cases
  // GEMM, attention and elementwise time of the one-GPU fit cases, and as
  // the kernel factors of several GPUs predict it.
  double solo_measured_ms_ = 0, solo_predicted_ms_ = 0;
  Use kept_{};
  std::array<std::string, kFigures> verdict_;
  std::string report_;
};

absl::Status Fit::Measure(const StepRunner& run) {
  for (size_t i = 0; i < cases_.size(); ++i) {
    Progress(absl::StrFormat(
        "training steps: %s on %d GPU(s), %d steps (%d/%d)", cases_[i].name,
        cases_[i].gpus, o_.steps, i + 1, cases_.size()));
    ZR_ASSIGN_OR_RETURN(MeasuredStep m, run(cases_[i], o_.steps));
    measured_.push_back(std::move(m));
  }
  return absl::OkStatus();
}

// Three rounds on the fit cases of the most GPUs: the ratio against the
// isolated prediction, then twice refined (NextX). Strided copies, which
// the isolated figures run on the SMs, start in the second round at the
// rate of a memory-bound kernel on a copy engine.
absl::Status Fit::FitFigures() {
  Progress("fitting the in-step figures on the simulator");
  figure_[kCopy] =
      isolated_.gpu().hbm_bandwidth_gbps() * isolated_.gpu().hbm_efficiency();
  figure_[kPageableH2D] = isolated_.host_link().pageable_h2d_gbps();
  figure_[kPageableD2H] = isolated_.host_link().pageable_d2h_gbps();
  Figures last_x{}, last_pred{};
  for (int round = 0; round < 3; ++round) {
    Use use{};
    use.fill(true);
    use[kScale] = false;
    use[kKinds] = false;
    use[kCopy] = round > 0;
    const sim::HardwareProfile p = Profile(use);
    ClassMs meas{}, pred{};
    for (size_t i = 0; i < cases_.size(); ++i) {
      if (cases_[i].held_out || Solo(cases_[i])) continue;
      ZR_ASSIGN_OR_RETURN(const MeasuredStep pr,
                          Simulate(p, cases_[i], o_.steps));
      const ClassMs m = TimesByClass(measured_[i], cases_[i]);
      const ClassMs q = TimesByClass(pr, cases_[i]);
      for (int c = 0; c < kClasses; ++c) {
        meas[c] += m[c];
        pred[c] += q[c];
      }
    }
    if (round == 0) {
      measured_ms_ = meas;
      isolated_ms_ = pred;
    }
    for (size_t k = 0; k < kFitted.size(); ++k) {
      const int c = Index(kFitted[k]);
      if (!use[k] || meas[c] <= 0 || pred[c] <= 0) continue;
      const bool rate = IsRate(kFitted[k]);
      const double x = rate ? 1 / figure_[k] : figure_[k];
      const double next =
          NextX(x, meas[c], pred[c], fitted_[k], last_x[k], last_pred[k]);
      last_x[k] = x;
      last_pred[k] = pred[c];
      fitted_[k] = true;
      figure_[k] = rate ? 1 / next : next;
    }
  }
  for (size_t k = 0; k < kFitted.size(); ++k) {
    const int c = Index(kFitted[k]);
    if (!fitted_[k]) {
      absl::StrAppendFormat(&report_,
                            "in step: %-11s no operations in the "
                            "fit cases; not fitted\n",
                            OpClassName(kFitted[k]));
      continue;
    }
    absl::StrAppendFormat(
        &report_,
        "in step: %-11s %9.2f ms measured, %9.2f ms from the isolated "
        "figures: %s %.3f\n",
        OpClassName(kFitted[k]), measured_ms_[c], isolated_ms_[c],
        kFitted[k] == OpClass::kHostAdam ? "rate x"
        : IsRate(kFitted[k])             ? "GB/s"
                                         : "factor",
        figure_[k]);
  }
  return absl::OkStatus();
}

// With the class figures fitted: a factor for each kind of elementwise
// kernel in the fit cases (SwiGLU, RMSNorm backward and the working copy's
// cast differ by more than 2x in a step against their isolated time) and,
// where the cases hold a kind's kernels at two sizes, a time per kernel
// beside them (FitTimePerKernel); then three rounds per kind (NextX) with
// that time held.
absl::Status Fit::FitKinds() {
  if (!fitted_[kElementwise]) return absl::OkStatus();
  Use use = fitted_;
  use[kKinds] = true;
  std::map<std::string, double> last_x, last_pred;
  for (int round = 0; round < 4; ++round) {
    const sim::HardwareProfile p = Profile(use);
    std::map<std::string, double> meas, pred;
    std::map<std::string, std::vector<KindSample>> samples;
    for (size_t i = 0; i < cases_.size(); ++i) {
      if (cases_[i].held_out || Solo(cases_[i])) continue;
      ZR_ASSIGN_OR_RETURN(const MeasuredStep pr,
                          Simulate(p, cases_[i], o_.steps));
      std::map<std::string, std::string> kinds_of;
      AddKinds(pr, &kinds_of);
      const std::map<std::string, KindTime> m =
          ElementwiseByKind(measured_[i], cases_[i], kinds_of);
      const std::map<std::string, KindTime> q =
          ElementwiseByKind(pr, cases_[i], kinds_of);
      for (const auto& [k, t] : m) {
        meas[k] += t.ms;
        const auto it = q.find(k);
        if (it == q.end()) continue;
        pred[k] += it->second.ms;
        if (round == 0 && t.ms > 0 && it->second.ms > 0) {
          // Round 0 runs every kind at the elementwise factor.
          samples[k].push_back(
              {t.ms, it->second.ms / figure_[kElementwise], t.kernels});
        }
      }
    }
    if (round == 0) {
      for (const auto& [kind, m] : meas) {
        const auto q = pred.find(kind);
        if (m <= 0 || q == pred.end() || q->second <= 0) continue;
        kind_measured_ms_[kind] = m;
        kind_isolated_ms_[kind] = q->second / figure_[kElementwise];
      }
      kernel_us_ = 1e3 * FitTimePerKernel(samples, &kinds_);
      continue;
    }
    for (const auto& [kind, m] : meas) {
      const auto q = pred.find(kind);
      if (m <= 0 || q == pred.end() || q->second <= 0 ||
          kinds_.count(kind) == 0) {
        continue;
      }
      const double x = kinds_[kind];
      const bool have = round > 1;
      kinds_[kind] =
          NextX(x, m, q->second, have, last_x[kind], last_pred[kind]);
      last_x[kind] = x;
      last_pred[kind] = q->second;
    }
  }
  if (kinds_.empty()) return absl::OkStatus();
  fitted_[kKinds] = true;
  for (const auto& [kind, factor] : kinds_) {
    absl::StrAppendFormat(&report_,
                          "in step: %-20s %9.2f ms measured, %9.2f ms from "
                          "the isolated figures: factor %.3f\n",
                          kind, kind_measured_ms_[kind],
                          kind_isolated_ms_[kind], factor);
  }
  absl::StrAppendFormat(&report_,
                        "in step: elementwise kernels %.2f us each beyond "
                        "their kinds' factors%s\n",
                        kernel_us_,
                        kernel_us_ > 0 ? ""
                                       : " (the fit cases hold each kind at "
                                         "one size: not fitted)");
  return absl::OkStatus();
}

// With the fit cases of several GPUs done: the scale that makes the one-GPU
// fit cases' GEMM, attention and elementwise time what was measured, in
// three rounds (NextX).
absl::Status Fit::FitOneGpuScale() {
  if (std::none_of(cases_.begin(), cases_.end(),
                   [&](const StepCase& c) { return Solo(c) && !c.held_out; })) {
    return absl::OkStatus();
  }
  Progress("fitting the one-GPU scale on the simulator");
  Use use = fitted_;
  use[kScale] = true;
  double last_x = 0, last_pred = 0;
  for (int round = 0; round < 3; ++round) {
    const sim::HardwareProfile p = Profile(use);
    double meas = 0, pred = 0;
    for (size_t i = 0; i < cases_.size(); ++i) {
      if (cases_[i].held_out || !Solo(cases_[i])) continue;
      ZR_ASSIGN_OR_RETURN(const MeasuredStep pr,
                          Simulate(p, cases_[i], o_.steps));
      const ClassMs m = TimesByClass(measured_[i], cases_[i]);
      const ClassMs q = TimesByClass(pr, cases_[i]);
      for (OpClass c :
           {OpClass::kGemm, OpClass::kAttention, OpClass::kElementwise}) {
        meas += m[Index(c)];
        pred += q[Index(c)];
      }
    }
    if (meas <= 0 || pred <= 0) return absl::OkStatus();
    if (round == 0) {
      solo_measured_ms_ = meas;
      solo_predicted_ms_ = pred;
    }
    const double x = figure_[kScale];
    figure_[kScale] = NextX(x, meas, pred, round > 0, last_x, last_pred);
    last_x = x;
    last_pred = pred;
  }
  fitted_[kScale] = true;
  absl::StrAppendFormat(
      &report_,
      "in step: one GPU   %9.2f ms measured, %9.2f ms from the factors of "
      "%d GPUs: scale %.3f\n",
      solo_measured_ms_, solo_predicted_ms_, gpus_, figure_[kScale]);
  return absl::OkStatus();
}

absl::StatusOr<double> Fit::HeldOutError(
    const sim::HardwareProfile& profile,
    std::vector<MeasuredStep>* predictions) {
  double sum = 0;
  int n = 0;
  predictions->clear();
  for (size_t i = 0; i < cases_.size(); ++i) {
    if (!cases_[i].held_out) continue;
    ZR_ASSIGN_OR_RETURN(MeasuredStep p, Simulate(profile, cases_[i], o_.steps));
    const std::array<double, 3> meas = Phases(measured_[i]);
    const std::array<double, 3> pred = Phases(p);
    for (int ph = 0; ph < 3; ++ph) {
      if (meas[ph] <= 0) continue;
      sum += std::abs(pred[ph] - meas[ph]) / meas[ph];
      ++n;
    }
    predictions->push_back(std::move(p));
  }
  return n > 0 ? sum / n : 0.0;
}

// Starts from every fitted figure and drops, one at a time, each whose
// removal does not raise the held-out error (the figures act together: a
// slower GEMM alone can move a phase away from the measurement that the
// GEMM and the elementwise factor together reproduce).
absl::Status Fit::Judge() {
  const bool any_held_out =
      std::any_of(cases_.begin(), cases_.end(),
                  [](const StepCase& c) { return c.held_out; });
  kept_ = fitted_;
  if (!any_held_out) {
    for (int k = 0; k < kFigures; ++k) {
      verdict_[k] = "no held-out case to judge it: kept";
    }
    return absl::OkStatus();
  }
  Progress(absl::StrCat("judging on the held-out cases: ", HeldOutNames()));
  std::vector<MeasuredStep> before, after, ignored;
  ZR_ASSIGN_OR_RETURN(const double base, HeldOutError(isolated_, &before));
  ZR_ASSIGN_OR_RETURN(double current, HeldOutError(Profile(kept_), &ignored));
  const double all = current;
  // The factors by kind first: where they add nothing over the class
  // factors, the simpler profile stays.
  std::array<int, kFigures> order;
  order[0] = kKinds;
  for (int k = 0; k < kKinds; ++k) order[k + 1] = k;
  for (bool dropped = true; dropped;) {
    dropped = false;
    for (int k : order) {
      if (!kept_[k]) continue;
      Use without = kept_;
      without[k] = false;
      ZR_ASSIGN_OR_RETURN(const double e,
                          HeldOutError(Profile(without), &ignored));
      verdict_[k] = absl::StrFormat(
          "held-out error %.2f%% with it, %.2f%% without: %s", 100 * current,
          100 * e, e <= current + kMinGain ? "dropped" : "kept");
      if (e <= current + kMinGain) {
        kept_[k] = false;
        current = e;
        dropped = true;
      }
    }
  }
  ZR_ASSIGN_OR_RETURN(const double final_error,
                      HeldOutError(Profile(kept_), &after));
  absl::StrAppend(&report_, PhaseTable(before, after));
  absl::StrAppendFormat(&report_,
                        "held-out mean |error|: %.2f%% with the isolated "
                        "figures, %.2f%% with every fitted one, %.2f%% with "
                        "the kept ones\n",
                        100 * base, 100 * all, 100 * final_error);
  return absl::OkStatus();
}

std::string Fit::PhaseTable(const std::vector<MeasuredStep>& before,
                            const std::vector<MeasuredStep>& after) const {
  std::string t = absl::StrFormat(
      "held-out %-36s %-5s %11s %11s %8s %11s %8s\n", "case", "phase",
      "measured ms", "isolated ms", "error", "fitted ms", "error");
  size_t j = 0;
  for (size_t i = 0; i < cases_.size(); ++i) {
    if (!cases_[i].held_out) continue;
    const std::array<double, 3> meas = Phases(measured_[i]);
    const std::array<double, 3> was = Phases(before[j]);
    const std::array<double, 3> now = Phases(after[j]);
    for (int ph = 0; ph < 3; ++ph) {
      auto err = [&](double p) {
        return meas[ph] > 0 ? absl::StrFormat("%+7.1f%%",
                                              100 * (p - meas[ph]) / meas[ph])
                            : std::string("       -");
      };
      absl::StrAppendFormat(&t,
                            "held-out %-36s %-5s %11.2f %11.2f %s %11.2f %s\n",
                            cases_[i].name, kPhases[ph], meas[ph], was[ph],
                            err(was[ph]), now[ph], err(now[ph]));
    }
    ++j;
  }
  return t;
}

std::string Fit::FitCaseNames(bool solo) const {
  std::vector<std::string> names;
  for (const StepCase& c : cases_) {
    if (!c.held_out && Solo(c) == solo) names.push_back(c.name);
  }
  return absl::StrJoin(names, ", ");
}

std::string Fit::HeldOutNames() const {
  std::vector<std::string> names;
  for (const StepCase& c : cases_) {
    if (c.held_out) names.push_back(c.name);
  }
  return absl::StrJoin(names, ", ");
}

std::string Fit::HowObtained(int k, const std::string& from) const {
  if (k == kKinds) {
    std::vector<std::string> each;
    for (const auto& [kind, factor] : kinds_) {
      each.push_back(absl::StrFormat(
          "%s %.3f (%.2f ms measured against %.2f isolated)", kind, factor,
          kind_measured_ms_.at(kind), kind_isolated_ms_.at(kind)));
    }
    return absl::StrFormat(
        "elementwise kernels by kind in %s: %s; each kernel %.2f us beyond "
        "its factor (gpu.elementwise_in_step_us)",
        from, absl::StrJoin(each, ", "), kernel_us_);
  }
  if (k == kScale) {
    return absl::StrFormat(
        "GEMM, attention and elementwise time in %s, %.2f ms measured against "
        "%.2f ms from the factors of %d GPUs",
        from, solo_measured_ms_, solo_predicted_ms_, gpus_);
  }
  const int c = Index(kFitted[k]);
  return absl::StrFormat(
      "%s time in %s, %.2f ms measured against %.2f ms from the isolated "
      "figures%s",
      OpClassName(kFitted[k]), from, measured_ms_[c], isolated_ms_[c],
      k == kHost   ? " (the host AdamW's in-step rate over its isolated one)"
      : k == kCopy ? " (an SM copy there; here a copy engine's rate)"
                   : "");
}

FitResult Fit::Finish() {
  FitResult r;
  r.profile = Profile(kept_);
  std::vector<std::string> kept_names;
  for (int k = 0; k < kFigures; ++k) {
    if (!fitted_[k]) continue;
    if (k == kKinds) {
      absl::StrAppendFormat(&report_, "in step: %s (%d kinds): %s\n",
                            kFields[k], kinds_.size(), verdict_[k]);
    } else {
      absl::StrAppendFormat(&report_, "in step: %s %.3f: %s\n", kFields[k],
                            figure_[k], verdict_[k]);
    }
    if (!kept_[k]) continue;
    kept_names.push_back(kFields[k]);
    const std::string from = absl::StrFormat(
        "an op-timed step after %d of each of %s, on %d GPU(s)", o_.steps,
        FitCaseNames(/*solo=*/k == kScale), k == kScale ? 1 : gpus_);
    if (k == kKinds) {
      r.notes.push_back(absl::StrFormat("%s: %s; %s", kFields[k],
                                        HowObtained(k, from), verdict_[k]));
      continue;
    }
    r.notes.push_back(absl::StrFormat(
        "%s %s %.3f: %s; %s", kFields[k], k == kHost ? "scaled by" : "=",
        figure_[k], HowObtained(k, from), verdict_[k]));
  }
  if (gpus_ == 1 && !kept_names.empty()) {
    r.notes.push_back(
        "the in-step factors were fitted on one GPU (no NCCL kernels beside "
        "them); gpu.single_gpu_in_step_scale stays 1");
  }
  absl::StrAppendFormat(&report_, "in step: kept %s\n",
                        kept_names.empty() ? std::string("none")
                                           : absl::StrJoin(kept_names, ", "));
  r.report = std::move(report_);
  return r;
}

}  // namespace

std::vector<StepCase> DefaultCases(
    const model::ModelSpec& spec,
    const std::vector<std::pair<int64_t, int64_t>>& fit_batches,
    const std::vector<std::pair<int64_t, int64_t>>& held_out_batches, int gpus,
    bool pageable) {
  enum class Host { kNone, kPinned, kPageable };
  std::vector<Host> hosts = {Host::kNone, Host::kPinned};
  if (pageable) hosts.push_back(Host::kPageable);
  std::vector<StepCase> cases;
  auto add = [&](std::pair<int64_t, int64_t> b, Host host, int case_gpus,
                 bool held_out) {
    StepCase c;
    c.name = absl::StrCat(spec.name(), " ", BatchName(b),
                          host == Host::kNone     ? " none"
                          : host == Host::kPinned ? " pinned"
                                                  : " pageable",
                          case_gpus != gpus ? ", 1 GPU" : "");
    c.spec = spec;
    c.options.dtype = kernels::DType::kBF16;
    c.options.micro_batch = b.first;
    c.options.seq = b.second;
    c.options.offload_optimizer = host != Host::kNone;
    c.options.optimizer_pin_memory = host != Host::kPageable;
    // Pageable: DeepSpeed's blocking per-parameter gradient copies.
    c.options.grad_offload = host == Host::kPageable
                                 ? zero::GradOffload::kBlocking
                                 : zero::GradOffload::kAsync;
    c.gpus = case_gpus;
    c.held_out = held_out;
    cases.push_back(std::move(c));
  };
  for (const auto& b : fit_batches) {
    for (Host h : hosts) add(b, h, gpus, false);
  }
  for (const auto& b : held_out_batches) {
    for (Host h : hosts) add(b, h, gpus, true);
  }
  // The first fitted and held-out micro-batches on one GPU, optimizer on
  // the device: the one-GPU scale.
  if (gpus > 1 && !fit_batches.empty()) {
    add(fit_batches[0], Host::kNone, 1, false);
  }
  if (gpus > 1 && !held_out_batches.empty()) {
    add(held_out_batches[0], Host::kNone, 1, true);
  }
  return cases;
}

absl::StatusOr<FitResult> FitInStep(const sim::HardwareProfile& isolated,
                                    const std::vector<StepCase>& cases,
                                    const StepRunner& run,
                                    const FitOptions& options) {
  if (options.steps < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the in-step fit needs at least 2 steps per case (the first is not "
        "timed), got ",
        options.steps));
  }
  Fit fit(isolated, cases, options);
  ZR_RETURN_IF_ERROR(fit.Measure(run));
  ZR_RETURN_IF_ERROR(fit.FitFigures());
  ZR_RETURN_IF_ERROR(fit.FitKinds());
  ZR_RETURN_IF_ERROR(fit.FitOneGpuScale());
  ZR_RETURN_IF_ERROR(fit.Judge());
  return fit.Finish();
}

StepRunner SimulatedStepRunner(const sim::HardwareProfile& profile) {
  return [profile](const StepCase& c, int steps) {
    return Simulate(profile, c, steps);
  };
}

}  // namespace calibrate
}  // namespace zero3
