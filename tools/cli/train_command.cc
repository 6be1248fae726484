// Copyright 2026 The zero3 Authors.

#include "tools/cli/train_command.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "backends/cuda/cuda_rank.h"
#include "core/config/config_loader.h"
#include "core/engine/config_options.h"
#include "core/engine/engine.h"
#include "core/model/data.h"
#include "core/model/presets.h"
#include "core/runtime/op_timing.h"
#include "core/runtime/pinned_memory.h"
#include "core/util/status_macros.h"
#include "core/zero/sync_points.h"
#include "sim/profiles.h"
#include "sim/simulator.h"
#include "sim/trace.h"
#include "testing/equivalence.h"
#include "testing/testdata/text/corpus.h"
#include "tools/cli/internal/op_profile.h"
#include "tools/whatif/whatif.h"

namespace zero3 {
namespace cli {
namespace {

using runtime::FormatBytes;

// Tolerances of --check-reference (the equivalence tests state why).
constexpr double kFp32Tolerance = 1e-5;
constexpr double kLowPrecisionTolerance = 2e-2;

std::string Ms(int64_t ns) { return absl::StrFormat("%.3f ms", ns / 1e6); }

class TrainCommand : public Command {
 public:
  absl::string_view name() const override { return "train"; }

  absl::string_view summary() const override {
    return "train a model with ZeRO-3 (by default: the tiny model on 2 "
           "simulated ranks with CPU optimizer offload)";
  }

  absl::string_view description() const override {
    return "Trains a decoder-only transformer with ZeRO stage 3 on the "
           "chosen backend. Each step prints the loss (averaged over ranks), "
           "the FWD, BWD and STEP times (virtual time on the simulator) and "
           "tokens/s; the run ends with pinned host memory, device memory "
           "and, on the simulator, every race the race detector found. The "
           "exit status is 1 if it found any, or if --check-reference finds "
           "a difference above tolerance (1e-5 in fp32, 2e-2 in bf16/fp16). "
           "Without --config, the configuration is zero3's defaults (which "
           "are DeepSpeed's) with zero_optimization.offload_optimizer.device "
           "= cpu and a micro-batch of 4.";
  }

  void DefineFlags(FlagSet& flags) override {
    flags.AddString("backend", &backend_, "NAME",
                    "sim (the simulated device) or cuda (GPUs)");
    flags.AddString(
        "model", &model_, "NAME|FILE",
        absl::StrCat("a preset (", absl::StrJoin(model::PresetNames(), ", "),
                     ") or a text-format ModelSpec file"));
    flags.AddString("config", &config_, "FILE",
                    "a DeepSpeed JSON or zero3 text-format configuration");
    flags.AddRepeated("set", &overrides_, "KEY=VALUE",
                      "override a configuration key (DeepSpeed's dotted "
                      "names), e.g. zero3.grad_offload=blocking");
    flags.AddInt("ranks", &ranks_, "N", "data-parallel ranks (simulated)");
    flags.AddInt("steps", &steps_, "N", "optimizer steps");
    flags.AddInt("seq", &seq_, "N", "tokens per sequence");
    flags.AddString("data", &data_, "corpus|synthetic|FILE",
                    "training text: the built-in corpus, seeded random "
                    "tokens, or a text file read as bytes");
    flags.AddInt("seed", &seed_, "N", "seed for initialization and data");
    flags.AddString("hardware", &hardware_, "NAME|FILE",
                    absl::StrCat("simulator hardware profile (",
                                 absl::StrJoin(sim::ProfileNames(), ", "),
                                 ") or a profile file"));
    flags.AddString("mode", &mode_, "data|timing",
                    "simulator mode: data computes real values; timing only "
                    "costs them (any model size)");
    flags.AddString("trace", &trace_, "FILE",
                    "write a Chrome trace (Perfetto, chrome://tracing)");
    flags.AddBool("check-reference", &check_reference_,
                  "also train the unsharded reference and compare every step");
    flags.AddRepeated("drop-sync", &drop_sync_, "NAME",
                      "remove one of the engine's synchronizations to see "
                      "what it protects; 'list' lists them");
    flags.AddBool("strict", &strict_,
                  "race detection treats pageable copies as asynchronous");
    flags.AddDouble("jitter", &jitter_, "X",
                    "perturb every simulated cost by up to +-X (e.g. 0.1)");
    flags.AddBool("symmetric", &symmetric_,
                  "timing mode: simulate rank 0 only (ranks are symmetric)");
    flags.AddBool("profile-ops", &profile_ops_,
                  "cuda: time every device operation of steps 2..N with "
                  "events and print device time per kind of operation (with "
                  "--predict, beside the simulator's); with --trace, write "
                  "them as a Chrome trace");
    flags.AddBool("predict", &predict_,
                  "cuda: also simulate the same configuration on --hardware "
                  "and print predicted beside measured FWD/BWD/STEP");
  }

  int Run(const std::vector<std::string>& positional, std::ostream& out,
          std::ostream& err) override {
    if (std::find(drop_sync_.begin(), drop_sync_.end(), "list") !=
        drop_sync_.end()) {
      for (zero::Sync s : zero::AllSyncs()) {
        out << absl::StrFormat("%-30s %s\n", zero::SyncName(s),
                               zero::SyncDescription(s));
      }
      return kExitOk;
    }
    absl::Status status = Train(out, err);
    if (!status.ok()) {
      err << "error: " << status.message() << "\n";
      return status.code() == absl::StatusCode::kInvalidArgument ||
                     status.code() == absl::StatusCode::kNotFound
                 ? kExitUsage
                 : kExitFailure;
    }
    return exit_code_;
  }

 private:
  // Per-step results, gathered from the ranks as they finish each step.
  struct StepRow {
    double loss_sum = 0;
    int ranks = 0;
    engine::StepStats rank0;
    int64_t total_ns = 0;
    std::vector<std::vector<std::vector<float>>> shards;  // [rank][param]
  };

  absl::Status Train(std::ostream& out, std::ostream& err);
  // After a GPU run, on rank 0: --predict and --check-reference.
  absl::Status CheckGpuRun(const model::ModelSpec& spec,
                           const zero::ZeroOptions& options,
                           const model::BatchSource& data,
                           const sim::HardwareProfile& profile,
                           const std::vector<StepRow>& rows, std::ostream& out);

  std::string backend_ = "sim";
  std::string model_ = "tiny";
  std::string config_;
  std::vector<std::string> overrides_;
  int64_t ranks_ = 2;
  int64_t steps_ = 100;
  int64_t seq_ = 64;
  std::string data_ = "corpus";
  int64_t seed_ = 0;
  std::string hardware_ = "h200_sxm";
  std::string mode_ = "data";
  std::string trace_;
  bool check_reference_ = false;
  std::vector<std::string> drop_sync_;
  bool strict_ = false;
  double jitter_ = 0;
  bool symmetric_ = false;
  bool predict_ = false;
  bool profile_ops_ = false;
  // Rank 0's timed operations of steps 2..N (--profile-ops).
  std::vector<runtime::OpTiming> op_timings_;
  int exit_code_ = kExitOk;
};

absl::Status TrainCommand::Train(std::ostream& out, std::ostream& err) {
  const bool gpu = backend_ == "cuda";
  if (gpu && !cuda::CudaBackendBuilt()) {
    return absl::UnimplementedError(
        "this zero3 was built without the CUDA toolkit; use --backend sim, "
        "or build on a machine with /usr/local/cuda (docs/gpu.md)");
  }
  if (!gpu && predict_) {
    return absl::InvalidArgumentError(
        "--predict compares a GPU run with the simulator: it needs --backend "
        "cuda");
  }
  if (!gpu && profile_ops_) {
    return absl::InvalidArgumentError(
        "--profile-ops times operations on GPUs: it needs --backend cuda (on "
        "the simulator, --trace shows every operation)");
  }
  if (gpu && !trace_.empty() && !profile_ops_) {
    return absl::InvalidArgumentError(
        "--trace with --backend cuda writes the timed operations: add "
        "--profile-ops");
  }
  int gpu_rank = 0;
  if (gpu) {
    absl::StatusOr<cuda::RankEnvironment> env =
        cuda::ReadRankEnvironment(cuda::ProcessEnv());
    if (!env.ok()) return env.status();
    ranks_ = env->world_size;
    gpu_rank = env->rank;
  }
  if (backend_ != "sim" && !gpu) {
    return absl::InvalidArgumentError(
        absl::StrCat("--backend must be sim or cuda, got '", backend_, "'"));
  }
  if (mode_ != "data" && mode_ != "timing") {
    return absl::InvalidArgumentError(
        absl::StrCat("--mode must be data or timing, got '", mode_, "'"));
  }
  const bool data_mode = mode_ == "data";
  if (ranks_ < 1 || steps_ < 1) {
    return absl::InvalidArgumentError("--ranks and --steps must be at least 1");
  }
  if (check_reference_ && !data_mode) {
    return absl::InvalidArgumentError(
        "--check-reference compares values: it needs --mode data");
  }
  if (symmetric_ && data_mode) {
    return absl::InvalidArgumentError("--symmetric needs --mode timing");
  }

  // Configuration.
  config::LoadOptions load;
  load.world_size = ranks_;
  absl::StatusOr<config::LoadedConfig> loaded;
  if (config_.empty()) {
    load.overrides = {"zero_optimization.stage=3",
                      "zero_optimization.offload_optimizer.device=cpu",
                      "train_micro_batch_size_per_gpu=4"};
    load.overrides.insert(load.overrides.end(), overrides_.begin(),
                          overrides_.end());
    loaded = config::DefaultConfig(load);
  } else {
    load.overrides = overrides_;
    loaded = config::LoadConfigFile(ResolveUserPath(config_), load);
  }
  if (!loaded.ok()) return loaded.status();
  for (const std::string& n : loaded->notices) err << "notice: " << n << "\n";
  absl::StatusOr<zero::ZeroOptions> options = engine::OptionsFromConfig(
      loaded->config, seq_, static_cast<uint64_t>(seed_));
  if (!options.ok()) return options.status();
  for (const std::string& name : drop_sync_) {
    absl::StatusOr<zero::Sync> s = zero::ParseSync(name);
    if (!s.ok()) return s.status();
    options->syncs.Drop(*s);
    err << "notice: dropping synchronization " << name << " ("
        << zero::SyncDescription(*s) << ")\n";
  }

  // Model, data, hardware.
  // A name that is not a preset (or profile) is a file.
  const std::vector<std::string> presets = model::PresetNames();
  const bool preset =
      std::find(presets.begin(), presets.end(), model_) != presets.end();
  absl::StatusOr<model::ModelSpec> spec =
      model::LoadModelSpec(preset ? model_ : ResolveUserPath(model_));
  if (!spec.ok()) return spec.status();
  std::unique_ptr<model::BatchSource> data;
  if (data_ == "synthetic") {
    data = model::SyntheticBatches(spec->vocab_size(),
                                   static_cast<uint64_t>(seed_));
  } else {
    absl::StatusOr<std::unique_ptr<model::BatchSource>> text =
        data_ == "corpus"
            ? model::TextBatchesFromBytes(
                  "built-in corpus",
                  std::string(testdata::kCorpus, testdata::kCorpusSize), seq_,
                  static_cast<uint64_t>(seed_))
            : model::TextBatches(ResolveUserPath(data_), seq_,
                                 static_cast<uint64_t>(seed_));
    if (!text.ok()) return text.status();
    data = std::move(*text);
  }
  const std::vector<std::string> profiles = sim::ProfileNames();
  const bool named =
      std::find(profiles.begin(), profiles.end(), hardware_) != profiles.end();
  absl::StatusOr<sim::HardwareProfile> profile =
      sim::LoadProfile(named ? hardware_ : ResolveUserPath(hardware_));
  if (!profile.ok()) return profile.status();

  sim::SimOptions so;
  so.profile = *profile;
  so.world_size = static_cast<int>(ranks_);
  so.mode = data_mode ? sim::SimMode::kData : sim::SimMode::kTiming;
  so.strict = strict_;
  so.jitter = jitter_;
  so.seed = static_cast<uint64_t>(seed_);
  so.trace = !trace_.empty();
  so.symmetric = symmetric_;
  std::unique_ptr<sim::SimWorld> world;
  if (!gpu) {
    absl::StatusOr<std::unique_ptr<sim::SimWorld>> created =
        sim::SimWorld::Create(so);
    if (!created.ok()) return created.status();
    world = std::move(*created);
  }
  // Ranks whose results this process sees: every simulated rank, or this
  // process's one GPU.
  const int simulated = gpu ? 1 : world->simulated_ranks();
  const bool leader = !gpu || gpu_rank == 0;

  const double params = static_cast<double>(model::ParameterCount(*spec));
  if (leader)
    out << absl::StrFormat(
        "zero3 train: model %s (%.3g M parameters), %d ranks, %s on %s (%s), "
        "micro-batch %d x %d tokens, accumulation %d, %s, optimizer %s\n",
        spec->name(), params / 1e6, ranks_, "ZeRO-3",
        gpu ? std::string("GPUs") : profile->name(),
        gpu ? std::string("cuda") : mode_, options->micro_batch, options->seq,
        options->accumulation, kernels::DTypeName(options->dtype),
        options->offload_optimizer
            ? absl::StrCat(
                  "on the host (",
                  options->optimizer_pin_memory ? "pinned" : "pageable", ", ",
                  options->grad_offload == zero::GradOffload::kAsync
                      ? "async"
                      : "blocking",
                  " gradient offload)")
            : std::string("on the device"));
  out.flush();

  std::vector<StepRow> rows(steps_);
  for (StepRow& r : rows) r.shards.resize(simulated);
  std::vector<int> param_count(1, 0);
  std::vector<std::string> param_names;
  runtime::PinnedMemoryStats pinned0;
  runtime::MemoryStats device0;
  int64_t activation_bytes = 0;

  const runtime::RankFunction rank_fn =
      [&](runtime::Runtime& rt) -> absl::Status {
    const int local = gpu ? 0 : rt.rank();
    absl::StatusOr<std::unique_ptr<engine::Engine>> e =
        engine::Engine::Create(*spec, *options, data.get(), rt);
    if (!e.ok()) return e.status();
    if (rt.rank() == 0) {
      out << "start-up: " << rt.pinned_memory().Summary() << " (rank 0); "
          << "device memory "
          << FormatBytes(rt.device().memory_stats().bytes_in_use)
          << " in use\n";
      param_count[0] = (*e)->layout().num_params();
      for (const model::ParamInfo& p : (*e)->model().params()) {
        param_names.push_back(p.name);
      }
      activation_bytes = (*e)->model().activation_bytes();
    }
    if (profile_ops_) ZR_RETURN_IF_ERROR(cuda::StartOpTiming(rt));
    for (int64_t s = 0; s < steps_; ++s) {
      absl::StatusOr<engine::StepStats> stats = (*e)->Step();
      if (!stats.ok()) return stats.status();
      if (profile_ops_ && (s == 0 || s == steps_ - 1)) {
        // Step 1 records the module order and warms the allocator; its
        // operations are dropped.
        absl::StatusOr<std::vector<runtime::OpTiming>> ops =
            cuda::TakeOpTimings(rt);
        if (!ops.ok()) return ops.status();
        if (s > 0 && rt.rank() == 0) op_timings_ = std::move(*ops);
      }
      StepRow& row = rows[s];
      if (check_reference_) {
        for (int p = 0; p < (*e)->layout().num_params(); ++p) {
          absl::StatusOr<std::vector<float>> shard = (*e)->MasterParam(p);
          if (!shard.ok()) return shard.status();
          row.shards[local].push_back(std::move(*shard));
        }
      }
      row.loss_sum += stats->loss;
      row.total_ns = std::max(row.total_ns, stats->total_ns);
      if (rt.rank() == 0) row.rank0 = *stats;
      // The rank that completes the row prints it (on GPUs, each process
      // sees its own rank only; rank 0 prints).
      if (++row.ranks == simulated && (!gpu || rt.rank() == 0)) {
        const engine::StepStats& r0 = row.rank0;
        const double tokens = static_cast<double>(r0.global_tokens);
        out << absl::StrFormat(
            "step %*d/%d  loss %s  FWD %s  BWD %s  STEP %s  "
            "total %s  %.0f tokens/s%s\n",
            static_cast<int>(std::to_string(steps_).size()), s + 1, steps_,
            data_mode || gpu ? absl::StrFormat("%.4f", row.loss_sum / simulated)
                             : std::string("-"),
            Ms(r0.fwd_ns), Ms(r0.bwd_ns), Ms(r0.step_ns), Ms(row.total_ns),
            tokens / (row.total_ns / 1e9),
            r0.skipped ? absl::StrCat("  [", r0.skip_reason, "]")
                       : std::string());
        out.flush();
      }
    }
    if (rt.rank() == 0) {
      pinned0 = rt.pinned_memory().stats();
      device0 = rt.device().memory_stats();
    }
    return absl::OkStatus();
  };
  if (gpu) {
    cuda::CudaRankOptions cuda_options;
    cuda_options.log = &err;
    ZR_RETURN_IF_ERROR(cuda::RunCudaRank(cuda_options, rank_fn));
    if (!leader) return absl::OkStatus();
  } else {
    ZR_RETURN_IF_ERROR(world->Run(rank_fn));
  }

  out << "end: pinned host memory " << FormatBytes(pinned0.bytes_in_use)
      << " in use, peak " << FormatBytes(pinned0.peak_bytes) << " in "
      << pinned0.allocations << " allocations; device memory peak "
      << FormatBytes(device0.peak_bytes_in_use) << " (activations "
      << FormatBytes(activation_bytes) << ") (rank 0)\n";
  if (gpu) return CheckGpuRun(*spec, *options, *data, *profile, rows, out);
  if (!trace_.empty()) {
    const std::string path = ResolveUserPath(trace_);
    absl::Status written = world->trace().WriteFile(path);
    if (!written.ok()) return written;
    out << "trace written to " << path << "\n";
  }
  const std::vector<sim::RaceReport> races = world->races();
  out << "race detector: " << races.size()
      << (races.size() == 1 ? " race" : " races") << " found\n";
  for (const sim::RaceReport& r : races) out << "  " << r.message << "\n";
  if (!races.empty()) exit_code_ = kExitFailure;

  if (check_reference_) {
    std::vector<std::vector<std::vector<float>>> by_step;
    absl::StatusOr<testing::RunResult> ref = testing::RunReference(
        *spec, *options, static_cast<int>(ranks_), static_cast<int>(steps_),
        *data, *profile, &by_step);
    if (!ref.ok()) return ref.status();
    const double tolerance = options->dtype == kernels::DType::kF32
                                 ? kFp32Tolerance
                                 : kLowPrecisionTolerance;
    double worst = 0;
    for (int64_t s = 0; s < steps_; ++s) {
      std::vector<std::vector<float>> full(param_count[0]);
      for (int p = 0; p < param_count[0]; ++p) {
        for (int r = 0; r < simulated; ++r) {
          const std::vector<float>& shard = rows[s].shards[r][p];
          full[p].insert(full[p].end(), shard.begin(), shard.end());
        }
      }
      int worst_param = -1;
      const double dp =
          testing::ParamDifference(full, by_step[s], &worst_param);
      const double loss = rows[s].loss_sum / simulated;
      const double dl = std::abs(loss - ref->losses[s]) /
                        std::max(std::abs(ref->losses[s]), 1e-30);
      worst = std::max({worst, dp, dl});
      out << absl::StrFormat(
          "check step %d: loss %.6f vs reference %.6f (relative difference "
          "%.2e); parameters max relative difference %.2e%s\n",
          s + 1, loss, ref->losses[s], dl, dp,
          worst_param >= 0 && dp > 0
              ? absl::StrCat(" (", param_names[worst_param], ")")
              : std::string());
    }
    const bool ok = worst <= tolerance;
    out << absl::StrFormat(
        "check-reference: largest relative difference %.2e, tolerance %.0e: "
        "%s\n",
        worst, tolerance, ok ? "OK" : "ABOVE TOLERANCE");
    if (!ok) exit_code_ = kExitFailure;
  }
  return absl::OkStatus();
}

absl::Status TrainCommand::CheckGpuRun(const model::ModelSpec& spec,
                                       const zero::ZeroOptions& options,
                                       const model::BatchSource& data,
                                       const sim::HardwareProfile& profile,
                                       const std::vector<StepRow>& rows,
                                       std::ostream& out) {
  std::vector<runtime::OpTiming> predicted_ops;
  if (predict_) {
    whatif::StepInput in;
    in.profile = profile;
    in.spec = spec;
    in.options = options;
    in.gpus = static_cast<int>(ranks_);
    in.steps = 3;
    in.op_timings = profile_ops_;
    absl::StatusOr<whatif::VariantResult> predicted = whatif::SimulateStep(in);
    if (!predicted.ok()) return predicted.status();
    predicted_ops = std::move(predicted->ops);
    // Measured: the median over the steps after the first (which records the
    // module order and warms the allocator).
    auto median = [&](int64_t engine::StepStats::*field) {
      std::vector<double> v;
      for (size_t s = rows.size() > 1 ? 1 : 0; s < rows.size(); ++s) {
        v.push_back(rows[s].rank0.*field / 1e6);
      }
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const whatif::Metrics& m = predicted->metrics;
    const double measured[] = {median(&engine::StepStats::fwd_ns),
                               median(&engine::StepStats::bwd_ns),
                               median(&engine::StepStats::step_ns),
                               median(&engine::StepStats::total_ns)};
    const double simulated[] = {m.fwd_ms, m.bwd_ms, m.step_ms, m.total_ms};
    const char* names[] = {"FWD", "BWD", "STEP", "total"};
    out << absl::StrFormat(
        "prediction on %s (median of measured steps 2..%d):\n", profile.name(),
        rows.size());
    out << absl::StrFormat("  %-6s %12s %12s %9s\n", "phase", "measured ms",
                           "predicted ms", "error");
    for (int i = 0; i < 4; ++i) {
      out << absl::StrFormat(
          "  %-6s %12.2f %12.2f %+8.1f%%\n", names[i], measured[i],
          simulated[i], 100.0 * (simulated[i] - measured[i]) / measured[i]);
    }
  }
  if (profile_ops_ && steps_ > 1) {
    const int measured_steps = static_cast<int>(steps_ - 1);
    out << absl::StrFormat(
        "device time by operation, per step (rank 0, steps 2..%d)%s:\n", steps_,
        predict_ ? ", beside the prediction" : "");
    out << internal::FormatOpComparison(
        internal::GroupOps(op_timings_, measured_steps),
        internal::GroupOps(predicted_ops, 1), 30);
    if (!trace_.empty()) {
      sim::Trace trace;
      trace.NameProcess(0, "rank 0 (GPU, measured)");
      std::vector<std::string> streams;
      for (const runtime::OpTiming& op : op_timings_) {
        auto it = std::find(streams.begin(), streams.end(), op.stream);
        const int tid = static_cast<int>(it - streams.begin());
        if (it == streams.end()) {
          streams.push_back(op.stream);
          trace.NameTrack(0, tid, absl::StrCat("stream: ", op.stream));
        }
        trace.AddSpan(0, tid, op.label, op.start_ns, op.end_ns);
      }
      const std::string path = ResolveUserPath(trace_);
      ZR_RETURN_IF_ERROR(trace.WriteFile(path));
      out << "trace of the timed operations written to " << path << "\n";
    }
  }
  if (check_reference_) {
    // The simulator's data mode on the same configuration and ranks: rank
    // 0's losses and final master shards against this GPU run's rank 0.
    sim::SimOptions so;
    so.profile = profile;
    so.world_size = static_cast<int>(ranks_);
    so.mode = sim::SimMode::kData;
    ZR_ASSIGN_OR_RETURN(auto world, sim::SimWorld::Create(so));
    std::vector<double> losses;
    std::vector<std::vector<float>> shards;
    ZR_RETURN_IF_ERROR(world->Run([&](runtime::Runtime& rt) -> absl::Status {
      ZR_ASSIGN_OR_RETURN(auto e,
                          engine::Engine::Create(spec, options, &data, rt));
      for (int64_t s = 0; s < steps_; ++s) {
        ZR_ASSIGN_OR_RETURN(engine::StepStats stats, e->Step());
        if (rt.rank() == 0) losses.push_back(stats.loss);
      }
      if (rt.rank() == 0) {
        for (int p = 0; p < e->layout().num_params(); ++p) {
          ZR_ASSIGN_OR_RETURN(std::vector<float> shard, e->MasterParam(p));
          shards.push_back(std::move(shard));
        }
      }
      return absl::OkStatus();
    }));
    const bool fp32 = options.dtype == kernels::DType::kF32;
    const double loss_tolerance = fp32 ? 1e-4 : kLowPrecisionTolerance;
    const double param_tolerance = fp32 ? 1e-3 : 1e-2;
    double worst_loss = 0;
    for (int64_t s = 0; s < steps_; ++s) {
      const double gpu_loss = rows[s].rank0.loss;
      const double d = std::abs(gpu_loss - losses[s]) / std::abs(losses[s]);
      worst_loss = std::max(worst_loss, d);
      out << absl::StrFormat(
          "check step %d: loss %.6f on the GPU, %.6f on the simulator "
          "(relative difference %.2e)\n",
          s + 1, gpu_loss, losses[s], d);
    }
    // Parameters, as one vector: ||gpu - sim|| / ||sim||.
    double diff = 0, norm = 0;
    const auto& gpu_shards = rows.back().shards[0];
    for (size_t p = 0; p < shards.size() && p < gpu_shards.size(); ++p) {
      for (size_t i = 0; i < shards[p].size() && i < gpu_shards[p].size();
           ++i) {
        const double d = static_cast<double>(gpu_shards[p][i]) - shards[p][i];
        diff += d * d;
        norm += static_cast<double>(shards[p][i]) * shards[p][i];
      }
    }
    const double param_diff = std::sqrt(diff / std::max(norm, 1e-30));
    const bool ok =
        worst_loss <= loss_tolerance && param_diff <= param_tolerance;
    out << absl::StrFormat(
        "check against the simulator: loss within %.2e (tolerance %.0e), "
        "parameters within %.2e (tolerance %.0e, ||gpu - sim|| / ||sim|| of "
        "rank 0's shards): %s\n",
        worst_loss, loss_tolerance, param_diff, param_tolerance,
        ok ? "OK" : "ABOVE TOLERANCE");
    if (!ok) exit_code_ = kExitFailure;
  }
  return absl::OkStatus();
}

}  // namespace

std::unique_ptr<Command> NewTrainCommand() {
  return std::make_unique<TrainCommand>();
}

}  // namespace cli
}  // namespace zero3
