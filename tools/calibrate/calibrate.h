// Copyright 2026 The zero3 Authors.
//
// calibrate.h: measure what a hardware profile needs, through the runtime
// interface, on whatever backend the runtime is.
//
// On GPUs (the CUDA backend) this produces a measured profile for the
// simulator: GEMM times at the shapes the model presets use, attention
// efficiency forward and backward, achieved memory bandwidth and the
// shortest kernel, host and device costs of runtime calls, pinned and
// pageable copy bandwidths in both directions and how long each blocks the
// host, collective bus bandwidth by size, and host AdamW throughput by
// thread count. Every measured field carries a comment saying how it was
// measured. Figures that cannot be measured here (peak rates, memory size)
// come from the base profile, with their sources.
//
// On the simulator it measures the simulator, which is how the procedure is
// tested: calibrating against a profile must give back that profile.

#ifndef ZERO3_TOOLS_CALIBRATE_CALIBRATE_H_
#define ZERO3_TOOLS_CALIBRATE_CALIBRATE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/model/model_spec.pb.h"
#include "core/runtime/runtime.h"
#include "sim/profile.pb.h"

namespace zero3 {
namespace calibrate {

struct Options {
  // Peaks, capacities and anything not measured are taken from here.
  sim::HardwareProfile base;
  // GEMM and attention shapes: these models' layers at these micro-batch
  // shapes (sequences x tokens).
  std::vector<model::ModelSpec> models;
  std::vector<std::pair<int64_t, int64_t>> batches;  // (sequences, seq)
  // Repetitions per timing (the median is kept).
  int reps = 5;
  // Largest copy and collective measured, in bytes.
  int64_t max_bytes = int64_t{512} << 20;
  // Parameters of the host AdamW measurement.
  int64_t adam_elements = int64_t{1} << 26;
  // With a directory: the drive behind it, through the NVMe swapper's own
  // file (Runtime::OpenDriveFile) and pattern (64 MiB transfers, two in
  // flight, `swap`'s block size and queue depth), `nvme_bytes` written then
  // read by every rank at once: host.nvme_read/write_gbps_per_node.
  std::string nvme_path;
  int64_t nvme_bytes = int64_t{1} << 30;
  runtime::SwapOptions swap;
  // Called on rank 0 before each kind of measurement ("GEMMs (42
  // shapes)"); may be empty.
  std::function<void(const std::string&)> progress;
};

struct Result {
  sim::HardwareProfile profile;
  // Human-readable summary of every measurement.
  std::string report;
  // How each figure fitted from training steps was obtained (one line
  // each; in_step_fit.h); ProfileText writes them above the measurements.
  std::vector<std::string> fit_notes;
};

// Runs on every rank of the runtime (collectives need them all); rank 0's
// result is the one to keep.
absl::StatusOr<Result> Calibrate(runtime::Runtime& rt, const Options& options);

// Removes the figures set from training steps rather than measured alone
// (in-step kernel factors, the per-size pageable D2H curve and the ranks'
// sharing of pageable copies, the strided copy rate): calibrate's output
// starts from its base without them, since they describe the base's
// figures, not the new ones (FitInStep in in_step_fit.h fits them again
// from training steps on the machine calibrated).
void ClearInStepAdjustments(sim::HardwareProfile* profile);

// The profile as text-format protobuf with a comment on each measured
// and each fitted figure.
std::string ProfileText(const Result& result);

}  // namespace calibrate
}  // namespace zero3

#endif  // ZERO3_TOOLS_CALIBRATE_CALIBRATE_H_
