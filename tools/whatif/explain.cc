// Copyright 2026 The zero3 Authors.
//
// explain.cc: how the simulator costs a scenario's first variant, op by
// op and collective by collective.

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/kernels/op_args.h"
#include "core/kernels/op_cost.h"
#include "core/model/presets.h"
#include "core/runtime/pinned_memory.h"
#include "core/util/status_macros.h"
#include "sim/cost_model.h"
#include "tools/whatif/whatif.h"
#include "tools/whatif/whatif_internal.h"

namespace zero3 {
namespace whatif {

using internal::Expand;
using internal::Resolve;
using internal::Resolved;
using internal::Variant;

absl::StatusOr<std::string> ExplainScenario(const Scenario& scenario,
                                            const RunOptions& options) {
  ZR_ASSIGN_OR_RETURN(std::vector<Variant> variants, Expand(scenario));
  const Variant& v = variants.front();
  ZR_ASSIGN_OR_RETURN(Resolved r, Resolve(scenario, v, options));
  ZR_ASSIGN_OR_RETURN(sim::CostModel cost, sim::CostModel::Create(r.profile));
  cost.set_ranks_per_node(
      std::min<int>(v.gpus, r.profile.fabric().gpus_per_node()));
  cost.set_world_size(v.gpus);
  const model::ModelSpec& s = r.spec;
  const zero::ZeroOptions& o = r.options;
  const kernels::DType dt = o.dtype;
  const int64_t tp = v.tp, dp = v.gpus / v.tp;
  const int64_t t = o.micro_batch * o.seq, h = s.hidden_size();
  const int64_t q = s.num_heads() / tp * s.head_dim();
  const int64_t esize = kernels::DTypeSize(dt);
  auto work = [](const kernels::OpCost& c, sim::ComputeClass cls) {
    sim::KernelWork w;
    w.compute_class = cls;
    w.flops = static_cast<double>(c.flops);
    w.bytes = static_cast<double>(c.bytes_read + c.bytes_written);
    return w;
  };
  kernels::AttentionArgs at;
  at.batch = o.micro_batch;
  at.seq = o.seq;
  at.num_heads = s.num_heads() / tp;
  at.num_kv_heads = s.num_kv_heads() / tp;
  at.head_dim = s.head_dim();
  kernels::RmsNormArgs rn;
  rn.rows = t;
  rn.dim = h;
  const int64_t shard = model::ParameterCount(s) / tp / dp;
  const int64_t bucket =
      std::min<int64_t>(o.reduce_bucket_size, model::ParameterCount(s) / tp);
  const int64_t layer_weight = h * q;  // the q projection, gathered whole
  const int64_t adam = std::min<int64_t>(o.sub_group_size, shard);
  std::string out = absl::StrFormat(
      "Cost model terms on %s for %s, %d GPUs (tp %d, dp %d), micro-batch %d x "
      "%d, %s:\n",
      r.profile.name(), s.name(), v.gpus, tp, dp, o.micro_batch, o.seq,
      kernels::DTypeName(dt));
  absl::StrAppend(&out, "  q_proj forward GEMM [", t, " x ", h, "] x [", h,
                  " x ", q, "]: ",
                  cost.ExplainKernel(
                      sim::MatmulWork(kernels::LinearForwardArgs(t, h, q), dt)),
                  "\n");
  absl::StrAppend(
      &out, "  attention forward: ",
      cost.ExplainKernel(sim::AttentionWork(at, /*backward=*/false, dt)), "\n");
  absl::StrAppend(&out, "  rmsnorm forward: ",
                  cost.ExplainKernel(work(kernels::RmsNormForwardCost(rn, dt),
                                          sim::ComputeClass::kElementwise)),
                  "\n");
  // Without accumulation the reduced gradients go to the host in the
  // model's dtype; with it, the fp32 partition does.
  const int64_t grad_esize = o.accumulation == 1 ? esize : 4;
  const int64_t grad_bytes = bucket / dp * grad_esize;
  absl::StrAppend(
      &out, "  gradient bucket partition to the host (",
      kernels::DTypeName(o.accumulation == 1 ? dt : kernels::DType::kF32),
      "): ", cost.ExplainCopy(grad_bytes, sim::CopyKind::kPinnedD2H), "\n");
  absl::StrAppend(&out, "  the same into pageable memory: ",
                  cost.ExplainCopy(grad_bytes, sim::CopyKind::kPageableD2H),
                  "\n");
  absl::StrAppend(&out, "  updated shard to the device: ",
                  cost.ExplainCopy(shard * esize, sim::CopyKind::kPinnedH2D),
                  "\n");
  const int per_node = r.profile.fabric().gpus_per_node();
  const bool dp_spans = (dp - 1) * tp / per_node != 0;
  absl::StrAppend(&out, "  all-gather of one q_proj weight (data parallel): ",
                  cost.ExplainCollective(sim::CollectiveKind::kAllGather,
                                         layer_weight * esize, dp, dp_spans),
                  "\n");
  absl::StrAppend(&out, "  reduce-scatter of one gradient bucket: ",
                  cost.ExplainCollective(sim::CollectiveKind::kReduceScatter,
                                         bucket * esize, dp, dp_spans),
                  "\n");
  if (tp > 1) {
    absl::StrAppend(&out, "  tensor-parallel all-reduce of activations: ",
                    cost.ExplainCollective(sim::CollectiveKind::kAllReduce,
                                           t * h * esize, tp, false),
                    "\n");
  }
  absl::StrAppend(&out, "  host AdamW over one sub-group: ",
                  cost.ExplainHostTask(
                      15.0 * adam, (24 + grad_esize + esize) * adam,
                      o.optimizer_threads > 0 ? o.optimizer_threads : 1 << 16),
                  "\n");
  return out;
}

}  // namespace whatif
}  // namespace zero3
