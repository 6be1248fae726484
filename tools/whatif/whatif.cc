// Copyright 2026 The zero3 Authors.

#include "tools/whatif/whatif.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/config/config_loader.h"
#include "core/config/json.h"
#include "core/config/modes.h"
#include "core/engine/config_options.h"
#include "core/engine/engine.h"
#include "core/kernels/op_args.h"
#include "core/kernels/op_cost.h"
#include "core/model/data.h"
#include "core/model/hf_config.h"
#include "core/model/presets.h"
#include "core/model/transformer.h"
#include "core/runtime/pinned_memory.h"
#include "core/util/key_value.h"
#include "core/util/proto_path.h"
#include "core/util/status_macros.h"
#include "core/util/suggest.h"
#include "core/util/text_proto.h"
#include "google/protobuf/descriptor.h"
#include "sim/cost_model.h"
#include "sim/host_share.h"
#include "sim/profiles.h"
#include "sim/simulator.h"

namespace zero3 {
namespace whatif {
namespace {

using google::protobuf::FieldDescriptor;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// Device memory (GiB) of the run that measures a variant's need.
constexpr double kUnlimitedGiB = 1 << 20;

// The scenario keys a variant can set; everything else is a configuration
// key, or a hardware-profile figure under "hardware.".
const std::vector<std::string>& ScenarioKeys() {
  static const auto* keys = new std::vector<std::string>{
      "hardware",        "model", "gpus",         "tp",
      "micro_batch",     "seq",   "accumulation", "host_cores_per_gpu",
      "host_memory_gbps"};
  return *keys;
}

std::string Canonical(absl::string_view key) {
  std::string k(key);
  std::replace(k.begin(), k.end(), '-', '_');
  return k;
}

bool IsScenarioKey(const std::string& key) {
  const auto& keys = ScenarioKeys();
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

// The largest value of a numeric scenario key (or "steps"): the limits of
// zero3's flags (tools/cli/flag_limits.h). The simulator walks every
// micro-step and step, so those are the tightest.
int64_t ScenarioMax(const std::string& key) {
  if (key == "micro_batch") return int64_t{1} << 16;
  if (key == "host_cores_per_gpu") return 4096;
  if (key == "accumulation") return 1024;
  if (key == "steps") return 1000;
  return int64_t{1} << 20;  // gpus, tp, seq
}

// `n` within 1..ScenarioMax(key); `shown` is the value as written.
absl::StatusOr<int64_t> InRange(const std::string& key, int64_t n,
                                const std::string& shown) {
  if (n >= 1 && n <= ScenarioMax(key)) return n;
  return absl::InvalidArgumentError(
      absl::StrCat(key, ": expected an integer from 1 to ", ScenarioMax(key),
                   ", got '", shown, "'"));
}

absl::StatusOr<int64_t> ParsePositive(const std::string& key,
                                      const std::string& value) {
  int64_t v = 0;
  double d = 0;
  if (!absl::SimpleAtoi(value, &v)) {
    // 5e2 as configs write integers; anything non-integral or beyond int64
    // is out of range.
    const bool integral = absl::SimpleAtod(value, &d) && std::isfinite(d) &&
                          d == std::floor(d) && std::fabs(d) < 9.2e18;
    v = integral ? static_cast<int64_t>(d) : 0;
  }
  return InRange(key, v, value);
}

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

absl::Status Apply(const std::string& raw_key, const std::string& value,
                   Variant* v) {
  const std::string key = Canonical(raw_key);
  if (key == "hardware") {
    v->hardware = value;
  } else if (key == "model") {
    v->model = value;
  } else if (absl::StartsWith(key, "hardware.")) {
    v->profile_overrides.push_back({key.substr(9), value});
  } else if (key == "host_memory_gbps") {
    v->profile_overrides.push_back(
        {"host.memory_bandwidth_gbps_per_node", value});
  } else if (IsScenarioKey(key)) {
    ZR_ASSIGN_OR_RETURN(int64_t n, ParsePositive(key, value));
    if (key == "gpus") v->gpus = n;
    if (key == "tp") v->tp = n;
    if (key == "micro_batch") {
      v->micro_batch = n;
      v->micro_batch_set = true;
    }
    if (key == "seq") v->seq = n;
    if (key == "host_cores_per_gpu") v->host_cores_per_gpu = n;
    if (key == "accumulation") {
      v->accumulation = n;
      v->accumulation_set = true;
    }
  } else {
    v->config_overrides.push_back(absl::StrCat(raw_key, "=", value));
  }
  return absl::OkStatus();
}

absl::Status SplitSetting(const std::string& text, std::string* key,
                          std::string* value) {
  const absl::optional<KeyValue> kv = SplitKeyValue(text);
  if (!kv.has_value() || kv->key.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text,
                     "': expected KEY=VALUE (e.g. tp=2, or "
                     "zero_optimization.offload_optimizer.pin_memory=false)"));
  }
  *key = std::string(kv->key);
  *value = std::string(kv->value);
  return absl::OkStatus();
}

// Sets a numeric or boolean field of a profile by its dotted path.
absl::Status SetProfileField(sim::HardwareProfile* profile,
                             const std::string& path,
                             const std::string& value) {
  const std::vector<std::string> parts = absl::StrSplit(path, '.');
  const FieldPath fields = ResolveFieldPath(profile->GetDescriptor(), parts);
  if (fields.stop == FieldPath::Stop::kUnknownField) {
    const std::string& part = parts[fields.fields.size()];
    const std::string near = NearestName(part, FieldNames(fields.type));
    return absl::InvalidArgumentError(absl::StrCat(
        "hardware.", path, ": the profile has no field '", part, "'",
        near.empty() ? "" : absl::StrCat(" (did you mean '", near, "'?)")));
  }
  if (fields.stop == FieldPath::Stop::kNotSection) {
    return absl::InvalidArgumentError(
        absl::StrCat("hardware.", path, ": '", parts[fields.fields.size() - 1],
                     "' is not a section"));
  }
  const FieldDescriptor* f = fields.fields.back();
  if (f->is_repeated()) {
    return absl::InvalidArgumentError(
        absl::StrCat("hardware.", path,
                     ": curves cannot be set from the command line; "
                     "write a profile file"));
  }
  if (!SetScalarFromText(MutableOwner(profile, fields.fields), f, value)) {
    return absl::InvalidArgumentError(absl::StrCat("hardware.", path, ": '",
                                                   value, "' is not a valid ",
                                                   f->cpp_type_name()));
  }
  return absl::OkStatus();
}

// Expands the scenario into variants (the cross product of `vary`, the first
// key slowest).
absl::StatusOr<std::vector<Variant>> Expand(const Scenario& s) {
  Variant base;
  base.hardware = s.hardware();
  base.model = s.model();
  base.gpus = s.gpus();
  base.tp = s.tp();
  base.micro_batch = s.micro_batch();
  base.micro_batch_set = s.has_micro_batch();
  base.seq = s.seq();
  base.accumulation = s.accumulation();
  base.accumulation_set = s.has_accumulation();
  for (const auto& [key, n] :
       {std::pair<std::string, int64_t>{"gpus", base.gpus},
        {"tp", base.tp},
        {"micro_batch", base.micro_batch},
        {"seq", base.seq},
        {"accumulation", base.accumulation},
        {"steps", s.steps()}}) {
    ZR_RETURN_IF_ERROR(InRange(key, n, absl::StrCat(n)).status());
  }
  for (const std::string& set : s.set()) {
    std::string key, value;
    ZR_RETURN_IF_ERROR(SplitSetting(set, &key, &value));
    ZR_RETURN_IF_ERROR(Apply(key, value, &base));
  }
  std::vector<Variant> variants = {base};
  for (const Vary& vary : s.vary()) {
    if (vary.key().empty() || vary.values().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "vary '", vary.key(), "': needs a key and at least one value"));
    }
    std::vector<Variant> next;
    for (const Variant& v : variants) {
      for (const std::string& value : vary.values()) {
        Variant w = v;
        ZR_RETURN_IF_ERROR(Apply(vary.key(), value, &w));
        w.settings.push_back({vary.key(), value});
        next.push_back(std::move(w));
      }
    }
    variants = std::move(next);
  }
  return variants;
}

absl::StatusOr<int> FindBaseline(const Scenario& s,
                                 const std::vector<Variant>& variants) {
  if (s.baseline().empty()) return 0;
  std::vector<std::pair<std::string, std::string>> want;
  for (absl::string_view part :
       absl::StrSplit(s.baseline(), ',', absl::SkipEmpty())) {
    std::string key, value;
    ZR_RETURN_IF_ERROR(SplitSetting(std::string(part), &key, &value));
    want.push_back({Canonical(key), value});
  }
  for (size_t i = 0; i < variants.size(); ++i) {
    bool match = true;
    for (const auto& [key, value] : want) {
      bool found = false;
      for (const auto& [k, v] : variants[i].settings) {
        if (Canonical(k) == key) found = (v == value);
      }
      match = match && found;
    }
    if (match) return static_cast<int>(i);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "baseline '", s.baseline(),
      "' matches no variant: give KEY=VALUE pairs of the varied keys"));
}

struct Resolved {
  sim::HardwareProfile profile;
  model::ModelSpec spec;
  zero::ZeroOptions options;
  bool checkpoint_async = true;  // zero3.checkpoint_write
  std::vector<std::string> notices;
};

absl::StatusOr<Resolved> Resolve(const Scenario& s, const Variant& v,
                                 const RunOptions& run) {
  if (v.gpus % v.tp != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("tp (", v.tp, ") must divide gpus (", v.gpus, ")"));
  }
  Resolved r;
  ZR_ASSIGN_OR_RETURN(r.profile, sim::LoadProfile(v.hardware));
  for (const auto& [path, value] : v.profile_overrides) {
    ZR_RETURN_IF_ERROR(SetProfileField(&r.profile, path, value));
  }
  if (v.host_cores_per_gpu > 0) {
    ZR_RETURN_IF_ERROR(sim::SetHostCores(static_cast<int>(v.host_cores_per_gpu),
                                         0, &r.profile));
  }
  ZR_RETURN_IF_ERROR(sim::CostModel::Create(r.profile).status());
  ZR_ASSIGN_OR_RETURN(r.spec, model::LoadModelSpecOrHfConfig(v.model));

  config::LoadOptions load;
  load.world_size = v.gpus / v.tp;
  if (!s.config().empty()) {
    std::string path = s.config();
    if (!run.base_dir.empty() && path[0] != '/')
      path = run.base_dir + "/" + path;
    if (v.micro_batch_set) {
      load.overrides.push_back(
          absl::StrCat("train_micro_batch_size_per_gpu=", v.micro_batch));
    }
    if (v.accumulation_set) {
      load.overrides.push_back(
          absl::StrCat("gradient_accumulation_steps=", v.accumulation));
    }
    load.overrides.insert(load.overrides.end(), v.config_overrides.begin(),
                          v.config_overrides.end());
    ZR_ASSIGN_OR_RETURN(config::LoadedConfig c,
                        config::LoadConfigFile(path, load));
    ZR_ASSIGN_OR_RETURN(r.options,
                        engine::OptionsFromConfig(c.config, v.seq, 0));
    r.checkpoint_async = config::ModesOf(c.config).checkpoint_write ==
                         config::CheckpointWrite::kAsync;
    r.notices = c.notices;
    r.notices.insert(r.notices.end(), c.warnings.begin(), c.warnings.end());
  } else {
    load.overrides = {
        "zero_optimization.stage=3", "bf16.enabled=true",
        "zero_optimization.offload_optimizer.device=cpu",
        absl::StrCat("train_micro_batch_size_per_gpu=", v.micro_batch),
        absl::StrCat("gradient_accumulation_steps=", v.accumulation)};
    load.overrides.insert(load.overrides.end(), v.config_overrides.begin(),
                          v.config_overrides.end());
    ZR_ASSIGN_OR_RETURN(config::LoadedConfig c, config::DefaultConfig(load));
    ZR_ASSIGN_OR_RETURN(r.options,
                        engine::OptionsFromConfig(c.config, v.seq, 0));
    r.checkpoint_async = config::ModesOf(c.config).checkpoint_write ==
                         config::CheckpointWrite::kAsync;
    r.notices = c.notices;
  }
  r.options.tensor_parallel = static_cast<int>(v.tp);
  return r;
}

// Length of the union of intervals, and of the part not covered by `cover`.
struct Span {
  int64_t start, end;
};

std::vector<Span> Union(std::vector<Span> v) {
  std::sort(v.begin(), v.end(),
            [](const Span& a, const Span& b) { return a.start < b.start; });
  std::vector<Span> out;
  for (const Span& s : v) {
    if (!out.empty() && s.start <= out.back().end) {
      out.back().end = std::max(out.back().end, s.end);
    } else {
      out.push_back(s);
    }
  }
  return out;
}

int64_t UncoveredLength(const std::vector<Span>& spans,
                        const std::vector<Span>& cover) {
  int64_t total = 0;
  size_t j = 0;
  for (const Span& s : spans) {
    int64_t t = s.start;
    while (j < cover.size() && cover[j].end <= t) ++j;
    for (size_t k = j; k < cover.size() && cover[k].start < s.end; ++k) {
      if (cover[k].start > t) total += cover[k].start - t;
      t = std::max(t, cover[k].end);
      if (t >= s.end) break;
    }
    if (t < s.end) total += s.end - t;
  }
  return total;
}

// True for the simulated device's "device out of memory" error.
bool IsDeviceOutOfMemory(const absl::Status& s) {
  return s.code() == absl::StatusCode::kResourceExhausted &&
         absl::StrContains(s.message(), "device out of memory");
}

// The result of a variant that ran out of device memory: its peak need,
// from the same step on a device without a memory limit.
VariantResult NotFitting(StepInput input, const absl::Status& why) {
  VariantResult out;
  DoesNotFit f;
  f.capacity_gib = input.profile.gpu().memory_gib();
  f.message = std::string(why.message());
  input.profile.mutable_gpu()->set_memory_gib(kUnlimitedGiB);
  input.traces = false;
  input.op_timings = false;
  absl::StatusOr<VariantResult> unlimited = SimulateStep(input);
  if (unlimited.ok()) f.need_gib = unlimited->metrics.device_memory_gib;
  out.metrics.device_memory_gib = f.need_gib;
  out.does_not_fit = std::move(f);
  return out;
}

absl::StatusOr<VariantResult> RunVariant(const Scenario& s, const Variant& v,
                                         const RunOptions& run,
                                         std::vector<std::string>* notices) {
  ZR_ASSIGN_OR_RETURN(Resolved r, Resolve(s, v, run));
  for (const std::string& n : r.notices) {
    if (std::find(notices->begin(), notices->end(), n) == notices->end()) {
      notices->push_back(n);
    }
  }
  StepInput input;
  input.profile = r.profile;
  input.spec = r.spec;
  input.options = r.options;
  input.gpus = static_cast<int>(v.gpus);
  input.steps = std::max(1, s.steps());
  input.full = run.full;
  input.traces = run.traces;
  input.detect_races = run.detect_races;
  if (s.eval_interval() > 0) input.eval_iters = std::max(1, s.eval_iters());
  absl::StatusOr<VariantResult> simulated = SimulateStep(input);
  if (IsDeviceOutOfMemory(simulated.status())) {
    VariantResult out = NotFitting(input, simulated.status());
    out.settings = v.settings;
    return out;
  }
  ZR_ASSIGN_OR_RETURN(VariantResult out, std::move(simulated));
  out.settings = v.settings;
  out.changes_training = zero::HostStepPlanOf(r.options).delayed;
  out.eval_interval = s.eval_interval();
  out.eval_iters = input.eval_iters;
  if (s.save_interval() > 0) {
    CheckpointCostInput c;
    c.profile = r.profile;
    const int gpus = static_cast<int>(v.gpus);
    for (const model::ParamInfo& p : model::ModelParams(r.spec)) {
      c.bytes_per_rank += 12 * ((p.numel() + gpus - 1) / gpus);
    }
    c.ranks_per_node =
        std::max(1, std::min(gpus, r.profile.fabric().gpus_per_node()));
    c.offload = r.options.offload_optimizer;
    c.async = r.checkpoint_async;
    c.interval = s.save_interval();
    c.step_ms = out.metrics.total_ms;
    c.host_optimizer_ms = c.offload ? out.metrics.step_ms : 0;
    out.checkpoint = EstimateCheckpointCost(c);
    out.checkpoint_async = c.async;
  }
  return out;
}

}  // namespace

absl::StatusOr<VariantResult> SimulateStep(const StepInput& in) {
  sim::SimOptions so;
  so.profile = in.profile;
  so.world_size = in.gpus;
  so.mode = sim::SimMode::kTiming;
  so.detect_races = in.detect_races;
  so.trace = in.traces || in.op_timings;
  // As the CUDA backend times them: between events, which the host pays for.
  const bool ops_apart = in.op_timings && in.op_timings_apart;
  so.op_timing = in.op_timings && !ops_apart;
  so.symmetric = !in.full;
  ZR_ASSIGN_OR_RETURN(auto world, sim::SimWorld::Create(so));
  auto data = model::SyntheticBatches(in.spec.vocab_size(), 0);
  const int steps = std::max(1, in.steps);
  engine::StepStats last;
  runtime::MemoryStats memory;
  runtime::PinnedMemoryStats pinned;
  int64_t step_start = 0;
  int64_t ops_from = 0;  // where the timed operations start
  int64_t eval_ns = -1;  // one evaluation's, rank 0's
  ZR_RETURN_IF_ERROR(world->Run([&](runtime::Runtime& rt) -> absl::Status {
    ZR_ASSIGN_OR_RETURN(
        auto e, engine::Engine::Create(in.spec, in.options, data.get(), rt));
    for (int i = 0; i < steps; ++i) {
      if (rt.rank() == 0 && i == steps - 1) {
        world->set_record_activity(true);
        step_start = rt.NowNanos();
      }
      ZR_ASSIGN_OR_RETURN(engine::StepStats stats, e->Step());
      if (rt.rank() == 0) last = stats;
    }
    if (rt.rank() == 0) {
      memory = rt.device().memory_stats();
      pinned = rt.pinned_memory().stats();
      ops_from = ops_apart ? rt.NowNanos() : step_start;
      if (ops_apart) world->set_op_timing(true);
    }
    if (ops_apart) ZR_RETURN_IF_ERROR(e->Step().status());
    if (in.eval_iters > 0) {
      const int64_t t0 = rt.NowNanos();
      ZR_RETURN_IF_ERROR(e->Evaluate(*data, in.eval_iters).status());
      if (rt.rank() == 0) eval_ns = rt.NowNanos() - t0;
    }
    return absl::OkStatus();
  }));
  const int64_t step_end = step_start + last.total_ns;
  std::vector<Span> compute, copy, comm;
  int64_t blocked = 0;
  for (const sim::ActivityInterval& a : world->TakeActivity(0)) {
    const Span span{std::max(a.start_ns, step_start),
                    std::min(a.end_ns, step_end)};
    if (span.end <= span.start) continue;
    switch (a.kind) {
      case sim::ActivityInterval::Kind::kCompute:
        compute.push_back(span);
        break;
      case sim::ActivityInterval::Kind::kCopy:
        copy.push_back(span);
        break;
      case sim::ActivityInterval::Kind::kCollective:
        comm.push_back(span);
        break;
      case sim::ActivityInterval::Kind::kHostBlocked:
        blocked += span.end - span.start;
        break;
    }
  }
  const std::vector<Span> kernels = Union(compute);
  VariantResult out;
  Metrics& m = out.metrics;
  m.fwd_ms = last.fwd_ns / 1e6;
  m.bwd_ms = last.bwd_ns / 1e6;
  m.step_ms = last.step_ns / 1e6;
  m.total_ms = last.total_ns / 1e6;
  m.tokens_per_s = last.global_tokens / (last.total_ns / 1e9);
  m.exposed_copy_ms = UncoveredLength(Union(copy), kernels) / 1e6;
  m.exposed_comm_ms = UncoveredLength(Union(comm), kernels) / 1e6;
  m.host_blocked_ms = blocked / 1e6;
  m.device_memory_gib = memory.peak_bytes_in_use / kGiB;
  m.pinned_host_gib = pinned.peak_bytes / kGiB;
  out.simulated_ops = world->total_ops();
  if (eval_ns >= 0) out.eval_ms = eval_ns / 1e6;
  if (in.traces) out.trace_json = world->trace().ToJson();
  if (in.op_timings) {
    // Copies, memsets and kernels between their events; the collectives
    // (which the CUDA backend does not time) from the trace, as they ran.
    for (runtime::OpTiming& op : world->TakeOpTimings(0)) {
      if (op.start_ns >= ops_from) out.ops.push_back(std::move(op));
    }
    const sim::Trace& trace = world->trace();
    for (const sim::Trace::Span& span : trace.spans()) {
      if (span.pid != 0 || span.start_ns < ops_from) continue;
      // Host tasks too, as the CUDA backend's op timing reports them (not
      // the host's staging of copies, which it cannot see).
      if (span.category == "host task") {
        out.ops.push_back({"host", span.name, span.start_ns, span.end_ns});
        continue;
      }
      const std::string track = trace.TrackName(span.pid, span.tid);
      constexpr absl::string_view kStream = "stream: ";
      if (span.category != "collective" || !absl::StartsWith(track, kStream)) {
        continue;
      }
      out.ops.push_back({track.substr(kStream.size()), span.name, span.start_ns,
                         span.end_ns, span.kind});
    }
    std::stable_sort(
        out.ops.begin(), out.ops.end(),
        [](const runtime::OpTiming& a, const runtime::OpTiming& b) {
          return a.start_ns < b.start_ns;
        });
  }
  return out;
}

namespace {

std::string Label(
    const std::vector<std::pair<std::string, std::string>>& settings,
    bool full_keys) {
  if (settings.empty()) return "(base)";
  std::vector<std::string> parts;
  for (const auto& [k, v] : settings) {
    const std::string key =
        full_keys ? k : std::string(k.substr(k.rfind('.') + 1));
    parts.push_back(absl::StrCat(key, "=", v));
  }
  return absl::StrJoin(parts, " ");
}

bool ShortKeysAreUnique(const ScenarioResult& r) {
  if (r.variants.empty()) return true;
  std::vector<std::string> shorts;
  for (const auto& [k, v] : r.variants[0].settings) {
    shorts.push_back(std::string(k.substr(k.rfind('.') + 1)));
  }
  std::vector<std::string> sorted = shorts;
  std::sort(sorted.begin(), sorted.end());
  return std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
}

}  // namespace

std::vector<std::string> MetricNames() {
  return {"fwd_ms",          "bwd_ms",          "step_ms",
          "total_ms",        "tokens_per_s",    "exposed_copy_ms",
          "exposed_comm_ms", "host_blocked_ms", "device_memory_gib",
          "pinned_host_gib"};
}

absl::StatusOr<double> MetricValue(const Metrics& m, const std::string& name) {
  const double values[] = {
      m.fwd_ms,          m.bwd_ms,          m.step_ms,
      m.total_ms,        m.tokens_per_s,    m.exposed_copy_ms,
      m.exposed_comm_ms, m.host_blocked_ms, m.device_memory_gib,
      m.pinned_host_gib};
  const std::vector<std::string> names = MetricNames();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return values[i];
  }
  const std::string near = NearestName(name, names);
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown metric '", name, "'",
      near.empty() ? "" : absl::StrCat(" (did you mean '", near, "'?)"),
      "; metrics: ", absl::StrJoin(names, ", ")));
}

absl::StatusOr<Scenario> LoadScenario(const std::string& path) {
  Scenario s;
  ZR_RETURN_IF_ERROR(ReadTextProtoFile(path, "scenario", &s));
  if (!s.has_name()) {
    std::string name = path.substr(path.rfind('/') + 1);
    s.set_name(name.substr(0, name.find('.')));
  }
  return s;
}

namespace {

// What "fastest" compares: tokens/s, per GPU when the GPU count varies.
double ComparedRate(const ScenarioResult& r, const VariantResult& v) {
  return v.metrics.tokens_per_s /
         (r.per_gpu ? static_cast<double>(v.gpus) : 1.0);
}

}  // namespace

absl::StatusOr<ScenarioResult> RunScenario(const Scenario& scenario,
                                           const RunOptions& options) {
  ZR_ASSIGN_OR_RETURN(std::vector<Variant> variants, Expand(scenario));
  ScenarioResult result;
  result.name = scenario.name();
  result.description = scenario.description();
  ZR_ASSIGN_OR_RETURN(result.baseline, FindBaseline(scenario, variants));
  // With the GPU count varied, more GPUs always train more tokens per
  // second: the comparison is per GPU.
  for (const Variant& v : variants) {
    if (v.gpus != variants.front().gpus) result.per_gpu = true;
  }
  for (const Variant& v : variants) {
    absl::StatusOr<VariantResult> r =
        RunVariant(scenario, v, options, &result.notices);
    if (!r.ok()) {
      return Annotate(r.status(),
                      absl::StrCat("variant ", Label(v.settings, true)));
    }
    r->gpus = v.gpus;
    result.variants.push_back(std::move(*r));
    const VariantResult& done = result.variants.back();
    const int index = static_cast<int>(result.variants.size()) - 1;
    auto faster = [&](int best) {
      return !done.does_not_fit.has_value() &&
             (best < 0 || ComparedRate(result, done) >
                              ComparedRate(result, result.variants[best]));
    };
    if (faster(result.fastest)) result.fastest = index;
    if (!done.changes_training && faster(result.fastest_exact)) {
      result.fastest_exact = index;
    }
    if (options.progress) {
      options.progress(static_cast<int>(result.variants.size()),
                       static_cast<int>(variants.size()),
                       Label(v.settings, true));
    }
  }
  return result;
}

absl::StatusOr<std::string> ExplainScenario(const Scenario& scenario,
                                            const RunOptions& options) {
  ZR_ASSIGN_OR_RETURN(std::vector<Variant> variants, Expand(scenario));
  const Variant& v = variants.front();
  ZR_ASSIGN_OR_RETURN(Resolved r, Resolve(scenario, v, options));
  ZR_ASSIGN_OR_RETURN(sim::CostModel cost, sim::CostModel::Create(r.profile));
  cost.set_ranks_per_node(
      std::min<int>(v.gpus, r.profile.fabric().gpus_per_node()));
  cost.set_world_size(v.gpus);
  const model::ModelSpec& s = r.spec;
  const zero::ZeroOptions& o = r.options;
  const kernels::DType dt = o.dtype;
  const int64_t tp = v.tp, dp = v.gpus / v.tp;
  const int64_t t = o.micro_batch * o.seq, h = s.hidden_size();
  const int64_t q = s.num_heads() / tp * s.head_dim();
  const int64_t esize = kernels::DTypeSize(dt);
  auto work = [](const kernels::OpCost& c, sim::ComputeClass cls) {
    sim::KernelWork w;
    w.compute_class = cls;
    w.flops = static_cast<double>(c.flops);
    w.bytes = static_cast<double>(c.bytes_read + c.bytes_written);
    return w;
  };
  kernels::AttentionArgs at;
  at.batch = o.micro_batch;
  at.seq = o.seq;
  at.num_heads = s.num_heads() / tp;
  at.num_kv_heads = s.num_kv_heads() / tp;
  at.head_dim = s.head_dim();
  kernels::RmsNormArgs rn;
  rn.rows = t;
  rn.dim = h;
  const int64_t shard = model::ParameterCount(s) / tp / dp;
  const int64_t bucket =
      std::min<int64_t>(o.reduce_bucket_size, model::ParameterCount(s) / tp);
  const int64_t layer_weight = h * q;  // the q projection, gathered whole
  const int64_t adam = std::min<int64_t>(o.sub_group_size, shard);
  std::string out = absl::StrFormat(
      "Cost model terms on %s for %s, %d GPUs (tp %d, dp %d), micro-batch %d x "
      "%d, %s:\n",
      r.profile.name(), s.name(), v.gpus, tp, dp, o.micro_batch, o.seq,
      kernels::DTypeName(dt));
  absl::StrAppend(&out, "  q_proj forward GEMM [", t, " x ", h, "] x [", h,
                  " x ", q, "]: ",
                  cost.ExplainKernel(
                      sim::MatmulWork(kernels::LinearForwardArgs(t, h, q), dt)),
                  "\n");
  absl::StrAppend(
      &out, "  attention forward: ",
      cost.ExplainKernel(sim::AttentionWork(at, /*backward=*/false, dt)), "\n");
  absl::StrAppend(&out, "  rmsnorm forward: ",
                  cost.ExplainKernel(work(kernels::RmsNormForwardCost(rn, dt),
                                          sim::ComputeClass::kElementwise)),
                  "\n");
  // Without accumulation the reduced gradients go to the host in the
  // model's dtype; with it, the fp32 partition does.
  const int64_t grad_esize = o.accumulation == 1 ? esize : 4;
  const int64_t grad_bytes = bucket / dp * grad_esize;
  absl::StrAppend(
      &out, "  gradient bucket partition to the host (",
      kernels::DTypeName(o.accumulation == 1 ? dt : kernels::DType::kF32),
      "): ", cost.ExplainCopy(grad_bytes, sim::CopyKind::kPinnedD2H), "\n");
  absl::StrAppend(&out, "  the same into pageable memory: ",
                  cost.ExplainCopy(grad_bytes, sim::CopyKind::kPageableD2H),
                  "\n");
  absl::StrAppend(&out, "  updated shard to the device: ",
                  cost.ExplainCopy(shard * esize, sim::CopyKind::kPinnedH2D),
                  "\n");
  const int per_node = r.profile.fabric().gpus_per_node();
  const bool dp_spans = (dp - 1) * tp / per_node != 0;
  absl::StrAppend(&out, "  all-gather of one q_proj weight (data parallel): ",
                  cost.ExplainCollective(sim::CollectiveKind::kAllGather,
                                         layer_weight * esize, dp, dp_spans),
                  "\n");
  absl::StrAppend(&out, "  reduce-scatter of one gradient bucket: ",
                  cost.ExplainCollective(sim::CollectiveKind::kReduceScatter,
                                         bucket * esize, dp, dp_spans),
                  "\n");
  if (tp > 1) {
    absl::StrAppend(&out, "  tensor-parallel all-reduce of activations: ",
                    cost.ExplainCollective(sim::CollectiveKind::kAllReduce,
                                           t * h * esize, tp, false),
                    "\n");
  }
  absl::StrAppend(&out, "  host AdamW over one sub-group: ",
                  cost.ExplainHostTask(
                      15.0 * adam, (24 + grad_esize + esize) * adam,
                      o.optimizer_threads > 0 ? o.optimizer_threads : 1 << 16),
                  "\n");
  return out;
}

// The evaluation's cost for the variants that have it (eval_interval).
void AppendEvalTable(const ScenarioResult& r,
                     const std::vector<std::string>& labels, size_t width,
                     std::string* out) {
  if (r.fastest < 0 || !r.variants[r.fastest].eval_ms.has_value()) return;
  const VariantResult& f = r.variants[r.fastest];
  absl::StrAppend(out, "\nevaluation every ", f.eval_interval, " steps, ",
                  f.eval_iters, " global batches of forward passes:\n");
  absl::StrAppend(
      out, absl::StrFormat("%-*s %10s %12s %9s %12s\n", width, "variant",
                           "eval ms", "per step ms", "per step", "tokens/s"));
  for (size_t i = 0; i < r.variants.size(); ++i) {
    const VariantResult& v = r.variants[i];
    if (!v.eval_ms.has_value() || v.does_not_fit.has_value()) continue;
    const double per_step = *v.eval_ms / v.eval_interval;
    const double total = v.metrics.total_ms;
    absl::StrAppend(
        out,
        absl::StrFormat("%-*s %10.1f %12.2f %8.2f%% %12.0f\n", width, labels[i],
                        *v.eval_ms, per_step, 100 * per_step / total,
                        v.metrics.tokens_per_s * total / (total + per_step)));
  }
  absl::StrAppend(out,
                  "eval ms: one evaluation; per step: over the interval; "
                  "tokens/s: training tokens over the step and its share of "
                  "the evaluation.\n");
}

// The checkpoint costs of the variants that have them (save_interval).
void AppendCheckpointTable(const ScenarioResult& r,
                           const std::vector<std::string>& labels, size_t width,
                           std::string* out) {
  if (r.fastest < 0 || !r.variants[r.fastest].checkpoint.has_value()) return;
  absl::StrAppend(out, "\ncheckpoint every ",
                  r.variants[r.fastest].checkpoint->interval, " steps:\n");
  absl::StrAppend(out,
                  absl::StrFormat("%-*s %9s %10s %10s %10s %10s %9s\n", width,
                                  "variant", "mode", "snapshot", "shard ms",
                                  "stall ms", "slower ms", "per step"));
  for (size_t i = 0; i < r.variants.size(); ++i) {
    const std::optional<CheckpointCost>& c = r.variants[i].checkpoint;
    if (!c.has_value()) continue;
    absl::StrAppend(
        out,
        absl::StrFormat("%-*s %9s %10.1f %10.1f %10.1f %10.1f %8.2f%%\n", width,
                        labels[i],
                        r.variants[i].checkpoint_async ? "async" : "blocking",
                        c->snapshot_ms, c->write_ms, c->stall_ms,
                        c->slowdown_ms, 100 * c->overhead));
  }
  absl::StrAppend(
      out,
      "snapshot: copies to host memory (the step stops); shard: the write to "
      "storage (host.storage_write_gbps_per_node); stall: the loop waits, "
      "per save; slower: longer steps while an async write runs, per save; "
      "per step: (stall + slower) / interval over the step total.\n");
}

namespace {

// "does not fit: needs 151.20 GiB of 140.40 GiB device memory".
std::string NotFitText(const VariantResult& v) {
  const DoesNotFit& f = *v.does_not_fit;
  if (f.need_gib <= 0) {
    return absl::StrFormat("does not fit in %.2f GiB of device memory",
                           f.capacity_gib);
  }
  return absl::StrFormat(
      "does not fit: needs %.2f GiB of %.2f GiB device memory", f.need_gib,
      f.capacity_gib);
}

// The line naming the fastest fitting variant, after the table.
void AppendFastest(const ScenarioResult& r, bool full_keys, std::string* out) {
  if (r.fastest < 0) {
    absl::StrAppend(out, "\nno variant fits the device's memory.\n");
    return;
  }
  const VariantResult& v = r.variants[r.fastest];
  if (r.per_gpu) {
    absl::StrAppend(
        out, absl::StrFormat("\nfastest per GPU that fits: %s (%.0f tokens/s, "
                             "%.0f per GPU)\n",
                             Label(v.settings, full_keys),
                             v.metrics.tokens_per_s, ComparedRate(r, v)));
    return;
  }
  absl::StrAppend(
      out, absl::StrFormat("\nfastest that fits: %s (%.0f tokens/s)%s\n",
                           Label(v.settings, full_keys), v.metrics.tokens_per_s,
                           v.changes_training
                               ? "; it changes the training (one-step "
                                 "delayed update)"
                               : ""));
  if (v.changes_training && r.fastest_exact >= 0) {
    const VariantResult& exact = r.variants[r.fastest_exact];
    absl::StrAppend(
        out, absl::StrFormat("fastest exact that fits: %s (%.0f tokens/s)\n",
                             Label(exact.settings, full_keys),
                             exact.metrics.tokens_per_s));
  }
}

// The change of each variant against the baseline, in percent.
void AppendChanges(const ScenarioResult& r,
                   const std::vector<std::string>& labels, size_t width,
                   std::string* out) {
  if (r.variants[r.baseline].does_not_fit) {
    absl::StrAppend(out,
                    "\nno changes against the baseline (*): it does not "
                    "fit.\n");
    return;
  }
  const Metrics& b = r.variants[r.baseline].metrics;
  auto pct = [](double v, double base) {
    if (base == 0) return v == 0 ? std::string("0%") : std::string("n/a");
    return absl::StrFormat("%+.1f%%", 100.0 * (v - base) / base);
  };
  absl::StrAppend(out, "\nchange against the baseline (*):\n");
  absl::StrAppend(
      out, absl::StrFormat("%-*s %9s %9s %9s %9s %11s\n", width, "variant",
                           "FWD", "BWD", "STEP", "total", "tokens/s"));
  for (size_t i = 0; i < r.variants.size(); ++i) {
    if (static_cast<int>(i) == r.baseline) continue;
    if (r.variants[i].does_not_fit.has_value()) {
      absl::StrAppend(
          out, absl::StrFormat("%-*s %9s\n", width, labels[i], "does not fit"));
      continue;
    }
    const Metrics& m = r.variants[i].metrics;
    absl::StrAppend(
        out,
        absl::StrFormat("%-*s %9s %9s %9s %9s %11s\n", width, labels[i],
                        pct(m.fwd_ms, b.fwd_ms), pct(m.bwd_ms, b.bwd_ms),
                        pct(m.step_ms, b.step_ms), pct(m.total_ms, b.total_ms),
                        pct(m.tokens_per_s, b.tokens_per_s)));
  }
}

}  // namespace

std::string FormatTable(const ScenarioResult& r) {
  const bool short_keys = ShortKeysAreUnique(r);
  std::vector<std::string> labels;
  size_t width = 7;
  for (size_t i = 0; i < r.variants.size(); ++i) {
    std::string l = Label(r.variants[i].settings, !short_keys);
    if (static_cast<int>(i) == r.baseline) l += " *";
    width = std::max(width, l.size());
    labels.push_back(l);
  }
  std::string out;
  absl::StrAppend(
      &out, "scenario ", r.name,
      r.description.empty() ? "" : absl::StrCat(": ", r.description), "\n");
  const std::string header = absl::StrFormat(
      "%-*s %9s %9s %9s %9s %11s %9s %9s %9s %8s %8s\n", width, "variant",
      "FWD ms", "BWD ms", "STEP ms", "total ms", "tokens/s", "copy* ms",
      "comm* ms", "blocked", "mem GiB", "pin GiB");
  absl::StrAppend(&out, header);
  for (size_t i = 0; i < r.variants.size(); ++i) {
    const Metrics& m = r.variants[i].metrics;
    if (r.variants[i].does_not_fit.has_value()) {
      absl::StrAppend(&out, absl::StrFormat("%-*s %s\n", width, labels[i],
                                            NotFitText(r.variants[i])));
      continue;
    }
    absl::StrAppend(
        &out, absl::StrFormat("%-*s %9.1f %9.1f %9.1f %9.1f %11.0f %9.1f %9.1f "
                              "%9.1f %8.2f %8.2f\n",
                              width, labels[i], m.fwd_ms, m.bwd_ms, m.step_ms,
                              m.total_ms, m.tokens_per_s, m.exposed_copy_ms,
                              m.exposed_comm_ms, m.host_blocked_ms,
                              m.device_memory_gib, m.pinned_host_gib));
  }
  if (r.variants.size() > 1) AppendFastest(r, !short_keys, &out);
  if (r.variants.size() > 1) AppendChanges(r, labels, width, &out);
  absl::StrAppend(
      &out,
      "\ncopy*/comm*: time a host-device copy / a collective ran while "
      "no kernel did; blocked: host thread blocked; times of rank 0's "
      "last simulated step.\n");
  AppendCheckpointTable(r, labels, width, &out);
  AppendEvalTable(r, labels, width, &out);
  return out;
}

// A variant's checkpoint and evaluation figures by name, as JSON and CSV
// carry them; none without save_interval and eval_interval.
std::vector<std::pair<std::string, double>> CostFigures(
    const VariantResult& v) {
  std::vector<std::pair<std::string, double>> figures;
  if (v.checkpoint.has_value()) {
    const CheckpointCost& c = *v.checkpoint;
    figures = {{"checkpoint_interval", c.interval},
               {"checkpoint_async", v.checkpoint_async ? 1 : 0},
               {"checkpoint_snapshot_ms", c.snapshot_ms},
               {"checkpoint_write_ms", c.write_ms},
               {"checkpoint_stall_ms", c.stall_ms},
               {"checkpoint_slowdown_ms", c.slowdown_ms},
               {"checkpoint_per_step_ms", c.per_step_ms},
               {"checkpoint_overhead", c.overhead}};
  }
  if (v.eval_ms.has_value() && v.eval_interval > 0) {
    const double per_step = *v.eval_ms / v.eval_interval;
    const double total = v.metrics.total_ms;
    figures.insert(
        figures.end(),
        {{"eval_interval", v.eval_interval},
         {"eval_iters", v.eval_iters},
         {"eval_ms", *v.eval_ms},
         {"eval_per_step_ms", per_step},
         {"eval_overhead", total > 0 ? per_step / total : 0},
         {"tokens_per_s_with_eval",
          total > 0 ? v.metrics.tokens_per_s * total / (total + per_step)
                    : 0}});
  }
  return figures;
}

std::string FormatJson(const ScenarioResult& r) {
  std::string out = absl::StrCat(
      "{\n  \"scenario\": ", config::QuoteJsonString(r.name),
      ",\n  \"description\": ", config::QuoteJsonString(r.description),
      ",\n  \"baseline\": ", r.baseline, ",\n  \"fastest_fitting\": ",
      r.fastest < 0 ? std::string("null") : absl::StrCat(r.fastest),
      ",\n  \"fastest_exact_fitting\": ",
      r.fastest_exact < 0 ? std::string("null") : absl::StrCat(r.fastest_exact),
      ",\n  \"variants\": [");
  const std::vector<std::string> names = MetricNames();
  for (size_t i = 0; i < r.variants.size(); ++i) {
    const VariantResult& v = r.variants[i];
    absl::StrAppend(&out, i == 0 ? "\n" : ",\n", "    {\"settings\": {");
    for (size_t k = 0; k < v.settings.size(); ++k) {
      absl::StrAppend(&out, k == 0 ? "" : ", ",
                      config::QuoteJsonString(v.settings[k].first), ": ",
                      config::QuoteJsonString(v.settings[k].second));
    }
    absl::StrAppend(&out, "}, \"fits\": ", v.does_not_fit ? "false" : "true");
    if (v.does_not_fit.has_value()) {
      absl::StrAppend(&out, ", \"memory_need_gib\": ",
                      config::FormatJsonDouble(v.does_not_fit->need_gib),
                      ", \"memory_capacity_gib\": ",
                      config::FormatJsonDouble(v.does_not_fit->capacity_gib),
                      ", \"does_not_fit\": ",
                      config::QuoteJsonString(v.does_not_fit->message));
    }
    if (v.changes_training) {
      absl::StrAppend(&out, ", \"changes_training\": true");
    }
    for (const std::string& n : names) {
      absl::StrAppend(&out, ", \"", n, "\": ",
                      config::FormatJsonDouble(*MetricValue(v.metrics, n)));
    }
    for (const auto& [n, value] : CostFigures(v)) {
      // The interval and the async flag are counts, written as such.
      const bool count = value == std::floor(value) && std::abs(value) < 1e9;
      absl::StrAppend(&out, ", \"", n, "\": ",
                      count ? absl::StrCat(static_cast<int64_t>(value))
                            : config::FormatJsonDouble(value));
    }
    absl::StrAppend(&out, "}");
  }
  absl::StrAppend(&out, "\n  ]\n}\n");
  return out;
}

std::string FormatCsv(const ScenarioResult& r) {
  std::string out;
  std::vector<std::string> header;
  if (!r.variants.empty()) {
    for (const auto& [k, v] : r.variants[0].settings) header.push_back(k);
  }
  for (const std::string& n : MetricNames()) header.push_back(n);
  // Every fitting variant has the checkpoint figures or none does.
  const size_t figures =
      r.fastest < 0 ? 0 : CostFigures(r.variants[r.fastest]).size();
  if (figures > 0) {
    for (const auto& [n, v] : CostFigures(r.variants[r.fastest])) {
      header.push_back(n);
    }
  }
  header.push_back("baseline");
  header.push_back("fits");
  header.push_back("memory_capacity_gib");  // set when it does not fit
  absl::StrAppend(&out, absl::StrJoin(header, ","), "\n");
  for (size_t i = 0; i < r.variants.size(); ++i) {
    std::vector<std::string> row;
    for (const auto& [k, v] : r.variants[i].settings) row.push_back(v);
    for (const std::string& n : MetricNames()) {
      row.push_back(
          absl::StrFormat("%.6g", *MetricValue(r.variants[i].metrics, n)));
    }
    for (const auto& [n, v] : CostFigures(r.variants[i])) {
      row.push_back(absl::StrFormat("%.6g", v));
    }
    if (r.variants[i].does_not_fit) row.resize(row.size() + figures);
    row.push_back(static_cast<int>(i) == r.baseline ? "1" : "0");
    const std::optional<DoesNotFit>& f = r.variants[i].does_not_fit;
    row.push_back(f.has_value() ? "0" : "1");
    row.push_back(f.has_value() ? absl::StrFormat("%.6g", f->capacity_gib)
                                : std::string());
    absl::StrAppend(&out, absl::StrJoin(row, ","), "\n");
  }
  return out;
}

}  // namespace whatif
}  // namespace zero3
