// Copyright 2026 The zero3 Authors.

#include "core/config/activation_checkpointing.h"

#include <string>

namespace zero3 {
namespace config {

void CheckActivationCheckpointing(const Config& config, Diagnostics* diag) {
  if (!config.has_activation_checkpointing()) return;
  const ActivationCheckpointing& a = config.activation_checkpointing();
  const std::string s = "activation_checkpointing";
  const std::string k = s + ".";
  if (config.zero3().activation_checkpoint_interval() == 0) {
    diag->Notice(s,
                 "configures DeepSpeed's checkpoint function and, as in "
                 "DeepSpeed, turns no recompute on; set "
                 "zero3.activation_checkpoint_interval (1: every layer) or "
                 "pass zero3 train --gradient-checkpointing");
  }
  if (a.contiguous_memory_optimization()) {
    // DeepSpeed's checkpointing.configure asserts both.
    diag->Check(a.partition_activations(), k + "contiguous_memory_optimization",
                "true needs partition_activations true (DeepSpeed rejects it "
                "otherwise); set partition_activations, or drop this key");
    diag->Check(a.has_number_checkpoints(),
                k + "contiguous_memory_optimization",
                "true needs number_checkpoints (DeepSpeed rejects it "
                "otherwise); set number_checkpoints to the number of layers");
  }
  struct KeyNote {
    const char* key;
    bool given;
    const char* note;
  };
  const KeyNote notes[] = {
      {"partition_activations", a.partition_activations(),
       "changes nothing in zero3: each rank is its own model-parallel group, "
       "so its kept layer inputs have no other rank to be partitioned "
       "across; ignored"},
      // Honoured with recompute on: the kept layer inputs live in pinned
      // host memory between forward and backward (core/model/transformer.h).
      {"cpu_checkpointing",
       a.cpu_checkpointing() &&
           config.zero3().activation_checkpoint_interval() == 0,
       "moves the kept layer inputs to host memory only with recompute on; "
       "ignored until zero3.activation_checkpoint_interval is set"},
      {a.contiguous_memory_optimization() ? "contiguous_memory_optimization"
                                          : "number_checkpoints",
       a.contiguous_memory_optimization() || a.has_number_checkpoints(),
       "changes nothing in zero3: the kept layer inputs always live in the "
       "preallocated activation arena, sized from the model; ignored"},
      {"synchronize_checkpoint_boundary", a.synchronize_checkpoint_boundary(),
       "not needed in zero3: the recompute is ordered on the compute stream, "
       "with no host synchronization; ignored"},
      {"profile", a.profile(),
       "ignored: the recompute's kernels appear in train --mode timing's "
       "trace and --profile-ops as \"L<layer> recompute\""},
  };
  for (const KeyNote& n : notes) {
    if (n.given) diag->Notice(k + n.key, n.note);
  }
}

}  // namespace config
}  // namespace zero3
