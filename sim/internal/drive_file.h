// Copyright 2026 The zero3 Authors.
//
// drive_file.h: the simulated drive file (runtime::DriveFile). Each
// transfer takes the rank's share of the node's NVMe read or write rate
// (CostModel::DriveNanos) after the previous one in its direction, runs as
// a race-detector agent of its own that accesses the host buffer from the
// call to its end, and is waited for by the host (BlockUntil, then the
// host learns the transfer's clock). In data mode the real file
// (runtime::SwapFile, synchronous) holds the bytes; in timing mode there is
// no file. Not thread-safe: the rank's host thread drives it.

#ifndef ZERO3_SIM_INTERNAL_DRIVE_FILE_H_
#define ZERO3_SIM_INTERNAL_DRIVE_FILE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/runtime/drive_file.h"
#include "sim/internal/rank_state.h"
#include "sim/race_detector.h"

namespace zero3 {
namespace sim {
namespace internal {

// Opens the drive file of `options` for `rank`: FailedPrecondition naming
// the profile keys when the profile has no NVMe figures.
absl::StatusOr<std::unique_ptr<runtime::DriveFile>> OpenSimDriveFile(
    RankState* rank, const runtime::DriveFileOptions& options);

}  // namespace internal
}  // namespace sim
}  // namespace zero3

#endif  // ZERO3_SIM_INTERNAL_DRIVE_FILE_H_
