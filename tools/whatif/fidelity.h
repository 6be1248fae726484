// Copyright 2026 The zero3 Authors.
//
// fidelity.h: replay GPU measurements on the simulator.
//
// A FidelitySet (fidelity.proto) holds configurations measured on GPUs with
// their FWD, BWD and STEP times. Replay simulates each configuration on the
// set's hardware profile and reports predicted beside measured, with the
// relative error; docs/fidelity.md is its Markdown output, and
// fidelity_test keeps the shipped profile within the set's bounds.
//
// Thread-compatible: functions over values (each replay builds its own
// simulated world).

#ifndef ZERO3_TOOLS_WHATIF_FIDELITY_H_
#define ZERO3_TOOLS_WHATIF_FIDELITY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/whatif/fidelity.pb.h"

namespace zero3 {
namespace whatif {

struct FidelityRow {
  std::string name;
  bool calibration = false;
  int gpus = 1;
  std::string model;
  int64_t micro_batch = 0;
  int accumulation = 1;
  std::string offload;             // "none", "pinned async", ...
  double measured[3] = {0, 0, 0};  // FWD, BWD, STEP ms
  double predicted[3] = {0, 0, 0};
  // (predicted - measured) / measured; NaN where not judged (a STEP below
  // the set's ignore_step_below_ms).
  double error[3] = {0, 0, 0};
};

struct FidelityReport {
  std::vector<FidelityRow> rows;
  double max_abs_error = 0;        // over judged phases
  double mean_abs_error = 0;       // over judged phases
  double test_mean_abs_error = 0;  // over the non-calibration cases
  std::string worst;               // "case phase"
};

// Reads a text-format FidelitySet; errors name the file and line.
absl::StatusOr<FidelitySet> LoadFidelitySet(const std::string& path);

// Replays every case on `set.hardware()` (or `hardware` when not empty).
// Relative model and hardware paths are taken from `base_dir`.
absl::StatusOr<FidelityReport> ReplayFidelity(const FidelitySet& set,
                                              const std::string& hardware,
                                              const std::string& base_dir);

// The report as a Markdown table, calibration cases marked.
std::string FidelityMarkdown(const FidelityReport& report);

}  // namespace whatif
}  // namespace zero3

#endif  // ZERO3_TOOLS_WHATIF_FIDELITY_H_
