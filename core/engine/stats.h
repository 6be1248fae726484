// Copyright 2026 The zero3 Authors.
//
// stats.h: what one training step (Engine::Step) and one evaluation
// (Engine::Evaluate) report.

#ifndef ZERO3_CORE_ENGINE_STATS_H_
#define ZERO3_CORE_ENGINE_STATS_H_

#include <cstdint>
#include <string>

#include "core/zero/host_optimizer.h"

namespace zero3 {
namespace engine {

struct StepStats {
  int64_t step = 0;
  // This rank's loss; NaN when the runtime computes no values. The mean
  // over the data-parallel ranks is the global batch's loss: the mean over
  // its predicted targets (data that masks targets: each rank's terms over
  // the global batch's predicted targets, times the ranks), else the mean
  // of the micro-batches' means, which is the same where every target is
  // predicted.
  double loss = 0;
  // Host time of each phase, summed over micro-steps. FWD ends when the
  // host has read the micro-step's loss (so it includes the device's
  // leftover backward of the micro-step before); BWD when the host has
  // issued the backward pass (and, on the last micro-step, waited for the
  // gradient reduction); STEP when every rank's optimizer update is done,
  // on the host and on the device (with the speculative step, all but the
  // write-back of the host share's working copy, which overlaps the next
  // FWD).
  int64_t fwd_ns = 0;
  int64_t bwd_ns = 0;
  int64_t step_ns = 0;
  int64_t total_ns = 0;
  bool skipped = false;
  std::string skip_reason;
  // The global gradient norm after unscaling, before clipping.
  double grad_norm = 0;
  double loss_scale = 1;
  double lr = 0;  // The learning rate this step's update used.
  // The speculative host step (offload_optimizer.super_offload): whether
  // this step ran it, and what validation made of it; the pieces it updated
  // during backward and those it carried over to the next forward
  // (zero::HostOptimizer::Outcome).
  using Speculation = zero::Speculation;
  Speculation speculation = Speculation::kNone;
  static const char* SpeculationName(Speculation s) {
    return zero::SpeculationName(s);
  }
  int speculative_pieces = 0;
  int carried_pieces = 0;
  int64_t tokens = 0;  // trained on by this rank in this step
  // Trained on by all ranks (tensor-parallel ranks share their tokens).
  int64_t global_tokens = 0;
  // Of global_tokens, those whose target is predicted (not masked or
  // padding): the loss's divisor.
  int64_t predicted_tokens = 0;
};

// An evaluation on held-out data (Engine::Evaluate).
struct EvalStats {
  double loss = 0;  // mean over the predicted targets; NaN where none
  int64_t predicted_tokens = 0;  // of all its batches
  int64_t batches = 0;           // global batches evaluated
};

}  // namespace engine
}  // namespace zero3

#endif  // ZERO3_CORE_ENGINE_STATS_H_
