// Copyright 2026 The zero3 Authors.

#include "sim/cost_model.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/kernels/op_cost.h"
#include "core/util/check.h"

namespace zero3 {
namespace sim {
namespace {

int64_t Nanos(double ns) { return static_cast<int64_t>(std::llround(ns)); }
int64_t MicrosToNanos(double us) { return Nanos(us * 1e3); }
// bytes / (GB/s) in ns: 1 GB/s moves one byte per ns.
double TransferNs(double bytes, double gbps) { return bytes / gbps; }

absl::Status Require(bool ok, absl::string_view field) {
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("hardware profile: ", field, " must be set and positive"));
}

// Each kind named once, with a positive factor.
absl::Status CheckKernelFactors(const GpuProfile& g) {
  absl::flat_hash_map<std::string, int> seen;
  for (const KernelFactor& k : g.kernel_in_step_factor()) {
    if (k.kind().empty() || !(k.factor() > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("hardware profile: gpu.kernel_in_step_factor needs a "
                       "kind and a positive factor; got kind '",
                       k.kind(), "' factor ", k.factor()));
    }
    if (++seen[k.kind()] > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("hardware profile: gpu.kernel_in_step_factor names '",
                       k.kind(), "' twice; keep one"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckCurve(const google::protobuf::RepeatedPtrField<CurvePoint>& c,
                        absl::string_view field, bool required) {
  if (c.empty()) return Require(!required, field);
  double last = 0;
  for (const CurvePoint& p : c) {
    if (!(p.size() > 0) || !(p.value() > 0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "hardware profile: ", field, " points need positive size and value"));
    }
    if (p.size() <= last) {
      return absl::InvalidArgumentError(
          absl::StrCat("hardware profile: ", field, " sizes must increase"));
    }
    last = p.size();
  }
  return absl::OkStatus();
}

}  // namespace

const char* CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllGather:
      return "all-gather";
    case CollectiveKind::kReduceScatter:
      return "reduce-scatter";
    case CollectiveKind::kAllReduce:
      return "all-reduce";
    case CollectiveKind::kBroadcast:
      return "broadcast";
  }
  return "?";
}

double InterpolateCurve(
    const google::protobuf::RepeatedPtrField<CurvePoint>& curve, double size) {
  ZR_CHECK(!curve.empty());
  if (size <= curve.Get(0).size()) return curve.Get(0).value();
  for (int i = 1; i < curve.size(); ++i) {
    const CurvePoint& hi = curve.Get(i);
    if (size <= hi.size()) {
      const CurvePoint& lo = curve.Get(i - 1);
      const double f = (std::log(size) - std::log(lo.size())) /
                       (std::log(hi.size()) - std::log(lo.size()));
      return lo.value() + f * (hi.value() - lo.value());
    }
  }
  return curve.Get(curve.size() - 1).value();
}

absl::StatusOr<CostModel> CostModel::Create(const HardwareProfile& p) {
  const GpuProfile& g = p.gpu();
  const HostLinkProfile& l = p.host_link();
  const HostProfile& h = p.host();
  const FabricProfile& f = p.fabric();
  for (const absl::Status& s : {
           Require(g.memory_gib() > 0, "gpu.memory_gib"),
           Require(g.peak_bf16_tflops() > 0, "gpu.peak_bf16_tflops"),
           Require(g.peak_fp32_tflops() > 0, "gpu.peak_fp32_tflops"),
           Require(g.hbm_bandwidth_gbps() > 0, "gpu.hbm_bandwidth_gbps"),
           Require(g.hbm_efficiency() > 0 && g.hbm_efficiency() <= 1,
                   "gpu.hbm_efficiency (in (0, 1])"),
           Require(
               g.attention_efficiency() > 0 && g.attention_efficiency() <= 1,
               "gpu.attention_efficiency (in (0, 1])"),
           CheckCurve(g.matmul_efficiency(), "gpu.matmul_efficiency", true),
           Require(l.pinned_h2d_gbps() > 0, "host_link.pinned_h2d_gbps"),
           Require(l.pinned_d2h_gbps() > 0, "host_link.pinned_d2h_gbps"),
           Require(l.pageable_h2d_gbps() > 0, "host_link.pageable_h2d_gbps"),
           Require(l.pageable_d2h_gbps() > 0, "host_link.pageable_d2h_gbps"),
           Require(l.staging_gbps() > 0, "host_link.staging_gbps"),
           Require(l.bidirectional_efficiency() > 0 &&
                       l.bidirectional_efficiency() <= 1,
                   "host_link.bidirectional_efficiency (in (0, 1])"),
           Require(l.pageable_shared_efficiency() > 0 &&
                       l.pageable_shared_efficiency() <= 1,
                   "host_link.pageable_shared_efficiency (in (0, 1])"),
           Require(h.cores_per_rank() > 0, "host.cores_per_rank"),
           Require(h.memory_bandwidth_gbps_per_rank() > 0,
                   "host.memory_bandwidth_gbps_per_rank"),
           Require(h.memory_bandwidth_gbps_per_thread() > 0,
                   "host.memory_bandwidth_gbps_per_thread"),
           Require(h.gflops_per_core() > 0, "host.gflops_per_core"),
           Require(h.pin_gbps() > 0, "host.pin_gbps"),
           Require(h.stream_queue_depth() >= 0,
                   "host.stream_queue_depth (0 or more; 0: unbounded)"),
           Require(h.queue_units_per_kernel() >= 0.001 &&
                       h.queue_units_per_gemm() >= 0.001 &&
                       h.queue_units_per_event() >= 0.001 &&
                       h.queue_units_per_timed_event() >= 0.001 &&
                       h.queue_units_per_wait() >= 0.001 &&
                       h.queue_units_per_copy() >= 0.001,
                   "host.queue_units_per_kernel, _gemm, _event, "
                   "_timed_event, _wait and _copy (0.001 or more; the "
                   "smallest command's room is 1)"),
           CheckCurve(f.allgather_busbw(), "fabric.allgather_busbw", true),
           CheckCurve(f.reduce_scatter_busbw(), "fabric.reduce_scatter_busbw",
                      true),
           CheckCurve(f.allreduce_busbw(), "fabric.allreduce_busbw", false),
           CheckCurve(f.inter_node_busbw(), "fabric.inter_node_busbw", false),
           CheckCurve(l.pageable_d2h_curve(), "host_link.pageable_d2h_curve",
                      false),
           CheckCurve(h.memory_bandwidth_by_threads(),
                      "host.memory_bandwidth_by_threads", false),
           Require(f.gpus_per_node() > 0, "fabric.gpus_per_node"),
           Require(f.nics_per_node() >= 0, "fabric.nics_per_node (0: none)"),
           Require(f.nics_per_node() == 0 || f.nic_gbps() > 0,
                   "fabric.nic_gbps (with nics_per_node)"),
           Require(f.nic_latency_us() >= 0, "fabric.nic_latency_us"),
           Require(f.spine_oversubscription() >= 1,
                   "fabric.spine_oversubscription (1 or more)"),
           Require(f.tree_efficiency() > 0 && f.tree_efficiency() <= 1,
                   "fabric.tree_efficiency (in (0, 1])"),
           Require(g.sm_count() >= 0, "gpu.sm_count (0: not charged)"),
           Require(f.collective_sms() >= 0 &&
                       (f.collective_sms() == 0 || g.sm_count() == 0 ||
                        f.collective_sms() < g.sm_count()),
                   "fabric.collective_sms (0 or more, below gpu.sm_count)"),
           Require(g.gemm_in_step_factor() > 0, "gpu.gemm_in_step_factor"),
           Require(g.attention_in_step_factor() > 0,
                   "gpu.attention_in_step_factor"),
           Require(g.elementwise_in_step_factor() > 0,
                   "gpu.elementwise_in_step_factor"),
           Require(g.single_gpu_in_step_scale() > 0,
                   "gpu.single_gpu_in_step_scale"),
           Require(!g.has_optimizer_in_step_factor() ||
                       g.optimizer_in_step_factor() > 0,
                   "gpu.optimizer_in_step_factor"),
           Require(!g.has_copy2d_gbps() || g.copy2d_gbps() > 0,
                   "gpu.copy2d_gbps"),
           Require(g.elementwise_in_step_us() >= 0,
                   "gpu.elementwise_in_step_us (0: none)"),
           CheckKernelFactors(g),
           Require(!h.has_cores_per_node() || h.cores_per_node() > 0,
                   "host.cores_per_node"),
           Require(h.sockets_per_node() >= 1 &&
                       h.sockets_per_node() <= f.gpus_per_node(),
                   "host.sockets_per_node (1 to fabric.gpus_per_node)"),
           Require(l.gpus_per_switch() >= 1, "host_link.gpus_per_switch"),
           Require(!h.has_nvme_read_gbps_per_node() ||
                       h.nvme_read_gbps_per_node() > 0,
                   "host.nvme_read_gbps_per_node"),
           Require(!h.has_nvme_write_gbps_per_node() ||
                       h.nvme_write_gbps_per_node() > 0,
                   "host.nvme_write_gbps_per_node"),
           Require(h.nvme_request_us() >= 0, "host.nvme_request_us"),
           Require(!l.has_switch_uplink_gbps() || l.switch_uplink_gbps() > 0,
                   "host_link.switch_uplink_gbps"),
           Require(!h.has_memory_bandwidth_gbps_per_node() ||
                       h.memory_bandwidth_gbps_per_node() > 0,
                   "host.memory_bandwidth_gbps_per_node"),
       }) {
    if (!s.ok()) return s;
  }
  return CostModel(p);
}

CostModel::CostModel(const HardwareProfile& profile) : profile_(profile) {
  for (const KernelFactor& k : profile_.gpu().kernel_in_step_factor()) {
    kind_factor_[k.kind()] = k.factor();
  }
  const HostProfile& h = profile_.host();
  launch_ns_ = MicrosToNanos(h.launch_us());
  copy_call_ns_ = MicrosToNanos(h.copy_call_us());
  event_call_ns_ = MicrosToNanos(h.event_call_us());
  collective_call_ns_ = MicrosToNanos(h.collective_call_us());
  alloc_call_ns_ = MicrosToNanos(h.alloc_call_us());
  const int sms = profile_.gpu().sm_count();
  const int held = profile_.fabric().collective_sms();
  collective_sm_charge_ =
      sms > 0 && held > 0 ? static_cast<double>(held) / (sms - held) : 0.0;
  queue_kernel_milli_ = std::llround(1000 * h.queue_units_per_kernel());
  queue_gemm_milli_ = std::llround(1000 * h.queue_units_per_gemm());
  queue_event_milli_ = std::llround(1000 * h.queue_units_per_event());
  queue_timed_event_milli_ =
      std::llround(1000 * h.queue_units_per_timed_event());
  queue_wait_milli_ = std::llround(1000 * h.queue_units_per_wait());
  queue_copy_milli_ = std::llround(1000 * h.queue_units_per_copy());
}

double CostModel::MatmulEfficiency(double flops) const {
  return InterpolateCurve(profile_.gpu().matmul_efficiency(), flops);
}

KernelWork MatmulWork(const kernels::MatmulArgs& args, kernels::DType dtype) {
  const kernels::OpCost cost = kernels::MatmulCost(args, dtype);
  KernelWork w;
  w.compute_class = ComputeClass::kMatmul;
  w.flops = static_cast<double>(cost.flops);
  w.bytes = static_cast<double>(cost.bytes_read + cost.bytes_written);
  w.m = args.m;
  w.n = args.n;
  w.k = args.k;
  w.trans_a = args.trans_a;
  w.trans_b = args.trans_b;
  return w;
}

KernelWork AttentionWork(const kernels::AttentionArgs& args, bool backward,
                         kernels::DType dtype) {
  const kernels::OpCost cost = backward
                                   ? kernels::AttentionBackwardCost(args, dtype)
                                   : kernels::AttentionForwardCost(args, dtype);
  KernelWork w;
  w.compute_class = ComputeClass::kAttention;
  w.flops = static_cast<double>(cost.flops);
  w.bytes = static_cast<double>(cost.bytes_read + cost.bytes_written);
  w.backward = backward;
  w.batch = args.batch;
  w.seq = args.seq;
  w.num_heads = args.num_heads;
  w.num_kv_heads = args.num_kv_heads;
  w.head_dim = args.head_dim;
  return w;
}

namespace {

// A measured time at `x` from (size, time) points sorted by size, where time
// grows linearly with size once the GPU is full: linear between two measured
// sizes, in proportion to the nearest outside them.
double AlongMeasured(const std::vector<std::pair<double, double>>& points,
                     double x) {
  auto hi =
      std::lower_bound(points.begin(), points.end(), std::make_pair(x, 0.0));
  if (hi != points.end() && hi->first == x) return hi->second;
  if (hi == points.begin()) return hi->second * x / hi->first;
  if (hi == points.end()) return points.back().second * x / points.back().first;
  const auto lo = std::prev(hi);
  const double f = (x - lo->first) / (hi->first - lo->first);
  return lo->second + f * (hi->second - lo->second);
}

}  // namespace

double CostModel::MeasuredGemmUs(const KernelWork& w) const {
  const auto& table = profile_.gpu().gemm_table();
  if (table.empty() || w.compute_class != ComputeClass::kMatmul) return -1;
  // Points that agree with `w` on everything but one dimension, by that
  // dimension's value.
  auto along = [&](bool vary_m) {
    std::vector<std::pair<double, double>> points;
    for (const GemmPoint& p : table) {
      if (p.trans_a() != w.trans_a || p.trans_b() != w.trans_b ||
          p.n() != w.n) {
        continue;
      }
      if (vary_m ? p.k() == w.k : p.m() == w.m) {
        points.push_back({static_cast<double>(vary_m ? p.m() : p.k()), p.us()});
      }
    }
    std::sort(points.begin(), points.end());
    return points;
  };
  for (bool vary_m : {true, false}) {
    const auto points = along(vary_m);
    if (points.empty()) continue;
    return AlongMeasured(points, static_cast<double>(vary_m ? w.m : w.k));
  }
  return -1;
}

double CostModel::MeasuredAttentionUs(const KernelWork& w) const {
  if (w.compute_class != ComputeClass::kAttention) return -1;
  // Points of this shape but for the batch, by batch.
  std::vector<std::pair<double, double>> points;
  for (const AttentionPoint& p : profile_.gpu().attention_table()) {
    if (p.seq() != w.seq || p.num_heads() != w.num_heads ||
        p.num_kv_heads() != w.num_kv_heads || p.head_dim() != w.head_dim ||
        p.batch() <= 0) {
      continue;
    }
    points.push_back({static_cast<double>(p.batch()),
                      w.backward ? p.backward_us() : p.forward_us()});
  }
  if (points.empty()) return -1;
  std::sort(points.begin(), points.end());
  // Below the smallest measured batch this is optimistic: the GPU is less
  // full there.
  return AlongMeasured(points, static_cast<double>(w.batch));
}

void CostModel::set_world_size(int ranks) { world_size_ = std::max(1, ranks); }

void CostModel::set_ranks_per_node(int ranks) {
  ranks_per_node_ = std::max(1, ranks);
}

int CostModel::RanksSharing(int gpus_per_group) const {
  return std::max(1, std::min(ranks_per_node_, std::max(1, gpus_per_group)));
}

int CostModel::RanksPerSocket() const {
  const int sockets = std::max(1, profile_.host().sockets_per_node());
  return RanksSharing(sockets == 1
                          ? ranks_per_node_
                          : profile_.fabric().gpus_per_node() / sockets);
}

double CostModel::NodeGbpsPerRank() const {
  const HostProfile& h = profile_.host();
  const int sockets = std::max(1, h.sockets_per_node());
  return h.memory_bandwidth_gbps_per_node() / sockets / RanksPerSocket();
}

int CostModel::HostCores() const {
  const HostProfile& h = profile_.host();
  int cores = h.cores_per_rank();
  if (h.has_cores_per_node()) {
    const int sockets = std::max(1, h.sockets_per_node());
    cores = std::min(
        cores, std::max(1, h.cores_per_node() / sockets / RanksPerSocket()));
  }
  return cores;
}

double CostModel::HostMemoryGbps() const {
  const HostProfile& h = profile_.host();
  double gbps = h.memory_bandwidth_gbps_per_rank();
  if (h.has_memory_bandwidth_gbps_per_node()) {
    gbps = std::min(gbps, NodeGbpsPerRank());
  }
  return gbps;
}

double CostModel::HostTaskGbps(int threads) const {
  const HostProfile& h = profile_.host();
  const auto& curve = h.memory_bandwidth_by_threads();
  if (curve.empty()) {
    return std::min(threads * h.memory_bandwidth_gbps_per_thread(),
                    HostMemoryGbps());
  }
  const CurvePoint& first = curve.Get(0);
  const CurvePoint& last = curve.Get(curve.size() - 1);
  double gbps;
  if (threads < first.size()) {
    gbps = first.value() * threads / first.size();
  } else if (threads <= last.size() || curve.size() < 2 ||
             !h.has_memory_bandwidth_gbps_per_node()) {
    gbps = InterpolateCurve(curve, threads);
  } else {
    const CurvePoint& before = curve.Get(curve.size() - 2);
    const double slope = (last.value() - before.value()) /
                         (std::log(last.size()) - std::log(before.size()));
    gbps = last.value() +
           std::max(0.0, slope) * (std::log(threads) - std::log(last.size()));
  }
  if (h.has_memory_bandwidth_gbps_per_node()) {
    gbps = std::min(gbps, NodeGbpsPerRank());
  }
  return gbps;
}

int64_t CostModel::Copy2DNanos(int64_t bytes) const {
  const GpuProfile& g = profile_.gpu();
  if (!g.has_copy2d_gbps()) return CopyNanos(bytes, CopyKind::kDeviceToDevice);
  return MicrosToNanos(profile_.host_link().copy_latency_us()) +
         Nanos(TransferNs(bytes, g.copy2d_gbps()));
}

int64_t CostModel::KernelNanos(const KernelWork& work) const {
  const GpuProfile& g = profile_.gpu();
  const double measured = MeasuredGemmUs(work);
  if (measured >= 0) {
    return std::max<int64_t>(
        1,
        Nanos(measured * 1e3 * InStepFactor(ComputeClass::kMatmul, work.kind)));
  }
  const double attention = MeasuredAttentionUs(work);
  if (attention >= 0) {
    return std::max<int64_t>(
        1, Nanos(attention * 1e3 *
                 InStepFactor(ComputeClass::kAttention, work.kind)));
  }
  double peak_tflops = g.peak_fp32_tflops();
  double efficiency = 1.0;
  switch (work.compute_class) {
    case ComputeClass::kMatmul:
      peak_tflops = g.peak_bf16_tflops();
      efficiency = MatmulEfficiency(work.flops);
      break;
    case ComputeClass::kAttention:
      peak_tflops = g.peak_bf16_tflops();
      efficiency = work.backward && g.has_attention_backward_efficiency()
                       ? g.attention_backward_efficiency()
                       : g.attention_efficiency();
      break;
    case ComputeClass::kElementwise:
    case ComputeClass::kOptimizer:
      break;
  }
  const double compute_ns = work.flops / (peak_tflops * 1e3 * efficiency);
  const double memory_ns =
      TransferNs(work.bytes, g.hbm_bandwidth_gbps() * g.hbm_efficiency());
  return std::max(Nanos(std::max(compute_ns, memory_ns) *
                            InStepFactor(work.compute_class, work.kind) +
                        InStepExtraNs(work.compute_class)),
                  MicrosToNanos(g.min_kernel_us()));
}

double CostModel::InStepExtraNs(ComputeClass c) const {
  return c == ComputeClass::kElementwise
             ? profile_.gpu().elementwise_in_step_us() * 1e3
             : 0.0;
}

double CostModel::InStepFactor(ComputeClass c, absl::string_view kind,
                               std::string* field) const {
  const GpuProfile& g = profile_.gpu();
  // The device AdamW runs after the backward pass: no scale for one GPU.
  const double solo = world_size_ == 1 && c != ComputeClass::kOptimizer
                          ? g.single_gpu_in_step_scale()
                          : 1.0;
  if (!kind_factor_.empty()) {
    const auto it = kind_factor_.find(kind);
    if (it != kind_factor_.end()) {
      if (field != nullptr) {
        *field = absl::StrCat("gpu.kernel_in_step_factor[", kind, "]");
      }
      return it->second * solo;
    }
  }
  // Every kernel's cost asks for its factor: name it only when asked.
  absl::string_view name = "gpu.elementwise_in_step_factor";
  double factor = g.elementwise_in_step_factor();
  switch (c) {
    case ComputeClass::kMatmul:
      name = "gpu.gemm_in_step_factor";
      factor = g.gemm_in_step_factor();
      break;
    case ComputeClass::kAttention:
      name = "gpu.attention_in_step_factor";
      factor = g.attention_in_step_factor();
      break;
    case ComputeClass::kElementwise:
      break;
    case ComputeClass::kOptimizer:
      if (g.has_optimizer_in_step_factor()) {
        name = "gpu.optimizer_in_step_factor";
        factor = g.optimizer_in_step_factor();
      }
      break;
  }
  if (field != nullptr) *field = std::string(name);
  return factor * solo;
}

int64_t CostModel::DriveNanos(int64_t bytes, bool write) const {
  const HostProfile& h = profile_.host();
  const bool has = write ? h.has_nvme_write_gbps_per_node()
                         : h.has_nvme_read_gbps_per_node();
  if (!has) return -1;
  const double gbps =
      (write ? h.nvme_write_gbps_per_node() : h.nvme_read_gbps_per_node()) /
      ranks_per_node_;
  return MicrosToNanos(h.nvme_request_us()) + Nanos(TransferNs(bytes, gbps));
}

double CostModel::SwitchShare(double gbps) const {
  const HostLinkProfile& l = profile_.host_link();
  if (!l.has_switch_uplink_gbps()) return gbps;
  return std::min(gbps,
                  l.switch_uplink_gbps() / RanksSharing(l.gpus_per_switch()));
}

int64_t CostModel::CopyNanos(int64_t bytes, CopyKind kind) const {
  const HostLinkProfile& l = profile_.host_link();
  double gbps = 0;
  switch (kind) {
    case CopyKind::kPinnedH2D:
      gbps = SwitchShare(l.pinned_h2d_gbps());
      break;
    case CopyKind::kPinnedD2H:
      gbps = SwitchShare(l.pinned_d2h_gbps());
      break;
    case CopyKind::kPageableH2D:
      gbps = l.pageable_h2d_gbps();
      break;
    case CopyKind::kPageableD2H:
      gbps = l.pageable_d2h_curve().empty()
                 ? l.pageable_d2h_gbps()
                 : InterpolateCurve(l.pageable_d2h_curve(),
                                    static_cast<double>(bytes));
      if (ranks_per_node_ > 1) gbps *= l.pageable_shared_efficiency();
      break;
    case CopyKind::kHostToHost:
      gbps = l.staging_gbps();
      break;
    case CopyKind::kDeviceToDevice: {
      const GpuProfile& g = profile_.gpu();
      return std::max(Nanos(TransferNs(2.0 * bytes, g.hbm_bandwidth_gbps() *
                                                        g.hbm_efficiency())),
                      MicrosToNanos(g.min_kernel_us()));
    }
  }
  return MicrosToNanos(l.copy_latency_us()) + Nanos(TransferNs(bytes, gbps));
}

double CostModel::BusBandwidthGbps(CollectiveKind kind, int64_t total_bytes,
                                   bool spans_nodes) const {
  const FabricProfile& f = profile_.fabric();
  if (spans_nodes && !f.inter_node_busbw().empty()) {
    return InterpolateCurve(f.inter_node_busbw(), total_bytes);
  }
  switch (kind) {
    case CollectiveKind::kReduceScatter:
      return InterpolateCurve(f.reduce_scatter_busbw(), total_bytes);
    case CollectiveKind::kAllReduce:
      if (!f.allreduce_busbw().empty()) {
        return InterpolateCurve(f.allreduce_busbw(), total_bytes);
      }
      return InterpolateCurve(f.allgather_busbw(), total_bytes);
    case CollectiveKind::kAllGather:
    case CollectiveKind::kBroadcast:
      return InterpolateCurve(f.allgather_busbw(), total_bytes);
  }
  return 1;
}

bool CostModel::has_node_topology() const {
  return profile_.fabric().nics_per_node() > 0;
}

CostModel::NodeCollective CostModel::CollectiveAcrossNodes(CollectiveKind kind,
                                                           int64_t total_bytes,
                                                           int ranks,
                                                           int nodes) const {
  const FabricProfile& f = profile_.fabric();
  const bool allreduce = kind == CollectiveKind::kAllReduce;
  const int passes = allreduce ? 2 : 1;
  const double factor =
      kind == CollectiveKind::kBroadcast ? 1.0 : passes * (ranks - 1.0) / ranks;
  // The node's NICs, shared by its ranks; off the rails, the spine's share.
  double net = f.nics_per_node() * f.nic_gbps();
  if (!f.rail_optimized()) net /= std::max(1.0, f.spine_oversubscription());
  const double intra = BusBandwidthGbps(kind, total_bytes, false);
  // Ring: each pass visits every rank, one network hop per node.
  NodeCollective ring;
  ring.busbw_gbps = std::min(intra, net);
  const double ring_us =
      f.base_latency_us() + passes * ((ranks - nodes) * f.step_latency_us() +
                                      nodes * f.nic_latency_us());
  ring.nanos = MicrosToNanos(ring_us) +
               Nanos(TransferNs(factor * total_bytes, ring.busbw_gbps));
  if (!allreduce) return ring;
  // Tree: reduce within the node, a binary tree between nodes, up and down.
  NodeCollective tree;
  tree.tree = true;
  tree.busbw_gbps = std::min(intra, net * f.tree_efficiency());
  const int per_node = (ranks + nodes - 1) / nodes;
  const double depth = std::ceil(std::log2(static_cast<double>(nodes)));
  const double tree_us =
      f.base_latency_us() +
      2 * ((per_node - 1) * f.step_latency_us() + depth * f.nic_latency_us());
  tree.nanos = MicrosToNanos(tree_us) +
               Nanos(TransferNs(factor * total_bytes, tree.busbw_gbps));
  return tree.nanos < ring.nanos ? tree : ring;
}

int64_t CostModel::CollectiveNanos(CollectiveKind kind, int64_t total_bytes,
                                   int ranks, bool spans_nodes) const {
  if (ranks <= 1) return 0;
  const FabricProfile& f = profile_.fabric();
  if (spans_nodes && has_node_topology()) {
    const int per_node = std::max(1, f.gpus_per_node());
    const int nodes = std::max(2, (ranks + per_node - 1) / per_node);
    return CollectiveAcrossNodes(kind, total_bytes, ranks, nodes).nanos;
  }
  const double n = ranks;
  double factor = (n - 1) / n;
  int steps = ranks - 1;
  if (kind == CollectiveKind::kAllReduce) {
    factor *= 2;
    steps *= 2;
  } else if (kind == CollectiveKind::kBroadcast) {
    factor = 1;
  }
  const double busbw = BusBandwidthGbps(kind, total_bytes, spans_nodes);
  return MicrosToNanos(f.base_latency_us() + steps * f.step_latency_us()) +
         Nanos(TransferNs(factor * total_bytes, busbw));
}

int64_t CostModel::HostTaskNanos(double flops, int64_t bytes,
                                 int threads) const {
  const HostProfile& h = profile_.host();
  const int t = std::max(1, std::min(threads, HostCores()));
  const double compute_ns = flops / (t * h.gflops_per_core());
  const double memory_ns = TransferNs(bytes, HostTaskGbps(t));
  return MicrosToNanos(h.host_task_overhead_us()) +
         Nanos(std::max(compute_ns, memory_ns));
}

int64_t CostModel::StagingNanos(int64_t bytes) const {
  return Nanos(TransferNs(bytes, profile_.host_link().staging_gbps()));
}

int64_t CostModel::PinNanos(int64_t bytes) const {
  return Nanos(TransferNs(bytes, profile_.host().pin_gbps()));
}

std::string CostModel::ExplainKernel(const KernelWork& work) const {
  const GpuProfile& g = profile_.gpu();
  std::string cls;
  double peak = g.peak_fp32_tflops(), eff = 1.0;
  switch (work.compute_class) {
    case ComputeClass::kMatmul:
      cls = "matmul";
      peak = g.peak_bf16_tflops();
      eff = MatmulEfficiency(work.flops);
      break;
    case ComputeClass::kAttention:
      cls = "attention";
      peak = g.peak_bf16_tflops();
      eff = work.backward && g.has_attention_backward_efficiency()
                ? g.attention_backward_efficiency()
                : g.attention_efficiency();
      break;
    case ComputeClass::kElementwise:
      cls = "elementwise";
      break;
    case ComputeClass::kOptimizer:
      cls = "optimizer";
      break;
  }
  std::string field;
  const double factor = InStepFactor(work.compute_class, work.kind, &field);
  const double measured = MeasuredGemmUs(work);
  if (measured >= 0) {
    return absl::StrFormat(
        "kernel (%s %dx%dx%d): measured %.3f us (gpu.gemm_table) x %.3f in a "
        "step (%s) = %.3f us",
        cls, work.m, work.n, work.k, measured, factor, field,
        KernelNanos(work) / 1e3);
  }
  const double attention = MeasuredAttentionUs(work);
  if (attention >= 0) {
    return absl::StrFormat(
        "kernel (%s %s, batch %d x %d heads (%d kv) x %d, seq %d): measured "
        "%.3f us (gpu.attention_table) x %.3f in a step (%s) = %.3f us",
        cls, work.backward ? "backward" : "forward", work.batch, work.num_heads,
        work.num_kv_heads, work.head_dim, work.seq, attention, factor, field,
        KernelNanos(work) / 1e3);
  }
  const double compute_us = work.flops / (peak * 1e6 * eff);
  const double memory_us =
      work.bytes / (g.hbm_bandwidth_gbps() * g.hbm_efficiency() * 1e3);
  return absl::StrFormat(
      "kernel (%s): max(compute %.4g FLOP / (%.4g TFLOP/s peak x %.3f "
      "efficiency) = %.3f us, memory %.4g B / (%.4g GB/s HBM x %.2f) = %.3f "
      "us) x %.3f in a step%s%s, at least %.2f us min kernel time = %.3f us",
      cls, work.flops, peak, eff, compute_us, work.bytes,
      g.hbm_bandwidth_gbps(), g.hbm_efficiency(), memory_us, factor,
      absl::StartsWith(field, "gpu.kernel_") ? absl::StrCat(" (", field, ")")
                                             : "",
      InStepExtraNs(work.compute_class) > 0
          ? absl::StrFormat(" + %.3f us (gpu.elementwise_in_step_us)",
                            InStepExtraNs(work.compute_class) / 1e3)
          : "",
      g.min_kernel_us(), KernelNanos(work) / 1e3);
}

std::string CostModel::ExplainCopy(int64_t bytes, CopyKind kind) const {
  static const char* kNames[] = {"pinned H2D",   "pinned D2H", "pageable H2D",
                                 "pageable D2H", "D2D",        "H2H"};
  const HostLinkProfile& l = profile_.host_link();
  const int64_t ns = CopyNanos(bytes, kind);
  std::string blocking;
  switch (kind) {
    case CopyKind::kPinnedH2D:
    case CopyKind::kPinnedD2H:
      blocking = "host returns after the API call";
      break;
    case CopyKind::kPageableD2H:
      blocking = "host blocked until the copy and earlier stream work finish";
      break;
    case CopyKind::kPageableH2D:
      blocking = absl::StrFormat(
          "host blocked until done above %d bytes; below, only for staging "
          "at %.3g GB/s",
          l.pageable_h2d_async_max_bytes(), l.staging_gbps());
      break;
    default:
      blocking = "";
  }
  return absl::StrFormat(
      "copy (%s, %d bytes): %.2f us latency + bytes / bandwidth = %.3f us "
      "(effective %.2f GB/s); %s",
      kNames[static_cast<int>(kind)], bytes, l.copy_latency_us(), ns / 1e3,
      bytes / static_cast<double>(ns), blocking);
}

std::string CostModel::ExplainCollective(CollectiveKind kind,
                                         int64_t total_bytes, int ranks,
                                         bool spans_nodes) const {
  const FabricProfile& f = profile_.fabric();
  if (spans_nodes && has_node_topology()) {
    const int per_node = std::max(1, f.gpus_per_node());
    const int nodes = std::max(2, (ranks + per_node - 1) / per_node);
    const NodeCollective c =
        CollectiveAcrossNodes(kind, total_bytes, ranks, nodes);
    return absl::StrFormat(
        "collective (%s, %d bytes total, %d ranks on %d nodes, %d NICs of "
        "%.1f GB/s per node%s): %s at %.1f GB/s bus bandwidth = %.3f us",
        CollectiveKindName(kind), total_bytes, ranks, nodes, f.nics_per_node(),
        f.nic_gbps(), f.rail_optimized() ? ", rail-optimized" : "",
        c.tree ? "tree" : "ring", c.busbw_gbps, c.nanos / 1e3);
  }
  const double factor =
      kind == CollectiveKind::kAllReduce
          ? 2.0 * (ranks - 1) / ranks
          : (kind == CollectiveKind::kBroadcast ? 1.0 : (ranks - 1.0) / ranks);
  const int steps =
      kind == CollectiveKind::kAllReduce ? 2 * (ranks - 1) : ranks - 1;
  return absl::StrFormat(
      "collective (%s, %d bytes total, %d ranks%s): %.2f us base + %d steps x "
      "%.2f us + %.3f x bytes / %.1f GB/s bus bandwidth = %.3f us%s",
      CollectiveKindName(kind), total_bytes, ranks,
      spans_nodes ? ", across nodes" : "", f.base_latency_us(), steps,
      f.step_latency_us(), factor,
      BusBandwidthGbps(kind, total_bytes, spans_nodes),
      CollectiveNanos(kind, total_bytes, ranks, spans_nodes) / 1e3,
      f.through_host() ? "; crosses the host, occupying the PCIe link both ways"
                       : "");
}

std::string CostModel::ExplainHostTask(double flops, int64_t bytes,
                                       int threads) const {
  const HostProfile& h = profile_.host();
  const int t = std::max(1, std::min(threads, HostCores()));
  const std::string memory =
      h.memory_bandwidth_by_threads().empty()
          ? absl::StrFormat("min(%d x %.3g GB/s, the rank's %.3g GB/s)", t,
                            h.memory_bandwidth_gbps_per_thread(),
                            HostMemoryGbps())
          : absl::StrFormat("%.3g GB/s (memory_bandwidth_by_threads at %d)",
                            HostTaskGbps(t), t);
  return absl::StrFormat(
      "host task (%.4g FLOP, %d bytes, %d threads of the rank's %d cores, "
      "%d ranks per node): %.1f us overhead + max(FLOPs / (%d x %.3g "
      "GFLOP/s), bytes / %s) = %.3f us",
      flops, bytes, t, HostCores(), ranks_per_node_, h.host_task_overhead_us(),
      t, h.gflops_per_core(), memory,
      HostTaskNanos(flops, bytes, threads) / 1e3);
}

}  // namespace sim
}  // namespace zero3
