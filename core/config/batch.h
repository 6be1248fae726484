// Copyright 2026 The zero3 Authors.
//
// batch.h: the batch-size rules. train_batch_size ==
// train_micro_batch_size_per_gpu x gradient_accumulation_steps x world size;
// any two determine the third, as in DeepSpeed.
//
// Thread-compatible: plain functions. Internal to the loader
// (config_loader.h).

#ifndef ZERO3_CORE_CONFIG_BATCH_H_
#define ZERO3_CORE_CONFIG_BATCH_H_

#include <cstdint>

#include "core/config/config.pb.h"
#include "core/config/diagnostics.h"

namespace zero3 {
namespace config {

// Derives the batch sizes `config` leaves unset as DeepSpeed's
// _set_batch_related_parameters does (one sample per rank per micro-batch
// when none is given, with a notice), then checks them. Errors poison the
// batch keys.
void ResolveBatch(int64_t world_size, Config* config, Diagnostics* diag);

// Checks the batch sizes of a resolved config against `world_size` (the
// loader's cross-field rule; skipped when ResolveBatch already reported).
void CheckBatch(const Config& config, int64_t world_size, Diagnostics* diag);

}  // namespace config
}  // namespace zero3

#endif  // ZERO3_CORE_CONFIG_BATCH_H_
