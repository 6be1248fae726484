// Copyright 2026 The zero3 Authors.

#include "core/config/deepspeed_keys.h"

#include <iterator>

namespace zero3 {
namespace config {
namespace {

using K = DeepSpeedKeyKind;

// Notes shared by several keys.
constexpr absl::string_view kStage12Only =
    "used by ZeRO stages 1 and 2 only; ignored (DeepSpeed ignores it for "
    "stage 3 too)";
constexpr absl::string_view kZeroPlusPlus =
    "ZeRO++ (hierarchical partitions, quantized weights and gradients) is "
    "not implemented; ignored: parameters and gradients travel unquantized";
constexpr absl::string_view kMics =
    "MiCS sharding is not implemented; ignored: parameters are sharded "
    "across all ranks";
constexpr absl::string_view kMonitor =
    "this monitoring backend is not implemented; ignored: csv_monitor and "
    "tensorboard are, and zero3 train --metrics writes JSON Lines";
constexpr absl::string_view kCheckpointSection =
    "DeepSpeed's checkpoint options do not apply: zero3 train saves with "
    "--save and resumes with --resume (docs/checkpoints.md); ignored";
constexpr absl::string_view kAsyncCheckpointing =
    "these checkpoint engines are not implemented; ignored: zero3 train "
    "--save writes asynchronously itself (zero3.checkpoint_write, "
    "docs/checkpoints.md)";
constexpr absl::string_view kReshardCheckpoint =
    "ignored: a checkpoint always resumes on another number of ranks, "
    "micro-batch or accumulation that keeps the global batch "
    "(docs/checkpoints.md)";
constexpr absl::string_view kFetchAlgorithm =
    "not implemented; ignored: each module's parameters are fetched with one "
    "coalesced all-gather";

// The table. Sources: deepspeed/runtime/config.py (_initialize_params),
// runtime/constants.py, runtime/zero/config.py, runtime/zero/offload_config.py,
// runtime/precision_config.py, monitor/config.py, profiling/constants.py and
// DeepSpeed's docs/_pages/config-json.md.
constexpr DeepSpeedKey kKeys[] = {
    // --- Top level ---
    {"", "bfloat16", K::kAlias, "bf16", ""},
    {"", "wall_clock_breakdown", K::kIgnored, "",
     "DeepSpeed's timing log; ignored"},
    {"", "memory_breakdown", K::kIgnored, "",
     "DeepSpeed's memory log; ignored"},
    {"", "dump_state", K::kIgnored, "", "DeepSpeed's state dump; ignored"},
    {"", "flops_profiler", K::kIgnored, "",
     "the FLOPs profiler is not implemented; ignored"},
    {"", "comms_logger", K::kIgnored, "",
     "the communication logger is not implemented; ignored"},
    {"", "wandb", K::kIgnored, "", kMonitor},
    {"", "comet", K::kIgnored, "", kMonitor},
    {"", "communication_data_type", K::kValueRule, "", ""},
    {"", "seq_parallel_communication_data_type", K::kValueRule, "", ""},
    {"", "sequence_parallel_size", K::kValueRule, "", ""},
    {"", "data_types", K::kIgnored, "", "not configurable in zero3; ignored"},
    {"", "prescale_gradients", K::kValueRule, "", ""},
    {"", "gradient_predivide_factor", K::kValueRule, "", ""},
    {"", "gradient_allreduce_op", K::kValueRule, "", ""},
    {"", "sparse_gradients", K::kIgnored, "",
     "sparse gradients are not implemented; ignored"},
    {"", "disable_allgather", K::kIgnored, "", "stage 1 only; ignored"},
    {"", "managed_gradient_accumulation", K::kIgnored, "",
     "ignored: zero3 always manages gradient accumulation itself"},
    {"", "zero_allow_untested_optimizer", K::kIgnored, "",
     "ignored: zero3 uses its own Adam/AdamW"},
    {"", "zero_force_ds_cpu_optimizer", K::kIgnored, "",
     "ignored: with offload, zero3 always steps its own host Adam/AdamW"},
    {"", "amp", K::kValueRule, "", ""},
    {"", "torch_autocast", K::kIgnored, "",
     "torch autocast is not implemented; ignored: use bf16 or fp16"},
    {"", "graph_harvesting", K::kIgnored, "", "not implemented; ignored"},
    {"", "compile", K::kIgnored, "",
     "torch.compile settings; not applicable, ignored"},
    {"", "sparse_attention", K::kIgnored, "",
     "sparse attention is not implemented; ignored"},
    {"", "pipeline", K::kIgnored, "",
     "pipeline parallelism is not implemented; ignored: zero3 is "
     "data-parallel only"},
    {"", "tensor_parallel", K::kIgnored, "",
     "tensor parallelism is not implemented; ignored: zero3 is data-parallel "
     "only"},
    {"", "expert_parallel", K::kIgnored, "",
     "expert parallelism is not implemented; ignored: zero3 is data-parallel "
     "only"},
    {"", "use_data_before_expert_parallelism", K::kIgnored, "",
     "expert parallelism is not implemented; ignored"},
    {"", "hybrid_engine", K::kIgnored, "",
     "the hybrid inference engine is not implemented; ignored"},
    {"", "elasticity", K::kIgnored, "",
     "elastic training is not implemented; ignored: the batch sizes are "
     "used as given"},
    {"", "autotuning", K::kIgnored, "",
     "DeepSpeed's autotuner is not implemented; ignored"},
    {"", "checkpoint", K::kIgnored, "", kCheckpointSection},
    {"", "nebula", K::kIgnored, "", kAsyncCheckpointing},
    {"", "datastates_ckpt", K::kIgnored, "", kAsyncCheckpointing},
    {"", "compression_training", K::kIgnored, "",
     "compression is not implemented; ignored"},
    {"", "quantize_training", K::kIgnored, "",
     "quantized training is not implemented; ignored"},
    {"", "weight_quantization", K::kIgnored, "",
     "weight quantization is not implemented; ignored"},
    {"", "data_efficiency", K::kIgnored, "",
     "data-efficiency pipelines are not implemented; ignored"},
    {"", "curriculum_learning", K::kIgnored, "",
     "curriculum learning is not implemented; ignored"},
    {"", "eigenvalue", K::kIgnored, "", "not implemented; ignored"},
    {"", "progressive_layer_drop", K::kIgnored, "",
     "progressive layer drop is not implemented; ignored"},
    {"", "dataloader_drop_last", K::kIgnored, "",
     "zero3 has no DeepSpeed data loader; ignored"},
    {"", "log_level", K::kIgnored, "", "DeepSpeed's log level; ignored"},
    {"", "timers", K::kIgnored, "", "DeepSpeed's timers; ignored"},
    {"", "vocabulary_size", K::kIgnored, "", "not used; ignored"},

    // --- bf16 ---
    {"bf16", "immediate_grad_update", K::kIgnored, "",
     "not implemented; ignored"},
    {"bf16", "check_grad_overflow", K::kIgnored, "",
     "ignored: a step whose gradient norm is not finite is always skipped "
     "(parameters unchanged), in bf16 as in fp16 and fp32"},

    // --- fp16 ---
    {"fp16", "auto_cast", K::kIgnored, "", "not implemented; ignored"},
    {"fp16", "fp16_master_weights_and_grads", K::kIgnored, "",
     "not implemented; ignored: master weights and their gradients are "
     "fp32"},

    // --- optimizer ---
    {"optimizer", "legacy_fusion", K::kIgnored, "", "ignored"},
    {"optimizer.params", "torch_adam", K::kIgnored, "",
     "ignored: zero3 steps its own Adam/AdamW, which computes what "
     "torch.optim.Adam/AdamW compute"},
    {"optimizer.params", "fp32_optimizer_states", K::kIgnored, "",
     "ignored: Adam moments are fp32 unless bf16.bf16_optimizer_states "
     "(as DeepSpeed sets it from that key)"},
    {"optimizer.params", "amsgrad", K::kRejectedIfTrue, "",
     "AMSGrad is not implemented (nor by DeepSpeed's CPU Adam); remove the "
     "key or set it to false"},
    {"optimizer.params", "max_grad_norm", K::kRejected, "",
     "not an optimizer parameter (DeepSpeed rejects it too); use the "
     "top-level gradient_clipping instead"},

    // --- zero_optimization ---
    {"zero_optimization", "prefetch_bucket_size", K::kAlias,
     "stage3_prefetch_bucket_size", ""},
    {"zero_optimization", "param_persistence_threshold", K::kAlias,
     "stage3_param_persistence_threshold", ""},
    {"zero_optimization", "model_persistence_threshold", K::kAlias,
     "stage3_model_persistence_threshold", ""},
    {"zero_optimization", "max_live_parameters", K::kAlias,
     "stage3_max_live_parameters", ""},
    {"zero_optimization", "max_reuse_distance", K::kAlias,
     "stage3_max_reuse_distance", ""},
    {"zero_optimization", "gather_16bit_weights_on_model_save", K::kAlias,
     "stage3_gather_16bit_weights_on_model_save", ""},
    {"zero_optimization", "cpu_offload", K::kDeprecated,
     "zero_optimization.offload_optimizer.device", ""},
    {"zero_optimization", "cpu_offload_param", K::kDeprecated,
     "zero_optimization.offload_param.device", ""},
    // Not a field in DeepSpeed (it rejects it), but the old memory docs told
    // users to write it.
    {"zero_optimization", "cpu_offload_params", K::kDeprecated,
     "zero_optimization.offload_param.device", ""},
    {"zero_optimization", "cpu_offload_use_pin_memory", K::kDeprecated,
     "zero_optimization.offload_optimizer.pin_memory", ""},
    {"zero_optimization", "stage3_gather_fp16_weights_on_model_save",
     K::kDeprecated,
     "zero_optimization.stage3_gather_16bit_weights_on_model_save", ""},
    {"zero_optimization", "allgather_bucket_size", K::kIgnored, "",
     kStage12Only},
    {"zero_optimization", "allgather_partitions", K::kIgnored, "",
     kStage12Only},
    {"zero_optimization", "use_multi_rank_bucket_allreduce", K::kIgnored, "",
     kStage12Only},
    {"zero_optimization", "round_robin_gradients", K::kIgnored, "",
     kStage12Only},
    {"zero_optimization", "ignore_unused_parameters", K::kIgnored, "",
     kStage12Only},
    {"zero_optimization", "legacy_stage1", K::kIgnored, "", kStage12Only},
    {"zero_optimization", "load_from_fp32_weights", K::kIgnored, "",
     "ignored: zero3 always resumes from the saved fp32 master weights "
     "(DeepSpeed's default, true)"},
    {"zero_optimization", "elastic_checkpoint", K::kIgnored, "",
     kReshardCheckpoint},
    {"zero_optimization", "pipeline_loading_checkpoint", K::kIgnored, "",
     kReshardCheckpoint},
    {"zero_optimization", "stage3_module_granularity_threshold", K::kIgnored,
     "",
     "automatic leaf modules are not implemented; ignored: every module "
     "fetches its own parameters"},
    {"zero_optimization", "module_granularity_threshold", K::kIgnored, "",
     "automatic leaf modules are not implemented; ignored: every module "
     "fetches its own parameters"},
    {"zero_optimization", "stage3_use_all_reduce_for_fetch_params", K::kIgnored,
     "", kFetchAlgorithm},
    {"zero_optimization", "use_all_reduce_for_fetch_params", K::kIgnored, "",
     kFetchAlgorithm},
    {"zero_optimization", "stage3_allgather_sequential", K::kIgnored, "",
     kFetchAlgorithm},
    {"zero_optimization", "allgather_sequential", K::kIgnored, "",
     kFetchAlgorithm},
    {"zero_optimization", "zero_hpz_partition_size", K::kIgnored, "",
     kZeroPlusPlus},
    {"zero_optimization", "zero_quantized_weights", K::kIgnored, "",
     kZeroPlusPlus},
    {"zero_optimization", "zero_quantized_nontrainable_weights", K::kIgnored,
     "", kZeroPlusPlus},
    {"zero_optimization", "zero_quantized_gradients", K::kIgnored, "",
     kZeroPlusPlus},
    {"zero_optimization", "zeropp_loco_param", K::kIgnored, "", kZeroPlusPlus},
    {"zero_optimization", "mics_shard_size", K::kIgnored, "", kMics},
    {"zero_optimization", "mics_hierarchical_params_gather", K::kIgnored, "",
     kMics},
    {"zero_optimization", "memory_efficient_linear", K::kIgnored, "",
     "a PyTorch zero.Init patch; not applicable, ignored"},
    {"zero_optimization", "override_module_apply", K::kIgnored, "",
     "a PyTorch zero.Init patch; not applicable, ignored"},
    {"zero_optimization", "log_trace_cache_warnings", K::kIgnored, "",
     "ignored"},
    {"zero_optimization", "enable_sanity_checks", K::kIgnored, "", "ignored"},
    {"zero_optimization", "save_muon_momentum_buffer_in_memory", K::kIgnored,
     "", "the Muon optimizer is not implemented; ignored"},
    {"zero_optimization", "leaf_module", K::kIgnored, "",
     "leaf-module settings are not implemented; ignored"},
    {"zero_optimization", "zenflow", K::kValueRule, "", ""},

    // --- zero_optimization.offload_optimizer ---
    {"zero_optimization.offload_optimizer", "cpuadam_cores_perc", K::kIgnored,
     "", "ignored: set zero3.optimizer_threads instead"},
};

}  // namespace

absl::Span<const DeepSpeedKey> DeepSpeedKeys() {
  return absl::MakeConstSpan(kKeys, std::size(kKeys));
}

const DeepSpeedKey* FindDeepSpeedKey(absl::string_view parent,
                                     absl::string_view name) {
  for (const DeepSpeedKey& key : kKeys) {
    if (key.parent == parent && key.name == name) return &key;
  }
  return nullptr;
}

}  // namespace config
}  // namespace zero3
