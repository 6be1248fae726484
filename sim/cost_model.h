// Copyright 2026 The zero3 Authors.
//
// cost_model.h: what each simulated operation costs, from a HardwareProfile.
//
// Terms (all durations in integer nanoseconds):
//  - kernel: max(FLOPs / (peak · efficiency), bytes / (HBM · hbm_efficiency)),
//    at least min_kernel_us. Matmul efficiency depends on the GEMM's size
//    (profile curve by FLOPs); attention uses attention_efficiency; other
//    kernels are memory-bound at fp32 peak.
//  - copy: copy_latency_us + bytes / bandwidth, with the pinned or pageable
//    bandwidth of its direction; device-to-device copies move 2·bytes over HBM.
//  - collective (ring): base_latency + (n−1)·step_latency +
//    factor · bytes · (n−1)/n / busbw(bytes), factor 1 for all-gather and
//    reduce-scatter, 2 for all-reduce, where bytes is the total size (the
//    all-gather output, the reduce-scatter input) and busbw comes from the
//    profile's curve at that size (nccl-tests' bus bandwidth).
//  - host task: host_task_overhead + max(FLOPs / (threads · GFLOP/s per
//    core), bytes / min(threads · per-thread bandwidth, per-rank bandwidth)),
//    threads capped at the rank's cores.
//  - host API calls: fixed costs from the host profile.
// Explain() prints these terms for one operation, for users to check.
// Immutable after construction; thread-safe.

#ifndef ZERO3_SIM_COST_MODEL_H_
#define ZERO3_SIM_COST_MODEL_H_

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/kernels/dtype.h"
#include "core/kernels/op_args.h"
#include "sim/profile.pb.h"

namespace zero3 {
namespace sim {

// kOptimizer: the device optimizer's streaming kernels, elementwise work
// that runs after the backward pass with no communication beside it.
enum class ComputeClass { kMatmul, kAttention, kElementwise, kOptimizer };

struct KernelWork {
  ComputeClass compute_class = ComputeClass::kElementwise;
  // The kernel's kind (runtime::KernelCall::OpName, text with static
  // storage), for GpuProfile.kernel_in_step_factor; may be empty.
  absl::string_view kind;
  double flops = 0;
  double bytes = 0;  // read + written
  // Matmuls: the GEMM's shape, for measured tables.
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  // Attention: the backward pass (its own efficiency) and the shape, for
  // measured tables.
  bool backward = false;
  int64_t batch = 0, seq = 0, num_heads = 0, num_kv_heads = 0, head_dim = 0;
};

// The work of a matmul or attention kernel, with the shape the measured
// tables are keyed by: for the simulator's kernel calls and for whatif
// --explain alike.
KernelWork MatmulWork(const kernels::MatmulArgs& args, kernels::DType dtype);
KernelWork AttentionWork(const kernels::AttentionArgs& args, bool backward,
                         kernels::DType dtype);

enum class CopyKind {
  kPinnedH2D,
  kPinnedD2H,
  kPageableH2D,
  kPageableD2H,
  kDeviceToDevice,
  kHostToHost,
};

enum class CollectiveKind {
  kAllGather,
  kReduceScatter,
  kAllReduce,
  kBroadcast
};

const char* CollectiveKindName(CollectiveKind kind);

class CostModel {
 public:
  // Fails naming the first missing or non-positive figure.
  static absl::StatusOr<CostModel> Create(const HardwareProfile& profile);

  const HardwareProfile& profile() const { return profile_; }

  // Ranks sharing one node's host (see HostProfile.cores_per_node); 1 until
  // set. The simulator sets min(world size, fabric.gpus_per_node).
  void set_ranks_per_node(int ranks);
  // Ranks in the job; 1 until set. With one, kernels' in-step factors are
  // scaled by GpuProfile.single_gpu_in_step_scale.
  void set_world_size(int ranks);
  // A transfer of `bytes` between host memory and the node's NVMe drives
  // (a `write` or a read) at this rank's share of their rate; -1 where the
  // profile has no NVMe figures.
  int64_t DriveNanos(int64_t bytes, bool write) const;
  // A rank's share of the host: cores, and memory bandwidth in GB/s (its
  // socket's, HostProfile.sockets_per_node, among the ranks on it).
  int HostCores() const;
  double HostMemoryGbps() const;
  // The memory bandwidth (GB/s) a host task on `threads` threads reaches
  // (threads already capped at HostCores()): HostProfile's
  // memory_bandwidth_by_threads where given, else threads x the per-thread
  // figure; at most the rank's share of the node either way.
  double HostTaskGbps(int threads) const;
  // A strided device-to-device copy (Stream::Copy2D) of `bytes`; whether it
  // runs on a copy engine (GpuProfile.copy2d_gbps) rather than the SMs.
  int64_t Copy2DNanos(int64_t bytes) const;
  bool copy2d_on_copy_engine() const {
    return profile_.gpu().has_copy2d_gbps();
  }

  int64_t KernelNanos(const KernelWork& work) const;
  int64_t CopyNanos(int64_t bytes, CopyKind kind) const;
  // `spans_nodes`: the group crosses node boundaries.
  int64_t CollectiveNanos(CollectiveKind kind, int64_t total_bytes, int ranks,
                          bool spans_nodes) const;
  int64_t HostTaskNanos(double flops, int64_t bytes, int threads) const;
  // Host time to stage a small pageable H2D copy before the call returns.
  int64_t StagingNanos(int64_t bytes) const;
  // Host time cudaHostAlloc spends pinning `bytes`.
  int64_t PinNanos(int64_t bytes) const;

  // How much longer a kernel runs per ns it overlaps a collective on its
  // GPU: collective_sms / (sm_count - collective_sms); 0 where the profile
  // gives either figure as 0.
  double collective_sm_charge() const { return collective_sm_charge_; }

  int64_t launch_nanos() const { return launch_ns_; }
  int64_t copy_call_nanos() const { return copy_call_ns_; }
  int64_t event_call_nanos() const { return event_call_ns_; }
  // host.stream_queue_depth; 0 when unbounded.
  int stream_queue_depth() const {
    return std::max(0, profile_.host().stream_queue_depth());
  }
  // The launch queue's depth and each command kind's room in it, in
  // thousandths of a unit (host.stream_queue_depth, host.queue_units_*).
  int64_t queue_depth_milli() const {
    return int64_t{1000} * stream_queue_depth();
  }
  int64_t queue_kernel_milli() const { return queue_kernel_milli_; }
  int64_t queue_gemm_milli() const { return queue_gemm_milli_; }
  int64_t queue_event_milli() const { return queue_event_milli_; }
  int64_t queue_timed_event_milli() const { return queue_timed_event_milli_; }
  int64_t queue_wait_milli() const { return queue_wait_milli_; }
  int64_t queue_copy_milli() const { return queue_copy_milli_; }
  int64_t collective_call_nanos() const { return collective_call_ns_; }
  int64_t alloc_call_nanos() const { return alloc_call_ns_; }

  // Efficiency of a matmul of `flops` against peak (profile curve).
  double MatmulEfficiency(double flops) const;
  // The measured time of a GEMM of this shape, or an interpolation of
  // measured ones (see GpuProfile.gemm_table); negative when the table
  // cannot say.
  double MeasuredGemmUs(const KernelWork& work) const;
  // Time from gpu.attention_table, or -1 when no point has the shape.
  double MeasuredAttentionUs(const KernelWork& work) const;
  // Bus bandwidth in GB/s for a collective of `total_bytes`.
  // A collective over `ranks` ranks on `nodes` nodes (> 1) by the profile's
  // node topology (fabric.nics_per_node > 0): the algorithm NCCL would pick
  // (ring, or tree for all-reduce where faster) and its time.
  struct NodeCollective {
    bool tree = false;
    double busbw_gbps = 0;  // the bandwidth the chosen algorithm reaches
    int64_t nanos = 0;
  };
  NodeCollective CollectiveAcrossNodes(CollectiveKind kind, int64_t total_bytes,
                                       int ranks, int nodes) const;
  // Whether the profile describes its nodes' network (nics_per_node > 0).
  bool has_node_topology() const;

  double BusBandwidthGbps(CollectiveKind kind, int64_t total_bytes,
                          bool spans_nodes) const;

  // The cost model's terms for one operation of each kind, with this
  // profile's figures, as text.
  std::string ExplainKernel(const KernelWork& work) const;
  std::string ExplainCopy(int64_t bytes, CopyKind kind) const;
  std::string ExplainCollective(CollectiveKind kind, int64_t total_bytes,
                                int ranks, bool spans_nodes) const;
  std::string ExplainHostTask(double flops, int64_t bytes, int threads) const;

 private:
  explicit CostModel(const HardwareProfile& profile);
  // The in-step factor of a kernel of class `c` and kind `kind`, and the
  // profile field it comes from.
  double InStepFactor(ComputeClass c, absl::string_view kind,
                      std::string* field = nullptr) const;
  // The fixed time a kernel of class `c` adds in a step
  // (gpu.elementwise_in_step_us), in ns.
  double InStepExtraNs(ComputeClass c) const;

  HardwareProfile profile_;
  // The ranks of this node in a group of `gpus_per_group` GPUs that the
  // ranks fill in order (a socket's, a PCIe switch's): at least 1.
  int RanksSharing(int gpus_per_group) const;
  int RanksPerSocket() const;
  // The node's memory bandwidth (GB/s) per rank: its socket's part, shared.
  double NodeGbpsPerRank() const;
  // A pinned copy's rate (GB/s) at most its part of its PCIe switch's
  // uplink (HostLinkProfile.switch_uplink_gbps).
  double SwitchShare(double gbps) const;
  int ranks_per_node_ = 1;
  int world_size_ = 1;
  int64_t launch_ns_, copy_call_ns_, event_call_ns_, collective_call_ns_,
      alloc_call_ns_;
  double collective_sm_charge_ = 0;
  int64_t queue_kernel_milli_, queue_gemm_milli_, queue_event_milli_,
      queue_timed_event_milli_, queue_wait_milli_, queue_copy_milli_;
  absl::flat_hash_map<std::string, double> kind_factor_;
};

// Interpolates a curve linearly in log(size), clamping at the ends.
double InterpolateCurve(
    const google::protobuf::RepeatedPtrField<CurvePoint>& curve, double size);

}  // namespace sim
}  // namespace zero3

#endif  // ZERO3_SIM_COST_MODEL_H_
