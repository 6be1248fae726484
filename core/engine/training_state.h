// Copyright 2026 The zero3 Authors.
//
// training_state.h: one rank's training state, what a checkpoint holds for
// it (Engine::ExportState, ImportState).

#ifndef ZERO3_CORE_ENGINE_TRAINING_STATE_H_
#define ZERO3_CORE_ENGINE_TRAINING_STATE_H_

#include <cstdint>
#include <vector>

#include "core/zero/loss_scaler.h"

namespace zero3 {
namespace engine {

// One rank's training state: what a checkpoint holds for it. The vectors
// are this rank's partitions of all parameters, laid out as the shard layout
// (layout().total() elements, padding included).
struct TrainingState {
  int64_t steps_done = 0;  // optimizer steps taken, skipped ones included
  int64_t adam_steps = 0;  // steps applied (AdamW's t; the schedule's)
  zero::LossScaler::State scaler;
  std::vector<float> master, exp_avg, exp_avg_sq;
};

}  // namespace engine
}  // namespace zero3

#endif  // ZERO3_CORE_ENGINE_TRAINING_STATE_H_
