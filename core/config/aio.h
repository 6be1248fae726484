// Copyright 2026 The zero3 Authors.
//
// aio.h: what zero3 does with DeepSpeed's aio section, which sets how the
// NVMe swapper (offload_optimizer.device "nvme", core/runtime/swap_file.h)
// drives the drive.
//
// block_size and queue_depth mean what they mean in DeepSpeed: bytes per
// request and requests in flight (a block size must be a multiple of 4096,
// O_DIRECT's alignment). thread_count is what DeepSpeed's documentation
// calls intra_op_parallelism, which its code reads: read as it, with a
// notice. zero3 submits from one io_uring per rank, so
// intra_op_parallelism above 1, single_submit and overlap_events draw a
// notice that they change nothing; use_gds a notice that transfers go
// through host memory. The section without NVMe offload: a notice.

#ifndef ZERO3_CORE_CONFIG_AIO_H_
#define ZERO3_CORE_CONFIG_AIO_H_

#include "core/config/config.pb.h"
#include "core/config/diagnostics.h"

namespace zero3 {
namespace config {

// Notices and errors for the section's keys given in `config`; reads
// thread_count into intra_op_parallelism.
void CheckAio(Config* config, Diagnostics* diag);

}  // namespace config
}  // namespace zero3

#endif  // ZERO3_CORE_CONFIG_AIO_H_
