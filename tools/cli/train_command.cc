// Copyright 2026 The zero3 Authors.

#include "tools/cli/train_command.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/config/config_loader.h"
#include "core/config/modes.h"
#include "core/engine/checkpoint.h"
#include "core/engine/config_options.h"
#include "core/engine/engine.h"
#include "core/model/data.h"
#include "core/model/presets.h"
#include "core/model/transformer.h"
#include "core/runtime/launcher.h"
#include "core/runtime/op_timing.h"
#include "core/runtime/pinned_memory.h"
#include "core/util/median.h"
#include "core/util/status_macros.h"
#include "core/zero/sync_points.h"
#include "core/zero/sync_relevance.h"
#include "reference/runs.h"
#include "sim/host_share.h"
#include "sim/profiles.h"
#include "sim/simulator.h"
#include "sim/trace.h"
#include "tools/calibrate/host_adam_rate.h"
#include "tools/cli/flag_limits.h"
#include "tools/cli/internal/auto_flags.h"
#include "tools/cli/internal/checkpoint_flags.h"
#include "tools/cli/internal/correctness_flags.h"
#include "tools/cli/internal/data_flags.h"
#include "tools/cli/internal/gpu_flags.h"
#include "tools/cli/internal/interrupt.h"
#include "tools/cli/internal/launcher_factory.h"
#include "tools/cli/internal/memory_plan.h"
#include "tools/cli/internal/metrics/csv_monitor_sink.h"
#include "tools/cli/internal/metrics/deepspeed_events.h"
#include "tools/cli/internal/metrics/metrics_sinks.h"
#include "tools/cli/internal/metrics/model_flops.h"
#include "tools/cli/internal/metrics/output_file.h"
#include "tools/cli/internal/model_loader.h"
#include "tools/cli/internal/op_profile.h"
#include "tools/cli/internal/output_flags.h"
#include "tools/cli/internal/output_path.h"
#include "tools/cli/internal/path_clash.h"
#include "tools/cli/internal/run_flags.h"
#include "tools/cli/internal/simulator_flags.h"
#include "tools/cli/internal/step_bound.h"
#include "tools/preflight/memory_check.h"
#include "tools/whatif/whatif.h"

namespace zero3 {
namespace cli {
namespace {

using runtime::FormatBytes;

// Tolerances of --check-reference (the equivalence tests state why).
constexpr double kFp32Tolerance = 1e-5;
constexpr double kFp32ChunkedHeadTolerance = 1e-4;
constexpr double kLowPrecisionTolerance = 2e-2;
// The LM head chunk --gradient-checkpointing sets.
constexpr int64_t kCheckpointingHeadChunk = 4096;
// Timing mode simulates rank 0 only by default above this many ranks.

std::string Ms(int64_t ns) { return absl::StrFormat("%.3f ms", ns / 1e6); }

// A wall-clock span as people say it: "42s", "3m 05s", "2h 10m".
std::string WallTime(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrFormat("%dm %02ds", s / 60, s % 60);
  return absl::StrFormat("%dh %02dm", s / 3600, (s % 3600) / 60);
}

// --gradient-checkpointing without zero3.lm_head_chunk_tokens (no --set, 0 in
// the configuration): the LM head on
// chunks of kCheckpointingHeadChunk tokens where that makes the activation
// arena smaller (the chunked head's fp32 weight-gradient sum can outweigh
// the logits of a small micro-batch), with a notice.
absl::Status ChunkHeadWhereSmaller(const model::ModelSpec& spec,
                                   zero::ZeroOptions& o,
                                   config::Config& resolved,
                                   std::ostream& err) {
  model::Checkpointing c;
  c.every = o.checkpoint_every;
  c.mlp_only = o.checkpoint_mlp_only;
  c.to_host = o.checkpoint_to_host;
  int64_t bytes[2];
  for (int chunked : {0, 1}) {
    c.lm_head_chunk_tokens = chunked ? kCheckpointingHeadChunk : 0;
    ZR_ASSIGN_OR_RETURN(bytes[chunked], model::Transformer::ActivationBytes(
                                            spec, o.dtype, o.micro_batch, o.seq,
                                            o.tensor_parallel, c));
  }
  if (bytes[1] >= bytes[0]) return absl::OkStatus();
  o.lm_head_chunk_tokens = kCheckpointingHeadChunk;
  resolved.mutable_zero3()->set_lm_head_chunk_tokens(kCheckpointingHeadChunk);
  err << "notice: --gradient-checkpointing also runs the LM head on chunks of "
      << kCheckpointingHeadChunk
      << " tokens, their logits computed again in backward: "
      << FormatBytes(bytes[0] - bytes[1])
      << " less activation memory (zero3.lm_head_chunk_tokens; 0 keeps the "
         "whole logits)\n";
  return absl::OkStatus();
}

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
    flags_ = &flags;
    run_.Define(flags);
    auto_flags_.Define(flags);
    flags.Section("Data");
    data_flags_.Define(flags);
    flags.Section("Outputs and checkpoints");
    outputs_.Define(flags);
    checkpoints_.Define(flags);
    outputs_.DefineDryRun(flags);
    flags.Section("Checks");
    checks_.Define(flags);
    flags.Section(
        "Simulator (--backend sim; --hardware also for --predict and the "
        "memory check)");
    sim_flags_.Define(flags);
    flags.Section("GPUs (--backend cuda)");
    gpu_flags_.Define(flags);
  }

  int Run(const std::vector<std::string>& positional, std::ostream& out,
          std::ostream& err) override {
    if (checks_.listing_syncs()) {
      internal::CorrectnessFlags::PrintSyncs(out);
      return kExitOk;
    }
    absl::Status status = Train(out, err);
    if (!status.ok()) {
      err << "error: " << status.message() << "\n";
      return status.code() == absl::StatusCode::kInvalidArgument ||
                     status.code() == absl::StatusCode::kNotFound ||
                     status.code() == absl::StatusCode::kResourceExhausted
                 ? kExitUsage
                 : kExitFailure;
    }
    if (stopped_by_ != 0) {
      out.flush();
      err.flush();
      return stop_->ExitBySignal();
    }
    return exit_code_;
  }

 private:
  // What a run needs before its ranks start.
  struct Inputs {
    zero::ZeroOptions options;
    config::Config config;  // resolved, with --set applied
    model::ModelSpec spec;
    // The checkpoint's weights; null for the seeded initialization.
    std::shared_ptr<const model::ParamSource> weights;
    std::unique_ptr<model::BatchSource> data;
    // --eval-data and how much of it an evaluation runs; null without.
    std::unique_ptr<model::BatchSource> eval_data;
    internal::EvalPlan eval;
    sim::HardwareProfile profile;
    // --resume's checkpoint, checked; nullopt without --resume.
    std::optional<internal::ResumePoint> resume;
    // The memory preflight: the estimate, what is available, the budget.
    internal::MemoryPlan memory;
    // zero3.offloaded_step "auto": the share it chose, said in a line.
    std::string offloaded_step;
  };

  // Per-step results, gathered from the ranks as they finish each step.
  struct StepRow {
    double loss_sum = 0;
    int ranks = 0;
    engine::StepStats rank0;
    int64_t total_ns = 0;
    int64_t pinned_host_bytes = 0;  // rank 0's, after the step
    runtime::MemoryStats device;    // rank 0's, after the step
    std::vector<std::vector<std::vector<float>>> shards;  // [rank][param]
    std::optional<engine::EvalStats> eval;  // after the step, where due
  };

  // What the ranks this process runs leave behind (rank 0's figures where
  // it runs rank 0).
  struct Results {
    // [step] where every row is kept (--check-reference, --predict); else
    // a ring of the last few, each cleared once printed (ranks are at most
    // a step apart: each step's collectives need all of them).
    std::vector<StepRow> rows;
    bool keep_all = true;
    StepRow& row(int64_t step) {
      return rows[keep_all ? step : step % static_cast<int64_t>(rows.size())];
    }
    int num_params = 0;
    std::vector<std::string> param_names;
    int64_t activation_bytes = 0;
    runtime::PinnedMemoryStats pinned;
    runtime::MemoryStats device;
    // Rank 0's timed operations of steps 2..N (--profile-ops).
    std::vector<runtime::OpTiming> op_timings;
    // The run as a whole, for the progress and the closing summary.
    struct Progress {
      absl::Time start = absl::Now();  // wall clock
      int64_t first = -1;              // the first step this run took
      int64_t done = 0;                // rows completed
      double tokens = 0, ns = 0;       // after the first step
      double last_loss = 0;
    } progress;
  };

  // Train's stages, in order.
  absl::Status Train(std::ostream& out, std::ostream& err);
  absl::Status CheckFlags();
  absl::StatusOr<Inputs> LoadInputs(std::ostream& err) const;
  absl::StatusOr<internal::MemoryPlan> PlanMemory(const Inputs& in) const;
  absl::StatusOr<std::unique_ptr<runtime::Launcher>> MakeBackend(
      const Inputs& in, std::ostream& err) const;
  absl::Status OpenMetrics(const runtime::Launcher& launcher, const Inputs& in);
  absl::StatusOr<Results> RunRanks(runtime::Launcher& launcher,
                                   const Inputs& in, std::ostream& out,
                                   std::ostream& err) const;
  absl::Status Report(runtime::Launcher& launcher, const Inputs& in,
                      const Results& results, std::ostream& out);
  // The profile this run is predicted and bounded on: --hardware's, for
  // GPU runs with this process's host (its affinity, its share under
  // `zero3 launch`, or --predict-host-cores) and, where --hardware names a
  // shipped profile rather than one calibrated here, this process's host
  // AdamW rate (measured once, a fraction of a second).
  absl::StatusOr<sim::HardwareProfile> ProfileOfThisRun(const Inputs& in) const;
  // A step's lower bound on ProfileOfThisRun (internal/step_bound.h).
  absl::StatusOr<whatif::StepBound> EstimateBound(const Inputs& in) const;
  // The bound, and the share of it the steps after the first reached.
  void PrintBound(const Inputs& in, const Results& results,
                  std::ostream& out) const;
  // After a signal: the results and --steps cut to the steps done; the
  // exit status becomes 128 + the signal's number.
  void EndEarly(Results& results, std::ostream& err);

  // CheckFlags: --backend and the flags only one backend takes.
  absl::Status CheckBackendFlags();
  // The files the run reads, with their flags.
  std::vector<internal::FlagPath> InputPaths() const;
  // No output flag names an input or another output's file.
  absl::Status CheckNoClash() const;
  // LoadInputs: the configuration with --set and --drop-sync applied, and
  // the training data.
  absl::StatusOr<zero::ZeroOptions> LoadOptions(const model::ModelSpec& spec,
                                                std::ostream& err,
                                                config::Config* resolved) const;
  // --eval-data, and how many batches an evaluation runs (at most the
  // held-out data's samples).
  absl::Status LoadEvalData(Inputs& in) const;
  absl::StatusOr<std::unique_ptr<model::BatchSource>> LoadData(
      const model::ModelSpec& spec) const;
  // The default data (the built-in corpus, 256 byte tokens) does not fit a
  // checkpoint with a smaller vocabulary: seeded random tokens, with a
  // notice.
  void FitDefaultData(Inputs& in, std::ostream& err) const;
  // The run's first line, before its ranks start.
  void PrintHeader(const runtime::Launcher& launcher, const Inputs& in,
                   std::ostream& out) const;
  // RunRanks: one rank's steps, and one step's results.
  absl::Status RunRank(runtime::Launcher& launcher, const Inputs& in,
                       runtime::Runtime& rt, Results& results,
                       std::ostream& out, std::ostream& err) const;
  // --save after `steps_done` steps: publishes an asynchronous save whose
  // writes are done, and starts the save due now (after the one in flight).
  // `last`: the run's last step (earlier than --steps when a signal stops
  // it), whose save is waited for.
  absl::Status Checkpoint(const Inputs& in, engine::CheckpointSaver& saver,
                          int64_t steps_done, int64_t last,
                          runtime::Runtime& rt, std::ostream& out,
                          std::ostream& err) const;
  // A save's outcome: rank 0 says where it went; a failure ends the run or,
  // with zero3.checkpoint_on_failure "continue", is a warning.
  absl::Status Saved(const Inputs& in,
                     const absl::StatusOr<engine::SavedCheckpoint>& saved,
                     runtime::Runtime& rt, std::ostream& out,
                     std::ostream& err) const;
  // `eval`: the evaluation after the step, where one was due.
  absl::Status RecordStep(const runtime::Launcher& launcher,
                          engine::Engine& engine, runtime::Runtime& rt,
                          int64_t step, const engine::StepStats& stats,
                          const std::optional<engine::EvalStats>& eval,
                          Results& results, std::ostream& out) const;
  // The row's evaluation line, where it has one.
  void PrintEval(const StepRow& row, int64_t step, std::ostream& out) const;
  // A completed row: its metrics and, every steps_per_print, its line.
  // Step lines carry the elapsed wall time and an ETA after this long.
  static constexpr double kProgressAfterSeconds = 10;
  // "  [1m 12s elapsed, ETA 5m 3s]" once a run is long, else "".
  std::string ElapsedColumn(const Results::Progress& progress,
                            int64_t step) const;
  // The closing line: steps, wall time, mean tokens/s, final loss.
  void PrintSummary(const Results& results, std::ostream& out) const;
  absl::Status PrintRow(const StepRow& row, int64_t step,
                        const Results::Progress& progress,
                        const engine::Engine& engine,
                        const runtime::Runtime& rt, std::ostream& out) const;
  // The leader's metrics of a completed row (--metrics, csv_monitor,
  // tensorboard).
  absl::Status WriteMetrics(const StepRow& row, int64_t step,
                            bool has_loss) const;
  // Report: --predict (returning the predicted operations), --profile-ops,
  // and --check-reference on the simulator and on GPUs.
  absl::StatusOr<std::vector<runtime::OpTiming>> PrintPrediction(
      const Inputs& in, const Results& results, std::ostream& out) const;
  absl::Status PrintOpTimings(const Results& results,
                              const std::vector<runtime::OpTiming>& predicted,
                              std::ostream& out) const;
  absl::Status CheckAgainstReference(const runtime::Launcher& launcher,
                                     const Inputs& in, const Results& results,
                                     std::ostream& out);
  absl::Status CheckAgainstSimulator(const Inputs& in, const Results& results,
                                     std::ostream& out);
  // --backend cuda: the measured memory peaks beside the preflight's.
  void PrintMemoryAgainstEstimate(const Inputs& in, const Results& results,
                                  std::ostream& out) const;

  internal::RunFlags run_;
  // The run's ranks and steps: the flags', or a GPU job's world size
  // (CheckBackendFlags) and the steps taken when a signal ends it early.
  int64_t ranks_ = 2;
  int64_t steps_ = 100;
  internal::DataFlags data_flags_;
  const FlagSet* flags_ = nullptr;  // the parsed flags (for given())
  internal::SimulatorFlags sim_flags_;
  internal::GpuFlags gpu_flags_;
  internal::AutoFlags auto_flags_;
  internal::CheckpointFlags checkpoints_;
  internal::OutputFlags outputs_;
  internal::CorrectnessFlags checks_;
  int exit_code_ = kExitOk;
  // SIGINT, SIGTERM and SIGHUP while the ranks run (simulator only).
  std::unique_ptr<internal::StopOnSignal> stop_;
  int stopped_by_ = 0;  // the signal that ended the run early
  // Set by OpenMetrics: the sinks (the leader's; none elsewhere), the
  // console's cadence and what a step's MFU needs.
  std::unique_ptr<internal::metrics::MetricsSinks> sinks_;
  int64_t steps_per_print_ = 1;
  double flops_per_token_ = 0;
  double peak_tflops_ = 0;
  // The leader's estimate of a step's lower bound (EstimateBound).
  absl::StatusOr<whatif::StepBound> bound_ =
      absl::UnavailableError("not estimated");
  // ProfileOfThisRun's measurement of the host AdamW: GB/s on one thread
  // and on the rank's cores.
  mutable std::optional<std::pair<double, double>> host_adam_gbps_;
  int world_size_ = 1;
  int64_t samples_per_step_ = 0;
  bool speculative_ = false;  // metrics carry "speculation"
};

// Whether `name` is one of `names` (a preset's or shipped profile's).
bool IsNamed(const std::string& name, const std::vector<std::string>& names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// A preset's (or profile's) name as it is; anything else names a file.
std::string NameOrPath(const std::string& name,
                       const std::vector<std::string>& names) {
  return IsNamed(name, names) ? name : ResolveUserPath(name);
}

absl::Status TrainCommand::Train(std::ostream& out, std::ostream& err) {
  ZR_RETURN_IF_ERROR(CheckFlags());
  if (sim_flags_.symmetric_by_default()) {
    err << "notice: above " << internal::kSymmetricAbove
        << " ranks timing mode simulates rank 0 only (ranks are symmetric; "
           "--no-symmetric simulates every rank)\n";
  }
  ZR_ASSIGN_OR_RETURN(Inputs in, LoadInputs(err));
  ZR_ASSIGN_OR_RETURN(in.memory, PlanMemory(in));
  if (outputs_.dry_run()) {
    out << preflight::FormatEstimate(in.memory.estimate, in.memory.available,
                                     in.memory.shape);
    const absl::Status fits = in.memory.Check();
    out << (fits.ok() ? std::string("fits: the run can start")
                      : absl::StrCat("does not fit: ", fits.message()))
        << "\n";
    // A script can gate on it: 2 when the run would be refused.
    if (!fits.ok()) exit_code_ = kExitUsage;
    return absl::OkStatus();
  }
  ZR_RETURN_IF_ERROR(in.memory.Check());
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Launcher> launcher,
                      MakeBackend(in, err));
  ZR_RETURN_IF_ERROR(OpenMetrics(*launcher, in));
  if (launcher->leader()) bound_ = EstimateBound(in);
  PrintHeader(*launcher, in, out);
  // The simulated ranks of this process agree on a step to stop at; GPU
  // processes of one job, through a collective after each step (RunRank).
  stop_ = std::make_unique<internal::StopOnSignal>();
  ZR_ASSIGN_OR_RETURN(Results results, RunRanks(*launcher, in, out, err));
  if (stop_->stop_point() >= 0) EndEarly(results, err);
  if (!launcher->leader()) return absl::OkStatus();
  return Report(*launcher, in, results, out);
}

void TrainCommand::EndEarly(Results& results, std::ostream& err) {
  const int sig = stop_->signal();
  const int64_t point = stop_->stop_point();
  const int64_t done = point < 0 ? steps_ : std::min(point, steps_);
  err << "zero3 train: "
      << (sig == SIGINT    ? "SIGINT"
          : sig == SIGTERM ? "SIGTERM"
          : sig == SIGHUP  ? "SIGHUP"
                           : "another process of the job was signalled")
      << ": stopped after step " << done << " of " << steps_ << "\n";
  if (results.keep_all) results.rows.resize(done);
  steps_ = done;
  stopped_by_ = sig;
}

absl::Status TrainCommand::CheckFlags() {
  ZR_RETURN_IF_ERROR(CheckBackendFlags());
  ZR_RETURN_IF_ERROR(sim_flags_.Check(ranks_, flags_->given("symmetric")));
  const bool data_mode = sim_flags_.data_mode();
  ZR_RETURN_IF_ERROR(checks_.Check(data_mode));
  ZR_RETURN_IF_ERROR(outputs_.Check(ResolveUserPath));
  ZR_RETURN_IF_ERROR(data_flags_.Check(data_mode));
  ZR_RETURN_IF_ERROR(CheckNoClash());
  return checkpoints_.Check(data_mode,
                            gpu_flags_.predict() || gpu_flags_.profile_ops());
}

std::vector<internal::FlagPath> TrainCommand::InputPaths() const {
  using internal::FlagPath;
  std::vector<FlagPath> inputs = {{"--config", ResolveUserPath(run_.config())}};
  if (data_flags_.file()) {
    for (FlagPath& f :
         internal::DataFiles("--data", ResolveUserPath(data_flags_.data()))) {
      inputs.push_back(std::move(f));
    }
  }
  if (data_flags_.evaluating()) {
    for (FlagPath& f : internal::DataFiles(
             "--eval-data", ResolveUserPath(data_flags_.eval_data()))) {
      inputs.push_back(std::move(f));
    }
  }
  // A preset's name is no file.
  const std::string model = ResolveUserPath(run_.model());
  if (access(model.c_str(), F_OK) == 0) inputs.push_back({"--model", model});
  return inputs;
}

absl::Status TrainCommand::CheckNoClash() const {
  using internal::FlagPath;
  const std::vector<FlagPath> inputs = InputPaths();
  const FlagPath metrics{"--metrics", ResolveUserPath(outputs_.metrics())};
  const FlagPath trace{"--trace", ResolveUserPath(outputs_.trace())};
  const FlagPath save{"--save", ResolveUserPath(checkpoints_.save_dir())};
  ZR_RETURN_IF_ERROR(internal::CheckNoClash(inputs, {metrics, trace, save}));
  // --save may be the --resume directory (a run continued in place).
  return internal::CheckNoClash(
      {{"--resume", ResolveUserPath(checkpoints_.resume_path())}},
      {metrics, trace});
}

// On GPUs the job's ranks are those of the launcher's environment
// (rank_env.h), not --ranks.
absl::Status TrainCommand::CheckBackendFlags() {
  ZR_RETURN_IF_ERROR(run_.Check());
  ranks_ = run_.ranks();
  steps_ = run_.steps();
  const bool gpu = run_.gpu();
  if (gpu && !internal::GpuBackendBuilt()) {
    return absl::UnimplementedError(
        "this zero3 was built without the CUDA toolkit; use --backend sim, "
        "or build on a machine with /usr/local/cuda (docs/gpu.md)");
  }
  ZR_RETURN_IF_ERROR(gpu_flags_.Check(gpu, outputs_.tracing()));
  if (gpu) {
    ZR_ASSIGN_OR_RETURN(internal::RankEnvironment env,
                        internal::ReadRankEnvironment(internal::ProcessEnv()));
    ranks_ = env.world_size;
  }
  return absl::OkStatus();
}

absl::StatusOr<TrainCommand::Inputs> TrainCommand::LoadInputs(
    std::ostream& err) const {
  Inputs in;
  ZR_ASSIGN_OR_RETURN(
      internal::LoadedModel loaded,
      internal::LoadModel(NameOrPath(run_.model(), model::PresetNames())));
  in.spec = loaded.spec;
  in.weights = loaded.weights;
  ZR_ASSIGN_OR_RETURN(in.options, LoadOptions(in.spec, err, &in.config));
  ZR_ASSIGN_OR_RETURN(in.data, LoadData(in.spec));
  FitDefaultData(in, err);
  ZR_RETURN_IF_ERROR(LoadEvalData(in));
  if (checkpoints_.resuming()) {
    ZR_ASSIGN_OR_RETURN(
        in.resume, checkpoints_.OpenResume(
                       ResolveUserPath(checkpoints_.resume_path()), in.spec,
                       in.options, static_cast<int>(ranks_), steps_, *in.data));
  }
  ZR_ASSIGN_OR_RETURN(
      in.profile,
      sim::LoadProfile(NameOrPath(sim_flags_.hardware(), sim::ProfileNames())));
  if (in.options.device_step_share < 0) {
    // zero3.offloaded_step "auto": decided on this run's profile, before
    // the memory preflight counts what it allocates.
    whatif::StepInput step;
    ZR_ASSIGN_OR_RETURN(step.profile, ProfileOfThisRun(in));
    step.spec = in.spec;
    step.options = in.options;
    step.gpus = static_cast<int>(ranks_);
    ZR_ASSIGN_OR_RETURN(const whatif::OffloadedStepChoice choice,
                        whatif::ChooseOffloadedStep(step));
    in.options.device_step_share = choice.share;
    in.offloaded_step =
        whatif::DescribeOffloadedStep(choice, step.profile.name());
    if (host_adam_gbps_.has_value()) {
      absl::StrAppendFormat(
          &in.offloaded_step,
          " (this host's AdamW, measured: %.1f GB/s on 1 thread, %.1f on %d)",
          host_adam_gbps_->first, host_adam_gbps_->second,
          step.profile.host().cores_per_rank());
    }
  }
  return in;
}

absl::StatusOr<internal::MemoryPlan> TrainCommand::PlanMemory(
    const Inputs& in) const {
  internal::PlanInput p;
  p.spec = in.spec;
  p.options = in.options;
  p.config = in.config;
  p.profile = in.profile;
  p.gpu = run_.gpu();
  p.data_mode = sim_flags_.data_mode();
  p.world_size = ranks_;
  p.env = internal::ProcessEnv();
  return internal::PlanMemory(p);
}

absl::StatusOr<zero::ZeroOptions> TrainCommand::LoadOptions(
    const model::ModelSpec& spec, std::ostream& err,
    config::Config* resolved) const {
  config::LoadOptions load;
  load.world_size = ranks_;
  ZR_ASSIGN_OR_RETURN(load.auto_values,
                      auto_flags_.Values(spec.hidden_size(), steps_));
  std::vector<std::string> overrides = run_.overrides();
  if (run_.gradient_checkpointing()) {
    overrides.insert(overrides.begin(),
                     "zero3.activation_checkpoint_interval=1");
  }
  if (!run_.max_pinned_bytes().empty()) {
    overrides.push_back(
        absl::StrCat("zero3.max_pinned_bytes=", run_.max_pinned_bytes()));
  }
  absl::StatusOr<config::LoadedConfig> loaded;
  if (run_.config().empty()) {
    load.overrides = {"zero_optimization.stage=3",
                      "zero_optimization.offload_optimizer.device=cpu"};
    if (!auto_flags_.has_micro_batch()) {
      load.overrides.push_back("train_micro_batch_size_per_gpu=4");
    }
    load.overrides.insert(load.overrides.end(), overrides.begin(),
                          overrides.end());
    loaded = config::DefaultConfig(load);
  } else {
    load.overrides = overrides;
    loaded = config::LoadConfigFile(ResolveUserPath(run_.config()), load);
  }
  if (!loaded.ok()) return loaded.status();
  for (const std::string& n : loaded->notices) err << "notice: " << n << "\n";
  for (const std::string& w : loaded->warnings) err << "warning: " << w << "\n";
  *resolved = loaded->config;
  ZR_ASSIGN_OR_RETURN(
      zero::ZeroOptions options,
      engine::OptionsFromConfig(loaded->config, run_.seq(), run_.seed()));
  const bool chunk_set =
      std::any_of(run_.overrides().begin(), run_.overrides().end(),
                  [](const std::string& o) {
                    return absl::StartsWith(o, "zero3.lm_head_chunk_tokens=");
                  });
  if (run_.gradient_checkpointing() && !chunk_set &&
      options.lm_head_chunk_tokens == 0) {
    ZR_RETURN_IF_ERROR(ChunkHeadWhereSmaller(spec, options, *resolved, err));
  }
  std::vector<int64_t> numels;
  for (const model::ParamInfo& p : model::ModelParams(spec)) {
    numels.push_back(p.numel());
  }
  ZR_RETURN_IF_ERROR(checks_.DropSyncs(numels, &options, err));
  return options;
}

absl::StatusOr<std::unique_ptr<model::BatchSource>> TrainCommand::LoadData(
    const model::ModelSpec& spec) const {
  return data_flags_.Open(ResolveUserPath(data_flags_.data()),
                          spec.vocab_size(), run_.seq(), run_.seed());
}

absl::Status TrainCommand::LoadEvalData(Inputs& in) const {
  if (!data_flags_.evaluating()) return absl::OkStatus();
  ZR_ASSIGN_OR_RETURN(
      in.eval_data,
      data_flags_.OpenEval(ResolveUserPath(data_flags_.eval_data()),
                           in.spec.vocab_size(), run_.seq()));
  in.eval = data_flags_.eval_plan();
  // Batches beyond the held-out data's samples would repeat them.
  const int64_t per_epoch = in.eval_data->samples_per_epoch();
  const int64_t global_batch = in.options.micro_batch *
                               in.options.accumulation * ranks_ /
                               std::max<int64_t>(in.options.tensor_parallel, 1);
  if (per_epoch > 0) {
    in.eval.iters =
        std::max<int64_t>(1, std::min(in.eval.iters, per_epoch / global_batch));
  }
  return absl::OkStatus();
}

void TrainCommand::FitDefaultData(Inputs& in, std::ostream& err) const {
  if (!data_flags_.corpus() || in.data->min_vocab() <= in.spec.vocab_size()) {
    return;
  }
  err << "notice: the built-in corpus needs a vocabulary of "
      << in.data->min_vocab() << " tokens; model " << in.spec.name() << " has "
      << in.spec.vocab_size()
      << ": training on seeded random tokens (--data synthetic)\n";
  in.data = model::SyntheticBatches(in.spec.vocab_size(), run_.seed());
}

absl::StatusOr<std::unique_ptr<runtime::Launcher>> TrainCommand::MakeBackend(
    const Inputs& in, std::ostream& err) const {
  internal::LauncherOptions o;
  o.sim.profile = in.profile;
  o.sim.world_size = static_cast<int>(ranks_);
  sim_flags_.Apply(&o.sim);
  o.sim.seed = run_.seed();
  o.sim.trace = outputs_.tracing();
  if (o.sim.trace) o.trace_path = ResolveUserPath(outputs_.trace());
  o.cuda.rank.log = &err;
  o.sim.max_pinned_bytes = o.cuda.rank.max_pinned_bytes =
      in.memory.max_pinned_bytes;
  o.sim.pinned_fallback = o.cuda.rank.pinned_fallback =
      in.memory.pinned_fallback;
  // The ranks the default pinned budget was shared among, for a GPU rank
  // that learns otherwise from the rendezvous (CudaRankOptions).
  o.cuda.rank.assumed_local_ranks = in.memory.estimate.local_ranks;
  o.cuda.rank.pinned_budget_is_default =
      in.memory.available.pinned_budget_is_default;
  const int64_t timeout = in.config.zero3().collective_timeout_seconds();
  o.cuda.rank.collective_timeout =
      timeout > 0 ? absl::Seconds(timeout) : absl::InfiniteDuration();
  // CUDA's pinning is not bound by RLIMIT_MEMLOCK; a low one is worth a
  // line where real memory is pinned.
  const std::string memlock =
      preflight::MemlockNote(in.memory.estimate, in.memory.available);
  if (run_.gpu() && !memlock.empty()) err << "notice: " << memlock << "\n";
  return internal::MakeLauncher(run_.backend(), o);
}

// On the leader, the sinks are opened (files created, directories made),
// and the --save directory made, before anything is trained, so a bad path
// fails the run at once.
absl::Status TrainCommand::OpenMetrics(const runtime::Launcher& launcher,
                                       const Inputs& in) {
  const config::Config& c = in.config;
  steps_per_print_ = c.steps_per_print();
  flops_per_token_ =
      internal::metrics::TrainingFlops(in.spec, in.options.seq, 1);
  peak_tflops_ = in.profile.gpu().peak_bf16_tflops();
  world_size_ = launcher.world_size();
  samples_per_step_ = in.options.micro_batch * in.options.accumulation *
                      static_cast<int64_t>(world_size_);
  speculative_ = zero::HostStepPlanOf(in.options).speculative;
  if (!launcher.leader()) return absl::OkStatus();
  ZR_RETURN_IF_ERROR(checkpoints_.PrepareSave(
      ResolveUserPath(checkpoints_.save_dir()),
      in.resume ? in.resume->manifest.step : 0, steps_));
  internal::metrics::SinkOptions o;
  if (!outputs_.metrics().empty())
    o.jsonl_path = ResolveUserPath(outputs_.metrics());
  auto dir = [](const std::string& path, const std::string& job) {
    const std::string d = internal::metrics::JoinPath(path, job);
    return d.empty() ? std::string(".") : ResolveUserPath(d);
  };
  if (c.csv_monitor().enabled()) {
    o.csv_dir = dir(c.csv_monitor().output_path(), c.csv_monitor().job_name());
  }
  if (c.tensorboard().enabled()) {
    o.tensorboard_dir =
        dir(c.tensorboard().output_path(), c.tensorboard().job_name());
  }
  o.events.has_loss = run_.gpu() || sim_flags_.data_mode();
  o.events.fp16 = in.options.dtype == kernels::DType::kF16;
  o.events.has_eval = data_flags_.evaluating();
  // The CSV monitor's files are outputs too.
  if (!o.csv_dir.empty()) {
    std::vector<internal::FlagPath> csv;
    for (const std::string& tag : internal::metrics::DeepSpeedTags(o.events)) {
      csv.push_back({"csv_monitor.output_path",
                     internal::metrics::JoinPath(
                         o.csv_dir, internal::metrics::CsvFileName(tag))});
    }
    ZR_RETURN_IF_ERROR(internal::CheckNoClash(InputPaths(), csv));
  }
  ZR_ASSIGN_OR_RETURN(internal::metrics::MetricsSinks sinks,
                      internal::metrics::MetricsSinks::Open(o));
  if (!sinks.empty()) {
    sinks_ =
        std::make_unique<internal::metrics::MetricsSinks>(std::move(sinks));
  }
  return absl::OkStatus();
}

namespace {

// 1235814400 as "1,235,814,400".
std::string WithThousands(int64_t n) {
  std::string digits = absl::StrCat(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

}  // namespace

void TrainCommand::PrintHeader(const runtime::Launcher& launcher,
                               const Inputs& in, std::ostream& out) const {
  const zero::ZeroOptions& o = in.options;
  if (launcher.leader()) {
    out << absl::StrFormat(
        "zero3 train: model %s (%s parameters), %d rank%s, %s on %s, "
        "micro-batch %d x %d tokens, accumulation %d, %s, optimizer %s\n",
        in.spec.name(), WithThousands(model::ParameterCount(in.spec)),
        launcher.world_size(), launcher.world_size() == 1 ? "" : "s", "ZeRO-3",
        launcher.description(), o.micro_batch, o.seq, o.accumulation,
        kernels::DTypeName(o.dtype),
        o.offload_optimizer
            ? absl::StrCat(
                  "on the host (",
                  o.optimizer_pin_memory ? "pinned" : "pageable", ", ",
                  o.grad_offload == zero::GradOffload::kAsync ? "async"
                                                              : "blocking",
                  " gradient offload",
                  o.host_master_dtype == runtime::DType::kF32 ? ""
                  : o.host_moments_dtype == runtime::DType::kF32
                      ? "; bf16 master weights"
                      : "; bf16 master weights and Adam moments",
                  o.nvme_path.empty()
                      ? std::string()
                      : absl::StrCat("; master and moments on NVMe under ",
                                     o.nvme_path),
                  o.param_nvme_path.empty()
                      ? std::string()
                      : absl::StrCat("; parameters on NVMe under ",
                                     o.param_nvme_path),
                  o.device_step_share > 0
                      ? absl::StrFormat("; AdamW of %g%% of it on the device, "
                                        "states streamed",
                                        100 * o.device_step_share)
                      : "",
                  zero::HostStepPlanOf(o).delayed
                      ? "; one-step delayed update, which changes "
                        "the training"
                      : "",
                  ")")
            : std::string("on the device"));
    if (!in.offloaded_step.empty()) out << in.offloaded_step << "\n";
    if (!run_.gpu()) {
      out << "times: simulated (virtual time on " << in.profile.name()
          << ", not measured on this machine)\n";
    }
    if (data_flags_.file()) {
      out << "data: " << in.data->description() << "\n";
    }
    if (in.eval_data != nullptr) {
      out << "eval: " << in.eval_data->description() << "; " << in.eval.iters
          << (in.eval.iters == 1 ? " batch" : " batches")
          << (in.eval.interval < steps_
                  ? absl::StrCat(" every ", in.eval.interval, " steps and")
                  : std::string())
          << " after the last step\n";
    }
    if (in.resume.has_value()) {
      out << "resuming from " << in.resume->step_dir << " (step "
          << in.resume->manifest.step << " of " << steps_ << ")\n";
    }
  }
  out.flush();
}

absl::StatusOr<TrainCommand::Results> TrainCommand::RunRanks(
    runtime::Launcher& launcher, const Inputs& in, std::ostream& out,
    std::ostream& err) const {
  Results results;
  constexpr int64_t kRowRing = 16;
  results.keep_all = checks_.check_reference() || gpu_flags_.predict();
  results.rows.resize(results.keep_all ? steps_
                                       : std::min<int64_t>(steps_, kRowRing));
  for (StepRow& r : results.rows) r.shards.resize(launcher.local_ranks());
  ZR_RETURN_IF_ERROR(launcher.Run([&](runtime::Runtime& rt) {
    return RunRank(launcher, in, rt, results, out, err);
  }));
  return results;
}

absl::Status TrainCommand::RunRank(runtime::Launcher& launcher,
                                   const Inputs& in, runtime::Runtime& rt,
                                   Results& results, std::ostream& out,
                                   std::ostream& err) const {
  ZR_RETURN_IF_ERROR(in.memory.CheckDeviceOnRank(rt.device()));
  const bool gpu = run_.gpu();
  const absl::Time created = absl::Now();
  if (gpu && rt.rank() == 0) {
    out << in.memory.StartUpNote(in.weights != nullptr);
    out.flush();
  }
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<engine::Engine> e,
                      engine::Engine::Create(in.spec, in.options, in.data.get(),
                                             rt, in.weights.get()));
  if (rt.rank() == 0) {
    out << "start-up: ";
    if (gpu) {
      out << absl::StrFormat("%.1f s; ",
                             absl::ToDoubleSeconds(absl::Now() - created));
    }
    out << rt.pinned_memory().Summary() << " (rank 0); "
        << "device memory "
        << FormatBytes(rt.device().memory_stats().bytes_in_use) << " in use\n";
    const zero::ZeroOptions& o = in.options;
    if (!e->nvme_direct()) {
      err << "notice: the file system of "
          << (o.nvme_path.empty() ? o.param_nvme_path : o.nvme_path)
          << " has no O_DIRECT (tmpfs?): the swap files go through the page "
             "cache, which takes host memory and the drive's speed is not "
             "reached; put nvme_path on the NVMe drive's file system\n";
    }
    if (o.offload_optimizer && (o.offload_ratio < 1 || o.auto_offload_ratio)) {
      out << absl::StrFormat(
          "optimizer: %.1f%% of the state on the host, the rest on the "
          "device (offload_optimizer.ratio %s, cut at a parameter "
          "boundary)\n",
          100 * e->host_share(),
          o.auto_offload_ratio
              ? "\"auto\": what fits in the device's free memory stays there"
              : absl::StrFormat("%g", o.offload_ratio));
    }
    results.num_params = e->layout().num_params();
    for (const model::ParamInfo& p : e->model().params()) {
      results.param_names.push_back(p.name);
    }
    results.activation_bytes = e->model().activation_bytes();
  }
  if (in.resume.has_value()) {
    ZR_RETURN_IF_ERROR(engine::LoadCheckpoint(*e, rt, in.resume->step_dir,
                                              in.resume->manifest));
  }
  std::unique_ptr<engine::CheckpointSaver> saver;
  if (checkpoints_.saving()) {
    engine::SaveOptions o =
        checkpoints_.Save(ResolveUserPath(checkpoints_.save_dir()),
                          config::ConfigToJsonValue(in.config));
    o.async = config::ModesOf(in.config).checkpoint_write ==
              config::CheckpointWrite::kAsync;
    ZR_RETURN_IF_ERROR(engine::CheckSharedDirectory(*e, rt, o.dir));
    saver = std::make_unique<engine::CheckpointSaver>(*e, rt, std::move(o));
  }
  if (gpu_flags_.profile_ops()) ZR_RETURN_IF_ERROR(launcher.StartOpTiming(rt));
  stop_->Arm();
  for (int64_t s = e->steps_done(); s < steps_; ++s) {
    ZR_ASSIGN_OR_RETURN(engine::StepStats stats, e->Step());
    std::optional<engine::EvalStats> eval;
    if (in.eval.Due(s + 1, steps_)) {
      ZR_ASSIGN_OR_RETURN(eval, e->Evaluate(*in.eval_data, in.eval.iters));
    }
    if (gpu_flags_.profile_ops() && (s == 0 || s == steps_ - 1)) {
      // Step 1 records the module order and warms the allocator; its
      // operations are dropped.
      ZR_ASSIGN_OR_RETURN(std::vector<runtime::OpTiming> ops,
                          launcher.TakeOpTimings(rt));
      if (s > 0 && rt.rank() == 0) results.op_timings = std::move(ops);
    }
    // A signal ends the run after this step or the next (StopOnSignal); the
    // step it ends on is the last, with its final checkpoint.
    bool stop = stop_->StopAfter(s + 1);
    if (run_.gpu() && rt.world_size() > 1) {
      // Each process sees its own rank: one collective per step gives every
      // process the job's loss (the mean of the ranks', as the simulator
      // prints it; with masked targets each rank's is its share) and its
      // stop agreement. A signal may reach some of the job's processes
      // only, or at different steps: they stop together after the step
      // where any saw it.
      ZR_ASSIGN_OR_RETURN(std::vector<float> agreed,
                          e->SumAcrossRanks({stop_->signal() != 0 ? 1.0f : 0.0f,
                                             static_cast<float>(stats.loss)},
                                            "step agreement"));
      stop = stop_->StopAgreed(s + 1, agreed[0] > 0);
      stats.loss = agreed[1] / rt.world_size();
    }
    ZR_RETURN_IF_ERROR(
        RecordStep(launcher, *e, rt, s, stats, eval, results, out));
    if (saver != nullptr) {
      ZR_RETURN_IF_ERROR(
          Checkpoint(in, *saver, s + 1, stop ? s + 1 : steps_, rt, out, err));
    }
    if (stop) break;
  }
  if (rt.rank() == 0) {
    results.pinned = rt.pinned_memory().stats();
    results.device = rt.device().memory_stats();
  }
  return absl::OkStatus();
}

absl::Status TrainCommand::Checkpoint(const Inputs& in,
                                      engine::CheckpointSaver& saver,
                                      int64_t steps_done, int64_t last,
                                      runtime::Runtime& rt, std::ostream& out,
                                      std::ostream& err) const {
  ZR_RETURN_IF_ERROR(Saved(in, saver.Poll(), rt, out, err));
  if (!checkpoints_.SaveDue(steps_done, last)) return absl::OkStatus();
  ZR_RETURN_IF_ERROR(Saved(in, saver.Finish(), rt, out, err));
  ZR_RETURN_IF_ERROR(saver.Start());
  // The run's last save, and every blocking one, is waited for.
  if (steps_done == last || config::ModesOf(in.config).checkpoint_write ==
                                config::CheckpointWrite::kBlocking) {
    ZR_RETURN_IF_ERROR(Saved(in, saver.Finish(), rt, out, err));
  }
  return absl::OkStatus();
}

absl::Status TrainCommand::Saved(
    const Inputs& in, const absl::StatusOr<engine::SavedCheckpoint>& saved,
    runtime::Runtime& rt, std::ostream& out, std::ostream& err) const {
  if (saved.ok()) {
    if (rt.rank() == 0 && !saved->dir.empty()) {
      out << "checkpoint: step " << saved->step << " saved to " << saved->dir
          << "\n";
      out.flush();
    }
    return absl::OkStatus();
  }
  if (config::ModesOf(in.config).checkpoint_on_failure !=
      config::CheckpointOnFailure::kContinue) {
    // A failed save is a failure of the run (exit status 1), whatever the
    // system's reason; Aborted marks the ranks whose own part succeeded.
    if (absl::IsAborted(saved.status())) return saved.status();
    return absl::InternalError(saved.status().message());
  }
  // Each rank whose own part failed says why (Aborted: another rank's did).
  if (!absl::IsAborted(saved.status())) {
    err << absl::StrCat(
        "warning: checkpoint not saved: ", saved.status().message(),
        "; training goes on (zero3.checkpoint_on_failure "
        "\"continue\")\n");
    err.flush();
  }
  return absl::OkStatus();
}

absl::Status TrainCommand::RecordStep(
    const runtime::Launcher& launcher, engine::Engine& engine,
    runtime::Runtime& rt, int64_t step, const engine::StepStats& stats,
    const std::optional<engine::EvalStats>& eval, Results& results,
    std::ostream& out) const {
  StepRow& row = results.row(step);
  if (checks_.check_reference()) {
    const int local = rt.rank() - launcher.first_local_rank();
    for (int p = 0; p < engine.layout().num_params(); ++p) {
      ZR_ASSIGN_OR_RETURN(std::vector<float> shard, engine.MasterParam(p));
      row.shards[local].push_back(std::move(shard));
    }
  }
  row.loss_sum += stats.loss;
  row.total_ns = std::max(row.total_ns, stats.total_ns);
  if (rt.rank() == 0) {
    row.rank0 = stats;
    row.eval = eval;
    row.pinned_host_bytes = rt.pinned_memory().stats().bytes_in_use;
    row.device = rt.device().memory_stats();
  }
  // The rank that completes the row prints it, in the process that runs
  // rank 0 (on GPUs, each process sees its own rank only).
  const int ranks = launcher.local_ranks();
  if (++row.ranks < ranks) return absl::OkStatus();
  Results::Progress& p = results.progress;
  if (p.first < 0) p.first = step;
  ++p.done;
  p.last_loss = row.loss_sum / ranks;
  if (step > p.first) {
    p.tokens += static_cast<double>(row.rank0.global_tokens);
    p.ns += static_cast<double>(row.total_ns);
  }
  const absl::Status printed = launcher.leader()
                                   ? PrintRow(row, step, p, engine, rt, out)
                                   : absl::OkStatus();
  if (!results.keep_all) {
    row = StepRow();
    row.shards.resize(ranks);
  }
  return printed;
}

absl::Status TrainCommand::PrintRow(const StepRow& row, int64_t step,
                                    const Results::Progress& progress,
                                    const engine::Engine& engine,
                                    const runtime::Runtime& rt,
                                    std::ostream& out) const {
  const int ranks = row.ranks;
  ZR_RETURN_IF_ERROR(WriteMetrics(row, step, rt.computes_values()));
  if ((step + 1) % steps_per_print_ != 0) {
    PrintEval(row, step, out);
    return absl::OkStatus();
  }
  const engine::StepStats& r0 = row.rank0;
  const double tokens = static_cast<double>(r0.global_tokens);
  out << absl::StrFormat(
      "step %*d/%d  loss %s%s  FWD %s  BWD %s  STEP %s  total %s  %.0f "
      "tokens/s%s%s%s\n",
      static_cast<int>(std::to_string(steps_).size()), step + 1, steps_,
      rt.computes_values() ? absl::StrFormat("%.4f", row.loss_sum / ranks)
                           : std::string("-"),
      internal::LrColumn(engine.options(), r0), Ms(r0.fwd_ns), Ms(r0.bwd_ns),
      Ms(r0.step_ns), Ms(row.total_ns), tokens / (row.total_ns / 1e9),
      r0.skipped ? absl::StrCat("  [", r0.skip_reason, "]") : std::string(),
      r0.speculation == engine::StepStats::Speculation::kNone
          ? std::string()
          : absl::StrCat("  speculative step ",
                         engine::StepStats::SpeculationName(r0.speculation),
                         r0.carried_pieces > 0
                             ? absl::StrCat(" (", r0.carried_pieces,
                                            " pieces under the next forward)")
                             : std::string()),
      ElapsedColumn(progress, step));
  out.flush();
  PrintEval(row, step, out);
  return absl::OkStatus();
}

std::string TrainCommand::ElapsedColumn(const Results::Progress& p,
                                        int64_t step) const {
  const double elapsed = absl::ToDoubleSeconds(absl::Now() - p.start);
  // Short runs need no clock.
  if (elapsed < kProgressAfterSeconds || p.done < 1) return "";
  const double per_step = elapsed / static_cast<double>(p.done);
  const double left = per_step * static_cast<double>(steps_ - step - 1);
  return absl::StrCat("  [", WallTime(elapsed), " elapsed, ETA ",
                      WallTime(left), "]");
}

void TrainCommand::PrintSummary(const Results& results,
                                std::ostream& out) const {
  const Results::Progress& p = results.progress;
  if (p.done < 1) return;
  const double wall = absl::ToDoubleSeconds(absl::Now() - p.start);
  out << "summary: " << p.done << (p.done == 1 ? " step" : " steps") << " in "
      << WallTime(wall) << " of wall time";
  if (p.ns > 0) {
    out << absl::StrFormat(", %.0f tokens/s over steps %d-%d (%s)",
                           p.tokens / (p.ns / 1e9), p.first + 2,
                           p.first + p.done,
                           !run_.gpu() ? "simulated time" : "measured");
  }
  if (sim_flags_.data_mode() || run_.gpu()) {
    out << absl::StrFormat(", final loss %.4f", p.last_loss);
  }
  out << "\n";
}

void TrainCommand::PrintEval(const StepRow& row, int64_t step,
                             std::ostream& out) const {
  if (!row.eval.has_value()) return;
  const engine::EvalStats& e = *row.eval;
  out << absl::StrFormat(
      "eval %*d/%d  eval_loss %.4f  eval_ppl %.4g  (%d %s, %d predicted "
      "tokens)\n",
      static_cast<int>(std::to_string(steps_).size()), step + 1, steps_, e.loss,
      std::exp(e.loss), e.batches, e.batches == 1 ? "batch" : "batches",
      e.predicted_tokens);
  out.flush();
}

absl::Status TrainCommand::WriteMetrics(const StepRow& row, int64_t step,
                                        bool has_loss) const {
  if (sinks_ == nullptr) return absl::OkStatus();
  const engine::StepStats& r0 = row.rank0;
  internal::metrics::StepMetrics m;
  m.step = step + 1;
  m.samples = samples_per_step_ * (step + 1);
  m.samples_before = samples_per_step_ * step;
  if (has_loss) m.loss = row.loss_sum / row.ranks;
  m.lr = internal::metrics::FloatAsDecimal(r0.lr);
  m.grad_norm = r0.grad_norm;
  m.loss_scale = r0.loss_scale;
  m.skipped = r0.skipped;
  m.skip_reason = r0.skip_reason;
  if (speculative_) {
    m.speculation = engine::StepStats::SpeculationName(r0.speculation);
  }
  m.tokens = r0.global_tokens;
  m.predicted_tokens = r0.predicted_tokens;
  if (row.eval.has_value()) {
    m.eval_loss = row.eval->loss;
    m.eval_ppl = std::exp(row.eval->loss);
  }
  const double seconds = row.total_ns / 1e9;
  m.tokens_per_s = seconds > 0 ? r0.global_tokens / seconds : 0;
  m.fwd_ms = r0.fwd_ns / 1e6;
  m.bwd_ms = r0.bwd_ns / 1e6;
  m.step_ms = r0.step_ns / 1e6;
  m.total_ms = row.total_ns / 1e6;
  m.model_flops = flops_per_token_ * static_cast<double>(r0.global_tokens);
  m.mfu =
      internal::metrics::Mfu(m.model_flops, seconds, world_size_, peak_tflops_);
  m.pinned_host_bytes = row.pinned_host_bytes;
  m.device_bytes = row.device.bytes_in_use;
  m.device_peak_bytes = row.device.peak_bytes_in_use;
  if (bound_.ok()) m.bound = *bound_;
  return sinks_->Write(m);
}

absl::StatusOr<sim::HardwareProfile> TrainCommand::ProfileOfThisRun(
    const Inputs& in) const {
  sim::HardwareProfile profile = in.profile;
  if (!run_.gpu()) return profile;
  ZR_RETURN_IF_ERROR(sim::SetHostOfThisProcess(
      static_cast<int>(gpu_flags_.predict_host_cores()), &profile));
  if (!IsNamed(sim_flags_.hardware(), sim::ProfileNames())) {
    return profile;  // calibrated on a machine: its own figures
  }
  const int threads = profile.host().cores_per_rank();
  if (!host_adam_gbps_.has_value()) {
    constexpr int64_t kElements = int64_t{1} << 23;  // 224 MB of traffic
    host_adam_gbps_ = {calibrate::HostAdamGbps(kElements, 1, 2),
                       calibrate::HostAdamGbps(kElements, threads, 2)};
  }
  calibrate::SetHostAdamRate(host_adam_gbps_->first, host_adam_gbps_->second,
                             threads, &profile);
  return profile;
}

absl::StatusOr<whatif::StepBound> TrainCommand::EstimateBound(
    const Inputs& in) const {
  ZR_ASSIGN_OR_RETURN(const sim::HardwareProfile profile, ProfileOfThisRun(in));
  return internal::EstimateStepBound(profile, in.spec, in.options, world_size_);
}

void TrainCommand::PrintBound(const Inputs& in, const Results& results,
                              std::ostream& out) const {
  if (!bound_.ok()) {
    out << "bound: not estimated (" << bound_.status().message() << ")\n";
    return;
  }
  out << internal::DescribeStepBound(*bound_, in.profile.name());
  const Results::Progress& p = results.progress;
  if (p.done > 1 && p.ns > 0 && bound_->ms() > 0) {
    const double mean_ms = p.ns / (p.done - 1) / 1e6;
    out << absl::StrFormat(
        "; steps %d-%d took %.1f ms on average, %.0f%% of the bound's speed",
        p.first + 2, p.first + p.done, mean_ms, 100 * bound_->ms() / mean_ms);
  }
  out << "\n";
}

absl::Status TrainCommand::Report(runtime::Launcher& launcher, const Inputs& in,
                                  const Results& results, std::ostream& out) {
  PrintSummary(results, out);
  PrintBound(in, results, out);
  out << "end: pinned host memory " << FormatBytes(results.pinned.bytes_in_use)
      << " in use, peak " << FormatBytes(results.pinned.peak_bytes) << " in "
      << results.pinned.allocations << " allocations; device memory peak "
      << FormatBytes(results.device.peak_bytes_in_use) << " (activations "
      << FormatBytes(results.activation_bytes) << ") (rank 0)\n";
  if (run_.gpu()) PrintMemoryAgainstEstimate(in, results, out);
  ZR_ASSIGN_OR_RETURN(const int problems, launcher.Report(out));
  if (problems > 0) exit_code_ = kExitFailure;
  std::vector<runtime::OpTiming> predicted_ops;
  if (gpu_flags_.predict()) {
    ZR_ASSIGN_OR_RETURN(predicted_ops, PrintPrediction(in, results, out));
  }
  if (gpu_flags_.profile_ops() && steps_ > 1) {
    ZR_RETURN_IF_ERROR(PrintOpTimings(results, predicted_ops, out));
  }
  if (!checks_.check_reference()) return absl::OkStatus();
  // A simulated run holds every rank's shards and is checked against the
  // unsharded reference; a GPU run, against the simulator.
  return run_.gpu() ? CheckAgainstSimulator(in, results, out)
                    : CheckAgainstReference(launcher, in, results, out);
}

// The preflight's estimate beside what the GPU run measured (the caching
// allocator's peak of bytes requested, the quantity estimated).
void TrainCommand::PrintMemoryAgainstEstimate(const Inputs& in,
                                              const Results& results,
                                              std::ostream& out) const {
  auto error = [](int64_t estimate, int64_t measured) {
    return measured > 0
               ? absl::StrFormat("%+.1f%%",
                                 100.0 * (estimate - measured) / measured)
               : std::string("-");
  };
  const preflight::MemoryEstimate& e = in.memory.estimate;
  const int64_t device = results.device.peak_bytes_in_use;
  const int64_t pinned = results.pinned.peak_bytes;
  out << "memory against the estimate (rank 0): device peak "
      << FormatBytes(device) << ", estimated " << FormatBytes(e.device_bytes)
      << " (" << error(e.device_bytes, device) << "); pinned peak "
      << FormatBytes(pinned) << ", estimated " << FormatBytes(e.pinned_bytes)
      << " (" << error(e.pinned_bytes, pinned) << ")\n";
}

absl::StatusOr<std::vector<runtime::OpTiming>> TrainCommand::PrintPrediction(
    const Inputs& in, const Results& results, std::ostream& out) const {
  whatif::StepInput step;
  ZR_ASSIGN_OR_RETURN(step.profile, ProfileOfThisRun(in));
  step.spec = in.spec;
  step.options = in.options;
  step.gpus = static_cast<int>(ranks_);
  step.steps = 3;
  step.op_timings = gpu_flags_.profile_ops();
  ZR_ASSIGN_OR_RETURN(whatif::VariantResult predicted,
                      whatif::SimulateStep(step));
  // Measured: the median over the steps after the first (which records the
  // module order and warms the allocator).
  const std::vector<StepRow>& rows = results.rows;
  auto median = [&](int64_t engine::StepStats::*field) {
    std::vector<double> v;
    for (size_t s = rows.size() > 1 ? 1 : 0; s < rows.size(); ++s) {
      v.push_back(rows[s].rank0.*field / 1e6);
    }
    return UpperMedian(std::move(v));
  };
  const whatif::Metrics& m = predicted.metrics;
  const double measured[] = {median(&engine::StepStats::fwd_ns),
                             median(&engine::StepStats::bwd_ns),
                             median(&engine::StepStats::step_ns),
                             median(&engine::StepStats::total_ns)};
  const double simulated[] = {m.fwd_ms, m.bwd_ms, m.step_ms, m.total_ms};
  const char* names[] = {"FWD", "BWD", "STEP", "total"};
  out << absl::StrFormat(
      "prediction on %s, %d host cores per rank (median of measured steps "
      "2..%d):\n",
      in.profile.name(), step.profile.host().cores_per_rank(), rows.size());
  out << absl::StrFormat("  %-6s %12s %12s %9s\n", "phase", "measured ms",
                         "predicted ms", "error");
  for (int i = 0; i < 4; ++i) {
    out << absl::StrFormat("  %-6s %12.2f %12.2f %+8.1f%%\n", names[i],
                           measured[i], simulated[i],
                           100.0 * (simulated[i] - measured[i]) / measured[i]);
  }
  return std::move(predicted.ops);
}

absl::Status TrainCommand::PrintOpTimings(
    const Results& results, const std::vector<runtime::OpTiming>& predicted,
    std::ostream& out) const {
  const std::vector<runtime::OpTiming>& measured = results.op_timings;
  out << absl::StrFormat(
      "device time by operation, per step (rank 0, steps 2..%d)%s:\n", steps_,
      gpu_flags_.predict() ? ", beside the prediction" : "");
  out << internal::FormatOpComparison(
      internal::GroupOps(measured, static_cast<int>(steps_ - 1)),
      internal::GroupOps(predicted, 1), 30);
  if (!outputs_.tracing()) return absl::OkStatus();
  sim::Trace trace;
  trace.NameProcess(0, "rank 0 (GPU, measured)");
  std::vector<std::string> streams;
  for (const runtime::OpTiming& op : measured) {
    auto it = std::find(streams.begin(), streams.end(), op.stream);
    const int tid = static_cast<int>(it - streams.begin());
    if (it == streams.end()) {
      streams.push_back(op.stream);
      trace.NameTrack(0, tid, absl::StrCat("stream: ", op.stream));
    }
    trace.AddSpan(0, tid, op.label, op.start_ns, op.end_ns);
  }
  const std::string path = ResolveUserPath(outputs_.trace());
  ZR_RETURN_IF_ERROR(trace.WriteFile(path));
  out << "trace of the timed operations written to " << path << "\n";
  return absl::OkStatus();
}

absl::Status TrainCommand::CheckAgainstReference(
    const runtime::Launcher& launcher, const Inputs& in, const Results& results,
    std::ostream& out) {
  // A resumed run's reference starts from the checkpoint.
  std::optional<reference::ReferenceState> start;
  int64_t first = 0;
  if (in.resume.has_value()) {
    ZR_ASSIGN_OR_RETURN(
        engine::WholeState whole,
        engine::ReadWholeState(in.resume->step_dir, in.resume->manifest));
    start.emplace();
    start->master = std::move(whole.master);
    start->exp_avg = std::move(whole.exp_avg);
    start->exp_avg_sq = std::move(whole.exp_avg_sq);
    start->steps_done = whole.counters.steps_done;
    start->adam_steps = whole.counters.adam_steps;
    start->scaler = whole.counters.scaler;
    first = start->steps_done;
  }
  std::vector<std::vector<std::vector<float>>> by_step;
  ZR_ASSIGN_OR_RETURN(
      reference::RunResult ref,
      reference::RunReference(in.spec, in.options, static_cast<int>(ranks_),
                              static_cast<int>(steps_), *in.data, in.profile,
                              &by_step, in.weights.get(),
                              start.has_value() ? &*start : nullptr));
  const double tolerance =
      in.options.dtype != kernels::DType::kF32 ? kLowPrecisionTolerance
      : in.options.lm_head_chunk_tokens > 0    ? kFp32ChunkedHeadTolerance
                                               : kFp32Tolerance;
  const int ranks = launcher.local_ranks();
  double worst = 0;
  for (int64_t s = first; s < steps_; ++s) {
    const StepRow& row = results.rows[s];
    const int64_t k = s - first;  // the reference's step
    std::vector<std::vector<float>> full(results.num_params);
    for (int p = 0; p < results.num_params; ++p) {
      for (int r = 0; r < ranks; ++r) {
        const std::vector<float>& shard = row.shards[r][p];
        full[p].insert(full[p].end(), shard.begin(), shard.end());
      }
    }
    int worst_param = -1;
    const double dp =
        reference::ParamDifference(full, by_step[k], &worst_param);
    const double loss = row.loss_sum / ranks;
    const double dl = std::abs(loss - ref.losses[k]) /
                      std::max(std::abs(ref.losses[k]), 1e-30);
    worst = reference::WorseOf(worst, reference::WorseOf(dp, dl));
    out << absl::StrFormat(
        "check step %d: loss %.6f vs reference %.6f (relative difference "
        "%.2e); parameters max relative difference %.2e%s\n",
        s + 1, loss, ref.losses[k], dl, dp,
        worst_param >= 0 && dp > 0
            ? absl::StrCat(" (", results.param_names[worst_param], ")")
            : std::string());
  }
  const bool ok = worst <= tolerance;
  out << absl::StrFormat(
      "check-reference: largest relative difference %.2e, tolerance %.0e: "
      "%s\n",
      worst, tolerance, ok ? "OK" : "ABOVE TOLERANCE");
  if (!ok) exit_code_ = kExitFailure;
  return absl::OkStatus();
}

// Rank 0's losses and final master shards from the simulator's data mode
// on the same configuration and ranks (from the --resume checkpoint when
// there is one: the losses of the steps after it).
absl::Status SimulateRankZero(
    const model::ModelSpec& spec, const zero::ZeroOptions& options,
    const model::BatchSource& data, const sim::HardwareProfile& profile,
    const model::ParamSource* weights,
    const std::optional<internal::ResumePoint>& resume, int ranks,
    int64_t steps, std::vector<double>* losses,
    std::vector<std::vector<float>>* shards) {
  sim::SimOptions so;
  so.profile = profile;
  so.world_size = ranks;
  so.mode = sim::SimMode::kData;
  ZR_ASSIGN_OR_RETURN(auto world, sim::SimWorld::Create(so));
  return world->Run([&](runtime::Runtime& rt) -> absl::Status {
    ZR_ASSIGN_OR_RETURN(
        auto e, engine::Engine::Create(spec, options, &data, rt, weights));
    if (resume.has_value()) {
      ZR_RETURN_IF_ERROR(
          engine::LoadCheckpoint(*e, rt, resume->step_dir, resume->manifest));
    }
    for (int64_t s = e->steps_done(); s < steps; ++s) {
      ZR_ASSIGN_OR_RETURN(engine::StepStats stats, e->Step());
      if (rt.rank() == 0) losses->push_back(stats.loss);
    }
    if (rt.rank() == 0) {
      for (int p = 0; p < e->layout().num_params(); ++p) {
        ZR_ASSIGN_OR_RETURN(std::vector<float> shard, e->MasterParam(p));
        shards->push_back(std::move(shard));
      }
    }
    return absl::OkStatus();
  });
}

// ||a - b|| / ||b|| over the parameters of both, as one vector.
double RelativeDistance(const std::vector<std::vector<float>>& a,
                        const std::vector<std::vector<float>>& b) {
  double diff = 0, norm = 0;
  for (size_t p = 0; p < b.size() && p < a.size(); ++p) {
    for (size_t i = 0; i < b[p].size() && i < a[p].size(); ++i) {
      const double d = static_cast<double>(a[p][i]) - b[p][i];
      diff += d * d;
      norm += static_cast<double>(b[p][i]) * b[p][i];
    }
  }
  return std::sqrt(diff / std::max(norm, 1e-30));
}

absl::Status TrainCommand::CheckAgainstSimulator(const Inputs& in,
                                                 const Results& results,
                                                 std::ostream& out) {
  std::vector<double> losses;
  std::vector<std::vector<float>> shards;
  ZR_RETURN_IF_ERROR(SimulateRankZero(
      in.spec, in.options, *in.data, in.profile, in.weights.get(), in.resume,
      static_cast<int>(ranks_), steps_, &losses, &shards));
  const int64_t first = in.resume ? in.resume->manifest.step : 0;
  const bool fp32 = in.options.dtype == kernels::DType::kF32;
  const double loss_tolerance = fp32 ? 1e-4 : kLowPrecisionTolerance;
  const double param_tolerance = fp32 ? 1e-3 : 1e-2;
  double worst_loss = 0;
  for (int64_t s = first; s < steps_; ++s) {
    const double gpu_loss = results.rows[s].rank0.loss;
    const double sim_loss = losses[s - first];
    const double d = std::abs(gpu_loss - sim_loss) / std::abs(sim_loss);
    worst_loss = reference::WorseOf(worst_loss, d);
    out << absl::StrFormat(
        "check step %d: loss %.6f on the GPU, %.6f on the simulator "
        "(relative difference %.2e)\n",
        s + 1, gpu_loss, sim_loss, d);
  }
  const double param_diff =
      RelativeDistance(results.rows.back().shards[0], shards);
  const bool ok = worst_loss <= loss_tolerance && param_diff <= param_tolerance;
  out << absl::StrFormat(
      "check against the simulator: loss within %.2e (tolerance %.0e), "
      "parameters within %.2e (tolerance %.0e, ||gpu - sim|| / ||sim|| of "
      "rank 0's shards): %s\n",
      worst_loss, loss_tolerance, param_diff, param_tolerance,
      ok ? "OK" : "ABOVE TOLERANCE");
  if (!ok) exit_code_ = kExitFailure;
  return absl::OkStatus();
}

}  // namespace

std::unique_ptr<Command> NewTrainCommand() {
  return std::make_unique<TrainCommand>();
}

}  // namespace cli
}  // namespace zero3
