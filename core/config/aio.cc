// Copyright 2026 The zero3 Authors.

#include "core/config/aio.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace zero3 {
namespace config {

void CheckAio(Config* config, Diagnostics* diag) {
  if (!config->has_aio()) return;
  Aio& a = *config->mutable_aio();
  const std::string s = "aio";
  const std::string k = s + ".";
  const ZeroOptimization& z = config->zero_optimization();
  if (z.offload_optimizer().device() != "nvme" &&
      z.offload_param().device() != "nvme") {
    diag->Notice(s,
                 "used by NVMe offload only (offload_optimizer.device or "
                 "offload_param.device \"nvme\"); ignored");
  }
  if (a.has_thread_count()) {
    if (a.has_intra_op_parallelism() &&
        a.intra_op_parallelism() != a.thread_count()) {
      diag->Check(false, k + "thread_count",
                  absl::StrCat("is DeepSpeed's documented name for "
                               "intra_op_parallelism, which is given too (",
                               a.intra_op_parallelism(), " against ",
                               a.thread_count(), "); keep one of them"));
    } else {
      diag->Notice(k + "thread_count",
                   "read as aio.intra_op_parallelism, the key DeepSpeed's "
                   "code reads (its documentation says thread_count)");
      a.set_intra_op_parallelism(a.thread_count());
    }
  }
  if (a.block_size() % 4096 != 0) {
    diag->Check(false, k + "block_size",
                absl::StrCat("must be a multiple of 4096 (O_DIRECT's "
                             "alignment), found ",
                             a.block_size()));
  }
  struct KeyNote {
    const char* key;
    bool given;
    const char* note;
  };
  const KeyNote notes[] = {
      {"intra_op_parallelism", a.intra_op_parallelism() > 1,
       "changes nothing in zero3: each rank submits its requests from one "
       "io_uring, queue_depth of them in flight; ignored"},
      {"single_submit", a.has_single_submit(),
       "changes nothing in zero3: io_uring takes requests in batches either "
       "way; ignored"},
      {"overlap_events", a.has_overlap_events(),
       "changes nothing in zero3: requests are always reaped as they "
       "complete while others are in flight; ignored"},
      {"use_gds", a.use_gds(),
       "GPUDirect Storage is not used: transfers go through aligned host "
       "buffers; ignored"},
  };
  for (const KeyNote& n : notes) {
    if (n.given) diag->Notice(k + n.key, n.note);
  }
}

}  // namespace config
}  // namespace zero3
