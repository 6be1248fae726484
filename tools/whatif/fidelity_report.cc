// Copyright 2026 The zero3 Authors.
//
// Replays the GPU measurements in tools/whatif/fidelity/ on the simulator
// and prints docs/fidelity.md's table.
//
//   bazel run //tools/whatif:fidelity_report [-- [--set FILE] [HARDWARE]]
//
// FILE: a set in tools/whatif/fidelity/ (default h200_2x.textproto, the
// shipped profile's; h200_1x_calibrated.textproto is calibrate-then-predict
// on one GPU). HARDWARE (a profile name or file) replaces the set's
// profile, to try a recalibrated one.

#include <cstdio>
#include <cstdlib>
#include <string>

#include "tools/whatif/fidelity.h"

int main(int argc, char** argv) {
  const char* srcdir = std::getenv("RUNFILES_DIR");
  std::string base = srcdir != nullptr
                         ? std::string(srcdir) + "/zero3"
                         : std::string(argv[0]) + ".runfiles/zero3";
  std::string file = "h200_2x.textproto";
  int arg = 1;
  if (argc > 2 && std::string(argv[1]) == "--set") {
    file = argv[2];
    arg = 3;
  }
  auto set =
      zero3::whatif::LoadFidelitySet(base + "/tools/whatif/fidelity/" + file);
  if (!set.ok()) {
    std::fprintf(stderr, "%s\n", std::string(set.status().message()).c_str());
    return 1;
  }
  std::string hardware = argc > arg ? argv[arg] : "";
  if (!hardware.empty() && hardware[0] != '/' &&
      hardware.find('/') != std::string::npos) {
    // A relative file: from where `bazel run` was started.
    const char* cwd = std::getenv("BUILD_WORKING_DIRECTORY");
    if (cwd != nullptr) hardware = std::string(cwd) + "/" + hardware;
  }
  auto report = zero3::whatif::ReplayFidelity(*set, hardware, base);
  if (!report.ok()) {
    std::fprintf(stderr, "%s\n",
                 std::string(report.status().message()).c_str());
    return 1;
  }
  std::printf("%s", zero3::whatif::FidelityMarkdown(*report).c_str());
  return 0;
}
