// Copyright 2026 The zero3 Authors.
//
// ZeRO-3 on 1-4 simulated ranks against the unsharded reference trainer.
//
// Tolerances: fp32 within 1e-5 relative on the loss of every step and on
// every parameter tensor (max |difference| / max |reference|). The engine
// averages gradients in the reference's order, so what differs is the
// float sum of the gradient norm (its order follows the buckets and ranks),
// which moves the clipping factor by a few ulps. bf16: within 2e-2 on the
// loss and 2e-2 on parameters after 5 steps: the engine rounds the reduced
// gradient to bf16 per bucket exactly as the reference does, and the rest
// is the same clipping-factor difference amplified by bf16 rounding of the
// updated weights. bf16 master weights and moments (the host optimizer's
// bf16 states), which the reference rounds the same way: exactly, without
// clipping.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/model/presets.h"
#include "core/util/check.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "reference/runs.h"
#include "sim/testing/test_profile.h"
#include "testing/internal/masked_examples.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace testing {
namespace {

using ::zero3::reference::Compare;
using ::zero3::reference::Difference;
using ::zero3::reference::ParamDifference;
using ::zero3::reference::RunReference;
using ::zero3::reference::RunResult;
using ::zero3::reference::RunZero;
using ::zero3::reference::WorseOf;

constexpr int kSteps = 5;

struct Case {
  std::string name;
  int world = 2;
  std::function<void(zero::ZeroOptions&)> configure;
  std::string model = "tiny";
  bool expect_clipping = false;
  // Adjusts the model after loading `model`.
  std::function<void(model::ModelSpec&)> reshape;
  // The speculative step's misses are all aborted early (rank 0's running
  // norm proves them), else none is.
  bool expect_abort = false;
  // Adjusts the simulated machine.
  std::function<void(sim::HardwareProfile&)> machine;
  // Some committed speculation left pieces to the next forward.
  bool expect_carried = false;
  // Fine-tuning examples (prompt unpredicted, padding, truncation) instead
  // of synthetic tokens; with `packed`, several per sample.
  bool masked = false;
  bool packed = false;
};

// The case's data: synthetic tokens, or masked examples.
std::unique_ptr<model::BatchSource> CaseData(const Case& c,
                                             const model::ModelSpec& spec,
                                             const zero::ZeroOptions& o) {
  if (!c.masked) return model::SyntheticBatches(spec.vocab_size(), 7);
  auto examples =
      MaskedExamples(c.name, 61, spec.vocab_size(), o.seq, 7, c.packed);
  ZR_CHECK(examples.ok()) << examples.status();
  return *std::move(examples);
}

zero::ZeroOptions Base() {
  zero::ZeroOptions o;
  o.micro_batch = 2;
  o.seq = 8;
  o.lr = 1e-2f;  // large enough that parameters move visibly in 5 steps
  o.weight_decay = 0.01f;
  o.gradient_clipping = 0;
  o.seed = 42;
  return o;
}

// What the speculative step made of each step: committed when the step
// applied unclipped, replayed when clipping triggered, discarded when it was
// skipped, or aborted early instead of either (Case::expect_abort); with
// kAuto, not tried for 1, 2, 4, ... steps after each miss, except an abort
// before the first piece (tried again the next step).
void CheckSpeculation(const Case& c, const zero::ZeroOptions& options,
                      const RunResult& run) {
  using Speculation = engine::StepStats::Speculation;
  const bool adaptive =
      options.speculative_step == zero::SpeculativeStep::kAuto;
  int64_t from = 0, pause = 1;
  for (const engine::StepStats& s : run.rank0) {
    const std::string at = absl::StrCat(c.name, " step ", s.step);
    if (adaptive && s.step < from) {
      EXPECT_EQ(s.speculation, Speculation::kNone) << at;
      continue;
    }
    const bool clipped = options.gradient_clipping > 0 &&
                         s.grad_norm + 1e-6 > options.gradient_clipping;
    Speculation want = s.skipped ? Speculation::kDiscarded
                       : clipped ? Speculation::kReplayed
                                 : Speculation::kCommitted;
    if (want != Speculation::kCommitted && c.expect_abort) {
      want = Speculation::kAborted;
    }
    EXPECT_EQ(s.speculation, want) << at;
    if (want != Speculation::kAborted) {
      EXPECT_GT(s.speculative_pieces, 0) << at;
    }
    if (want == Speculation::kCommitted) {
      pause = 1;
    } else if (want == Speculation::kAborted && s.speculative_pieces == 0) {
      continue;  // free: no back-off
    } else {
      from = s.step + 1 + pause;
      pause *= 2;
    }
  }
}

void Check(const Case& c) {
  ASSERT_OK_AND_ASSIGN(model::ModelSpec spec, model::LoadModelSpec(c.model));
  if (c.reshape) {
    c.reshape(spec);
    ASSERT_OK(model::ValidateModelSpec(spec));
  }
  zero::ZeroOptions options = Base();
  if (c.configure) c.configure(options);
  auto data = CaseData(c, spec, options);
  sim::SimOptions sim;
  sim.profile = sim::TestProfile();
  sim.profile.mutable_gpu()->set_memory_gib(64);
  if (c.machine) c.machine(sim.profile);
  ASSERT_OK_AND_ASSIGN(RunResult zero,
                       RunZero(spec, options, c.world, kSteps, *data, sim));
  ASSERT_OK_AND_ASSIGN(RunResult ref, RunReference(spec, options, c.world,
                                                   kSteps, *data, sim.profile));
  EXPECT_THAT(zero.races, ::testing::IsEmpty())
      << absl::StrJoin(zero.races, "\n");
  EXPECT_THAT(ref.races, ::testing::IsEmpty());
  // The same steps were skipped (fp16 overflow at the initial loss scale).
  EXPECT_EQ(zero.skipped, ref.skipped) << c.name;
  if (absl::StrContains(c.name, "overflow_skips")) {
    EXPECT_TRUE(zero.skipped.front()) << "the case skips no step";
    EXPECT_FALSE(zero.skipped.back()) << "the case applies no step";
  }
  // The same learning rates, exactly (the same schedule of applied steps).
  EXPECT_EQ(zero.lrs, ref.lrs) << c.name;
  const Difference d = Compare(zero, ref);
  const bool fp32 = options.dtype == runtime::DType::kF32;
  // A chunked LM head sums its weight gradient in another order (about
  // 5e-8 relative); five AdamW steps carry that to about 5e-5.
  const double fp32_tolerance = options.lm_head_chunk_tokens > 0 ? 1e-4 : 1e-5;
  // bf16 master and moments: the reference rounds them as the host
  // optimizer does, so without clipping (whose factor can differ in its
  // last bits) the runs agree exactly.
  const bool exact = options.host_master_dtype != runtime::DType::kF32 &&
                     options.gradient_clipping <= 0;
  const double tolerance = exact ? 0 : fp32 ? fp32_tolerance : 2e-2;
  EXPECT_LE(d.loss, tolerance)
      << c.name << ": step " << d.worst_step << " loss "
      << zero.losses[d.worst_step] << " vs " << ref.losses[d.worst_step];
  EXPECT_LE(d.param, tolerance) << c.name << ": parameter " << d.worst_param;
  // The run trained: the losses are finite and moved, and so did the
  // parameters (against the reference's initial values).
  for (double l : zero.losses) EXPECT_TRUE(std::isfinite(l));
  EXPECT_NE(zero.losses.front(), zero.losses.back());
  ASSERT_FALSE(zero.rank0.empty());
  if (c.expect_clipping) {
    for (const engine::StepStats& s : zero.rank0) {
      EXPECT_GT(s.grad_norm, options.gradient_clipping) << "clipping inactive";
    }
  }
  if (options.host_master_dtype != runtime::DType::kF32) {
    // The master holds bf16 values, and they are not fp32 states' values.
    for (const std::vector<float>& t : zero.params) {
      for (const float x : t) {
        uint32_t bits;
        std::memcpy(&bits, &x, 4);
        ASSERT_EQ(bits & 0xFFFFu, 0u) << c.name << ": not a bf16 value " << x;
      }
    }
    zero::ZeroOptions fp32_states = options;
    fp32_states.host_master_dtype = runtime::DType::kF32;
    fp32_states.host_moments_dtype = runtime::DType::kF32;
    ASSERT_OK_AND_ASSIGN(RunResult wide, RunZero(spec, fp32_states, c.world,
                                                 kSteps, *data, sim));
    EXPECT_NE(zero.params, wide.params) << c.name;
  }
  if (options.checkpoint_every > 0) {
    // Recompute runs the same kernels on the same inputs: bit-identical to
    // the run that keeps its activations.
    zero::ZeroOptions kept = options;
    kept.checkpoint_every = 0;
    ASSERT_OK_AND_ASSIGN(RunResult plain,
                         RunZero(spec, kept, c.world, kSteps, *data, sim));
    EXPECT_EQ(zero.losses, plain.losses) << c.name;
    EXPECT_EQ(zero.params, plain.params) << c.name;
  }
  if (options.speculative_step != zero::SpeculativeStep::kOff) {
    CheckSpeculation(c, options, zero);
    int carried = 0;
    for (const engine::StepStats& st : zero.rank0) {
      carried += st.carried_pieces;
      if (st.speculation != engine::StepStats::Speculation::kCommitted) {
        EXPECT_EQ(st.carried_pieces, 0) << c.name << " step " << st.step;
      }
    }
    EXPECT_EQ(carried > 0, c.expect_carried) << c.name << ": " << carried;
    // Exact: the same run without speculation gives the same bits.
    zero::ZeroOptions plain_options = options;
    plain_options.speculative_step = zero::SpeculativeStep::kOff;
    ASSERT_OK_AND_ASSIGN(RunResult plain, RunZero(spec, plain_options, c.world,
                                                  kSteps, *data, sim));
    EXPECT_EQ(zero.losses, plain.losses) << c.name;
    EXPECT_EQ(zero.params, plain.params) << c.name;
    EXPECT_EQ(zero.skipped, plain.skipped) << c.name;
  }
  if (options.host_step_in_forward) {
    // Exact: the host update under the next forward gives the same bits as
    // at the end of the step.
    zero::ZeroOptions at_end = options;
    at_end.host_step_in_forward = false;
    ASSERT_OK_AND_ASSIGN(RunResult plain,
                         RunZero(spec, at_end, c.world, kSteps, *data, sim));
    EXPECT_EQ(zero.losses, plain.losses) << c.name;
    EXPECT_EQ(zero.params, plain.params) << c.name;
    EXPECT_EQ(zero.skipped, plain.skipped) << c.name;
  }
  if (options.host_step_delayed) {
    // The lag is real: the first step is the same bits as without it (the
    // same parameters), the second runs on older ones.
    zero::ZeroOptions prompt = options;
    prompt.host_step_delayed = false;
    ASSERT_OK_AND_ASSIGN(RunResult plain,
                         RunZero(spec, prompt, c.world, 2, *data, sim));
    EXPECT_EQ(zero.losses[0], plain.losses[0]) << c.name;
    if (!zero.skipped[0]) {
      EXPECT_NE(zero.losses[1], plain.losses[1]) << c.name;
    }
  }
  // The optimizer state on NVMe, and the working shard on NVMe, each train
  // bitwise as in host memory.
  for (std::string zero::ZeroOptions::*path :
       {&zero::ZeroOptions::nvme_path, &zero::ZeroOptions::param_nvme_path}) {
    if ((options.*path).empty()) continue;
    zero::ZeroOptions in_memory = options;
    (in_memory.*path).clear();
    ASSERT_OK_AND_ASSIGN(RunResult plain,
                         RunZero(spec, in_memory, c.world, kSteps, *data, sim));
    EXPECT_EQ(zero.losses, plain.losses) << c.name;
    EXPECT_EQ(zero.params, plain.params) << c.name;
    EXPECT_EQ(zero.skipped, plain.skipped) << c.name;
  }
  if (options.device_step_share > 0 && !options.host_step_delayed) {
    // The offloaded step on the device is the device AdamW's: the same bits
    // as the run with no optimizer offloaded; with bf16 states (which only
    // the offloaded optimizer keeps), as the run with them all stepped on
    // the host, whose AdamW rounds the same way.
    const bool bf16_states = options.host_master_dtype != runtime::DType::kF32;
    zero::ZeroOptions on_device = options;
    on_device.offload_optimizer = bf16_states;
    on_device.device_step_share = 0;
    on_device.offloaded_step = config::OffloadedStep::kHost;
    on_device.speculative_step = zero::SpeculativeStep::kOff;
    on_device.host_step_in_forward = false;
    ASSERT_OK_AND_ASSIGN(RunResult plain,
                         RunZero(spec, on_device, c.world, kSteps, *data, sim));
    EXPECT_EQ(zero.losses, plain.losses) << c.name;
    EXPECT_EQ(zero.params, plain.params) << c.name;
    EXPECT_EQ(zero.skipped, plain.skipped) << c.name;
  }
  if (options.lm_head_chunk_tokens > 0) {
    // The first step's loss comes from the same parameters: the chunked
    // head sums it in the same order, so it is the same bits.
    zero::ZeroOptions whole = options;
    whole.lm_head_chunk_tokens = 0;
    ASSERT_OK_AND_ASSIGN(RunResult plain,
                         RunZero(spec, whole, c.world, 1, *data, sim));
    EXPECT_EQ(zero.losses.front(), plain.losses.front()) << c.name;
  }
  std::printf("%-28s loss %.3g  params %.3g\n", c.name.c_str(), d.loss,
              d.param);
}

class EquivalenceTest : public ::testing::TestWithParam<Case> {};

TEST_P(EquivalenceTest, MatchesReference) { Check(GetParam()); }

// A NaN anywhere is the worst difference: it never passes a tolerance.
TEST(DifferenceTest, NanIsTheWorst) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(std::isnan(WorseOf(nan, 1.0)));
  EXPECT_TRUE(std::isnan(WorseOf(1.0, nan)));
  EXPECT_EQ(WorseOf(1.0, 2.0), 2.0);
  const float fnan = std::numeric_limits<float>::quiet_NaN();
  int worst = -1;
  // The NaN tensor first, a larger finite difference after it.
  EXPECT_TRUE(std::isnan(
      ParamDifference({{fnan, 1.0f}, {5.0f}}, {{1.0f, 1.0f}, {1.0f}}, &worst)));
  EXPECT_EQ(worst, 0);
  RunResult got, ref;
  got.losses = {nan, 3.0};
  ref.losses = {1.0, 1.0};
  EXPECT_TRUE(std::isnan(Compare(got, ref).loss));
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (int world : {1, 2, 3, 4}) {
    cases.push_back(
        {absl::StrCat("device_optimizer_w", world), world, nullptr});
    cases.push_back({absl::StrCat("offload_pinned_async_w", world), world,
                     [](zero::ZeroOptions& o) { o.offload_optimizer = true; }});
  }
  auto offload = [](zero::ZeroOptions& o) { o.offload_optimizer = true; };
  cases.push_back({"offload_pageable", 2, [=](zero::ZeroOptions& o) {
                     offload(o);
                     o.optimizer_pin_memory = false;
                   }});
  cases.push_back({"offload_blocking", 2, [=](zero::ZeroOptions& o) {
                     offload(o);
                     o.grad_offload = zero::GradOffload::kBlocking;
                   }});
  cases.push_back({"offload_pageable_blocking", 3, [=](zero::ZeroOptions& o) {
                     offload(o);
                     o.optimizer_pin_memory = false;
                     o.grad_offload = zero::GradOffload::kBlocking;
                   }});
  cases.push_back({"accumulation4", 2, [=](zero::ZeroOptions& o) {
                     offload(o);
                     o.accumulation = 4;
                   }});
  cases.push_back({"accumulation4_device", 3,
                   [](zero::ZeroOptions& o) { o.accumulation = 4; }});
  cases.push_back({"no_overlap_comm", 2, [=](zero::ZeroOptions& o) {
                     offload(o);
                     o.overlap_comm = false;
                   }});
  cases.push_back({"tiny_buckets", 3, [=](zero::ZeroOptions& o) {
                     offload(o);
                     o.reduce_bucket_size = 100;
                   }});
  cases.push_back({"one_bucket", 2, [](zero::ZeroOptions& o) {
                     o.reduce_bucket_size = int64_t{1} << 40;
                   }});
  cases.push_back({"no_persistence", 4, [=](zero::ZeroOptions& o) {
                     offload(o);
                     o.param_persistence_threshold = 0;
                   }});
  cases.push_back({"all_persistent", 2, [](zero::ZeroOptions& o) {
                     o.param_persistence_threshold = int64_t{1} << 40;
                   }});
  cases.push_back({"clipping_active", 2,
                   [=](zero::ZeroOptions& o) {
                     offload(o);
                     o.gradient_clipping = 0.05;
                   },
                   "tiny", true});
  cases.push_back({"clipping_device", 3,
                   [](zero::ZeroOptions& o) { o.gradient_clipping = 0.05; },
                   "tiny", true});
  cases.push_back({"small_subgroups", 2, [=](zero::ZeroOptions& o) {
                     offload(o);
                     o.sub_group_size = 500;
                   }});
  cases.push_back({"host_step_in_pieces", 3, [=](zero::ZeroOptions& o) {
                     offload(o);
                     o.dtype = runtime::DType::kBF16;
                     o.sub_group_size = 5000;
                     o.host_step_piece = 777;
                   }});
  cases.push_back({"no_prefetch_no_reuse", 2, [](zero::ZeroOptions& o) {
                     o.prefetch_bucket_size = 0;
                     o.max_reuse_distance = 0;
                   }});
  cases.push_back({"offload_param", 2, [=](zero::ZeroOptions& o) {
                     offload(o);
                     o.offload_param = true;
                   }});
  cases.push_back({"offload_param_pageable", 3, [=](zero::ZeroOptions& o) {
                     offload(o);
                     o.offload_param = true;
                     o.param_pin_memory = false;
                     o.optimizer_pin_memory = false;
                   }});
  cases.push_back({"tied_embeddings", 3, offload, "tiny-tied"});
  // One kv head of dimension 2: the k and v biases have 2 elements, so with
  // 4 ranks ranks 2 and 3 own only padding of them.
  cases.push_back({"ranks_with_only_padding", 4, offload, "tiny", false,
                   [](model::ModelSpec& s) {
                     s.set_hidden_size(12);
                     s.set_num_heads(6);
                     s.set_num_kv_heads(1);
                     s.set_head_dim(2);
                   }});
  cases.push_back({"bf16_offload", 2, [=](zero::ZeroOptions& o) {
                     offload(o);
                     o.dtype = runtime::DType::kBF16;
                   }});
  // Accumulating: bf16 buckets add into the fp32 device partition, which
  // goes to the host.
  cases.push_back({"bf16_offload_accumulation2", 3, [=](zero::ZeroOptions& o) {
                     offload(o);
                     o.dtype = runtime::DType::kBF16;
                     o.accumulation = 2;
                   }});
  cases.push_back(
      {"bf16_offload_pageable_blocking", 2, [=](zero::ZeroOptions& o) {
         offload(o);
         o.dtype = runtime::DType::kBF16;
         o.optimizer_pin_memory = false;
         o.grad_offload = zero::GradOffload::kBlocking;
       }});
  // fp16 with dynamic loss scaling from 2^16.
  cases.push_back({"f16_offload", 2, [=](zero::ZeroOptions& o) {
                     offload(o);
                     o.dtype = runtime::DType::kF16;
                   }});
  cases.push_back({"f16_device_static_scale", 3, [=](zero::ZeroOptions& o) {
                     o.dtype = runtime::DType::kF16;
                     o.static_loss_scale = 1024;
                     o.gradient_clipping = 0.05;
                   }});
  // DeepSpeed schedules (the lr changes every step) and the Hugging Face
  // Trainer's weight-decay grouping (no decay on biases and norms).
  cases.push_back({"warmup_cosine_trainer_decay", 3, [=](zero::ZeroOptions& o) {
                     offload(o);
                     o.sub_group_size = 500;  // runs split sub-groups
                     o.exclude_bias_and_norm_from_decay = true;
                     o.weight_decay = 0.5f;
                     o.lr_schedule.type = zero::LrScheduleType::kWarmupCosineLR;
                     o.lr_schedule.warmup_type = zero::WarmupType::kLinear;
                     o.lr_schedule.warmup_num_steps = 2;
                     o.lr_schedule.total_num_steps = 5;
                     o.lr_schedule.warmup_min_ratio = 0.1;
                   }});
  cases.push_back(
      {"warmup_decay_trainer_decay_device", 2, [](zero::ZeroOptions& o) {
         o.exclude_bias_and_norm_from_decay = true;
         o.weight_decay = 0.5f;
         o.lr_schedule.type = zero::LrScheduleType::kWarmupDecayLR;
         o.lr_schedule.warmup_min_lr = 1e-3;
         o.lr_schedule.warmup_max_lr = 2e-2;
         o.lr_schedule.warmup_num_steps = 3;
         o.lr_schedule.total_num_steps = 5;
       }});
  // OneCycle moves Adam's beta1 (and sets beta2 0.99) with the lr.
  cases.push_back({"one_cycle_momentum_offload", 2, [=](zero::ZeroOptions& o) {
                     offload(o);
                     o.lr_schedule.type = zero::LrScheduleType::kOneCycle;
                     o.lr_schedule.cycle_min_lr = 1e-3;
                     o.lr_schedule.cycle_max_lr = 2e-2;
                     o.lr_schedule.first_step_size = 2;
                     o.lr_schedule.second_step_size = 2;
                   }});
  cases.push_back({"lr_range_test_staircase", 2, [](zero::ZeroOptions& o) {
                     o.lr_schedule.type = zero::LrScheduleType::kLRRangeTest;
                     o.lr_schedule.range_min_lr = 1e-3;
                     o.lr_schedule.range_step_size = 2;
                     o.lr_schedule.range_step_rate = 3.0;
                     o.lr_schedule.range_staircase = true;
                   }});
  // Overflow-skipped steps do not advance the schedule.
  cases.push_back({"f16_warmup_offload", 2, [=](zero::ZeroOptions& o) {
                     offload(o);
                     o.dtype = runtime::DType::kF16;
                     o.lr_schedule.type = zero::LrScheduleType::kWarmupLR;
                     o.lr_schedule.warmup_type = zero::WarmupType::kLinear;
                     o.lr_schedule.warmup_min_lr = 1e-3;
                     o.lr_schedule.warmup_max_lr = 1e-2;
                     o.lr_schedule.warmup_num_steps = 4;
                   }});
  // One sample of 3 tokens overflows at the first loss scales: a skipped step
  // still consumes its batch, in the reference as in the engine.
  cases.push_back({"f16_overflow_skips", 1, [=](zero::ZeroOptions& o) {
                     o.dtype = runtime::DType::kF16;
                     o.initial_scale_power = 16;
                     o.micro_batch = 1;
                     o.seq = 3;
                   }});
  // Twin-flow (offload_optimizer.ratio): the first parameters' share on the
  // device, the rest on the host, in one step.
  auto share = [=](double ratio) {
    return [=](zero::ZeroOptions& o) {
      offload(o);
      o.offload_ratio = ratio;
    };
  };
  cases.push_back({"twin_flow_half", 2, share(0.5)});
  cases.push_back({"twin_flow_all_on_device", 3, share(0)});
  cases.push_back({"twin_flow_clipping", 2,
                   [=](zero::ZeroOptions& o) {
                     share(0.4)(o);
                     o.gradient_clipping = 0.05;
                   },
                   "tiny", true});
  cases.push_back({"twin_flow_bf16_pieces", 3, [=](zero::ZeroOptions& o) {
                     share(0.7)(o);
                     o.dtype = runtime::DType::kBF16;
                     o.sub_group_size = 5000;
                     o.host_step_piece = 777;
                   }});
  cases.push_back(
      {"twin_flow_bf16_accumulation2", 2, [=](zero::ZeroOptions& o) {
         share(0.3)(o);
         o.dtype = runtime::DType::kBF16;
         o.accumulation = 2;
       }});
  cases.push_back(
      {"twin_flow_f16_pageable_blocking", 2, [=](zero::ZeroOptions& o) {
         share(0.5)(o);
         o.dtype = runtime::DType::kF16;
         o.optimizer_pin_memory = false;
         o.grad_offload = zero::GradOffload::kBlocking;
       }});
  cases.push_back({"twin_flow_tied", 3, share(0.5), "tiny-tied"});
  // DeepSpeed's gradient path: per-parameter fp32 copies, the fp32 master
  // back to the device.
  auto deepspeed_path = [=](zero::ZeroOptions& o) {
    offload(o);
    o.per_param_fp32_grads = true;
  };
  cases.push_back({"per_param_fp32_bf16", 3, [=](zero::ZeroOptions& o) {
                     deepspeed_path(o);
                     o.dtype = runtime::DType::kBF16;
                     o.host_step_piece = 777;
                   }});
  cases.push_back(
      {"per_param_fp32_pageable_blocking", 2, [=](zero::ZeroOptions& o) {
         deepspeed_path(o);
         o.dtype = runtime::DType::kBF16;
         o.optimizer_pin_memory = false;
         o.grad_offload = zero::GradOffload::kBlocking;
       }});
  cases.push_back(
      {"per_param_fp32_offload_param", 2, [=](zero::ZeroOptions& o) {
         deepspeed_path(o);
         o.offload_param = true;
         o.dtype = runtime::DType::kBF16;
       }});
  cases.push_back({"per_param_fp32_twin_flow", 2, [=](zero::ZeroOptions& o) {
                     deepspeed_path(o);
                     o.offload_ratio = 0.5;
                   }});
  // The speculative host step (super_offload): bitwise the run without it
  // (Check), committed, replayed or discarded as validation decides.
  auto speculate = [=](std::function<void(zero::ZeroOptions&)> more) {
    return [=](zero::ZeroOptions& o) {
      offload(o);
      o.speculative_step = zero::SpeculativeStep::kOn;
      if (more) more(o);
    };
  };
  // Several buckets, sub-groups and pieces; then `clipping`.
  auto in_pieces = [=](double clipping) {
    return speculate([=](zero::ZeroOptions& o) {
      o.reduce_bucket_size = 3000;
      o.sub_group_size = 5000;
      o.host_step_piece = 777;
      o.gradient_clipping = clipping;
    });
  };
  for (int world : {1, 2, 4}) {
    cases.push_back(
        {absl::StrCat("speculative_w", world), world, in_pieces(0)});
  }
  // Clipping proven by the first bucket's running norm: aborted before any
  // piece, then replayed.
  cases.push_back(
      {"speculative_clipping_aborts_early", 2,
       speculate([](zero::ZeroOptions& o) { o.gradient_clipping = 0.05; }),
       "tiny", true, nullptr, true});
  // One rank, all on the host: the running norm (1.47 to 1.54 after the
  // first bucket, 2.12 to 2.60 in the end) proves clipping at 1.6 partway,
  // after some pieces were updated speculatively.
  cases.push_back({"speculative_clipping_aborts_partway", 1, in_pieces(1.6),
                   "tiny", true, nullptr, true});
  // The host share (the last 5% of the layout) has a norm of at most 1.54
  // in these 5 steps, the whole 2.12 to 2.60: clipping at 1.8 triggers every
  // step but only the device share's buckets show it, after the last piece.
  cases.push_back({"speculative_clipping_at_the_end", 1,
                   speculate([](zero::ZeroOptions& o) {
                     o.offload_ratio = 0.05;
                     o.reduce_bucket_size = 3000;
                     o.host_step_piece = 333;
                     o.gradient_clipping = 1.8;
                   }),
                   "tiny", true});
  cases.push_back(
      {"speculative_clipping_not_triggered", 2,
       speculate([](zero::ZeroOptions& o) { o.gradient_clipping = 1000; })});
  cases.push_back({"speculative_auto_clipping", 2,
                   [=](zero::ZeroOptions& o) {
                     speculate(nullptr)(o);
                     o.speculative_step = zero::SpeculativeStep::kAuto;
                     o.gradient_clipping = 0.05;
                   },
                   "tiny", true, nullptr, true});
  // fp16 at a loss scale of 2^16 on one short sequence: the first steps
  // overflow and are skipped.
  auto f16_overflow = [](zero::ZeroOptions& o) {
    o.dtype = runtime::DType::kF16;
    o.initial_scale_power = 16;
    o.micro_batch = 1;
    o.seq = 3;
  };
  cases.push_back({"speculative_f16_overflow_skips", 1, speculate(f16_overflow),
                   "tiny", false, nullptr, true});
  cases.push_back(
      {"speculative_bf16_pieces", 3, speculate([](zero::ZeroOptions& o) {
         o.dtype = runtime::DType::kBF16;
         o.reduce_bucket_size = 2000;
         o.sub_group_size = 5000;
         o.host_step_piece = 777;
       })});
  cases.push_back(
      {"speculative_bf16_accumulation2", 2, speculate([](zero::ZeroOptions& o) {
         o.dtype = runtime::DType::kBF16;
         o.accumulation = 2;
       })});
  cases.push_back(
      {"speculative_twin_flow_half", 2, speculate([](zero::ZeroOptions& o) {
         o.offload_ratio = 0.5;
         o.reduce_bucket_size = 3000;
       })});
  cases.push_back({"speculative_twin_flow_clipping", 4,
                   speculate([](zero::ZeroOptions& o) {
                     o.offload_ratio = 0.5;
                     o.gradient_clipping = 0.05;
                   }),
                   "tiny", true, nullptr, true});
  cases.push_back(
      {"speculative_no_overlap_comm", 2, speculate([](zero::ZeroOptions& o) {
         o.overlap_comm = false;
         o.reduce_bucket_size = 3000;
       })});
  cases.push_back({"speculative_tiny_buckets_tied", 3,
                   speculate([](zero::ZeroOptions& o) {
                     o.reduce_bucket_size = 100;
                     o.host_step_piece = 333;
                     o.param_persistence_threshold = 0;
                   }),
                   "tiny-tied"});
  cases.push_back(
      {"speculative_pageable_blocking", 2, speculate([](zero::ZeroOptions& o) {
         o.optimizer_pin_memory = false;
         o.grad_offload = zero::GradOffload::kBlocking;
       })});
  cases.push_back({"bf16_device", 4, [](zero::ZeroOptions& o) {
                     o.dtype = runtime::DType::kBF16;
                     o.gradient_clipping = 0.05;
                   }});
  // Activation checkpointing, every layer (1) or every other layer (2).
  auto ckpt = [](int every, std::function<void(zero::ZeroOptions&)> more) {
    return [=](zero::ZeroOptions& o) {
      o.checkpoint_every = every;
      if (more) more(o);
    };
  };
  for (int world : {1, 2, 3, 4}) {
    cases.push_back(
        {absl::StrCat("ckpt_device_w", world), world, ckpt(1, nullptr)});
  }
  cases.push_back({"ckpt_offload", 2, ckpt(1, offload)});
  cases.push_back({"ckpt_every2_offload", 3, ckpt(2, offload)});
  cases.push_back({"ckpt_offload_param", 2, ckpt(1, [=](zero::ZeroOptions& o) {
                     offload(o);
                     o.offload_param = true;
                   })});
  cases.push_back(
      {"ckpt_bf16_offload_accumulation2", 3, ckpt(1, [=](zero::ZeroOptions& o) {
         offload(o);
         o.dtype = runtime::DType::kBF16;
         o.accumulation = 2;
       })});
  cases.push_back(
      {"ckpt_bf16_device_accumulation4", 4, ckpt(1, [](zero::ZeroOptions& o) {
         o.dtype = runtime::DType::kBF16;
         o.accumulation = 4;
       })});
  cases.push_back(
      {"ckpt_no_prefetch_no_reuse", 2, ckpt(1, [](zero::ZeroOptions& o) {
         o.prefetch_bucket_size = 0;
         o.max_reuse_distance = 0;
         o.param_persistence_threshold = 0;
       })});
  cases.push_back({"ckpt_tied", 3, ckpt(1, offload), "tiny-tied"});
  cases.push_back(
      {"ckpt_mlp_only_offload", 2, ckpt(1, [=](zero::ZeroOptions& o) {
         offload(o);
         o.checkpoint_mlp_only = true;
       })});
  cases.push_back(
      {"ckpt_mlp_only_bf16_every2", 3, ckpt(2, [](zero::ZeroOptions& o) {
         o.dtype = runtime::DType::kBF16;
         o.checkpoint_mlp_only = true;
       })});
  // cpu_checkpointing: the kept inputs go through host memory.
  auto to_host = [](std::function<void(zero::ZeroOptions&)> more) {
    return [=](zero::ZeroOptions& o) {
      o.checkpoint_to_host = true;
      if (more) more(o);
    };
  };
  cases.push_back({"ckpt_host_w1", 1, ckpt(1, to_host(nullptr))});
  cases.push_back({"ckpt_host_speculative_w2", 2,
                   ckpt(1, to_host([=](zero::ZeroOptions& o) {
                          offload(o);
                          o.speculative_step = zero::SpeculativeStep::kOn;
                          o.reduce_bucket_size = 3000;
                        }))});
  cases.push_back({"ckpt_host_offload_w2", 2, ckpt(1, to_host(offload))});
  cases.push_back({"ckpt_host_every2_w2", 2, ckpt(2, to_host(nullptr))});
  cases.push_back({"ckpt_host_bf16_accumulation2_w2", 2,
                   ckpt(1, to_host([](zero::ZeroOptions& o) {
                          o.dtype = runtime::DType::kBF16;
                          o.accumulation = 2;
                        }))});
  cases.push_back({"ckpt_host_mlp_only_bf16_w1", 1,
                   ckpt(1, to_host([](zero::ZeroOptions& o) {
                          o.dtype = runtime::DType::kBF16;
                          o.checkpoint_mlp_only = true;
                        }))});
  // The LM head in chunks of rows (5 does not divide the 16 tokens).
  auto head_chunks = [](int64_t rows,
                        std::function<void(zero::ZeroOptions&)> more) {
    return [=](zero::ZeroOptions& o) {
      o.lm_head_chunk_tokens = rows;
      if (more) more(o);
    };
  };
  cases.push_back({"head_chunks_w2", 2, head_chunks(5, nullptr)});
  cases.push_back(
      {"head_chunks_tied_offload", 2, head_chunks(5, offload), "tiny-tied"});
  cases.push_back({"head_chunks_ckpt_bf16_accumulation2", 3,
                   head_chunks(4, ckpt(1, [](zero::ZeroOptions& o) {
                                 o.dtype = runtime::DType::kBF16;
                                 o.accumulation = 2;
                               }))});
  cases.push_back(
      {"head_chunks_f16_w1", 1, head_chunks(3, [](zero::ZeroOptions& o) {
         o.dtype = runtime::DType::kF16;
       })});
  // The host step moved (zero3.host_step_overlap): under the next forward,
  // bitwise the run with it at the end of the step (Check), and ZeRO-
  // Offload's one-step delayed update, against the reference run on the
  // same lag (whose device share lags too); each in pieces, with clipping,
  // bf16 and accumulation, fp16 overflow and twin-flow.
  using Mode = bool zero::ZeroOptions::*;
  auto moved = [=](Mode mode, std::function<void(zero::ZeroOptions&)> more) {
    return [=](zero::ZeroOptions& o) {
      offload(o);
      o.*mode = true;
      o.reduce_bucket_size = 3000;
      o.sub_group_size = 5000;
      o.host_step_piece = 777;
      // Delayed: a piece after every module too, wherever it is issued.
      o.delayed_piece_after_wait_ns = 0;
      if (more) more(o);
    };
  };
  const std::pair<std::string, Mode> modes[] = {
      {"host_step_in_forward", &zero::ZeroOptions::host_step_in_forward},
      {"host_step_delayed", &zero::ZeroOptions::host_step_delayed}};
  for (const auto& [name, mode] : modes) {
    for (int world : {1, 2}) {
      cases.push_back(
          {absl::StrCat(name, "_w", world), world, moved(mode, nullptr)});
    }
    cases.push_back(
        {name + "_clipping", 2,
         moved(mode, [](zero::ZeroOptions& o) { o.gradient_clipping = 0.05; }),
         "tiny", true});
    cases.push_back(
        {name + "_bf16_accumulation2", 2, moved(mode, [](zero::ZeroOptions& o) {
           o.dtype = runtime::DType::kBF16;
           o.accumulation = 2;
         })});
    cases.push_back(
        {name + "_f16_overflow_skips", 1, moved(mode, f16_overflow)});
    cases.push_back(
        {name + "_twin_flow", 2,
         moved(mode, [](zero::ZeroOptions& o) { o.offload_ratio = 0.5; })});
  }
  // Speculation and the host update under the next forward, on a host slow
  // enough that the norm is known before every piece has run: a committed
  // step's pieces left over run under the next forward.
  auto slow_host = [](sim::HardwareProfile& p) {
    p.mutable_host()->set_memory_bandwidth_gbps_per_rank(0.02);
    p.mutable_host()->set_memory_bandwidth_gbps_per_thread(0.01);
  };
  auto carried = [=](const std::string& name, int world,
                     std::function<void(zero::ZeroOptions&)> more) {
    Case c{absl::StrCat("speculation_carried_over_", name), world,
           moved(&zero::ZeroOptions::host_step_in_forward,
                 [=](zero::ZeroOptions& o) {
                   o.speculative_step = zero::SpeculativeStep::kOn;
                   if (more) more(o);
                 })};
    c.machine = slow_host;
    c.expect_carried = true;
    return c;
  };
  cases.push_back(carried("w1", 1, nullptr));
  cases.push_back(carried("w2", 2, nullptr));
  cases.push_back(carried("bf16_accumulation2", 2, [](zero::ZeroOptions& o) {
    o.dtype = runtime::DType::kBF16;
    o.accumulation = 2;
  }));
  cases.push_back(carried("twin_flow", 2,
                          [](zero::ZeroOptions& o) { o.offload_ratio = 0.5; }));
  cases.push_back(carried("f16_overflow_skips", 1, f16_overflow));
  cases.push_back({"host_step_in_forward_speculative", 1,
                   moved(&zero::ZeroOptions::host_step_in_forward,
                         [](zero::ZeroOptions& o) {
                           o.speculative_step = zero::SpeculativeStep::kOn;
                           o.gradient_clipping = 1.6;
                         }),
                   "tiny", true, nullptr, true});
  // Fine-tuning examples: the loss over the predicted targets of the whole
  // global batch, across ranks, micro-batches and offload modes.
  const auto masked = [](std::string name, int world,
                         std::function<void(zero::ZeroOptions&)> configure) {
    Case c{std::move(name), world, std::move(configure)};
    c.masked = true;
    return c;
  };
  cases.push_back(masked("masked_w2_accumulation2", 2,
                         [](zero::ZeroOptions& o) { o.accumulation = 2; }));
  cases.push_back(masked("masked_offload_w3", 3, offload));
  Case packed =
      masked("packed_offload_w2_accumulation2", 2, [=](zero::ZeroOptions& o) {
        offload(o);
        o.accumulation = 2;
      });
  packed.packed = true;
  cases.push_back(packed);
  cases.push_back(masked("masked_bf16_w2", 2, [](zero::ZeroOptions& o) {
    o.dtype = runtime::DType::kBF16;
    o.accumulation = 3;
  }));
  // bf16 master weights and Adam moments on the host (DeepSpeed's
  // bf16_master_weights_and_grads and bf16_optimizer_states), against the
  // reference rounding the same; with every place the host step runs
  // (speculative, under the next forward, delayed: the exactness checks of
  // Check apply), clipping, accumulation (fp32 host gradients) and pieces.
  auto bf16_states = [=](bool moments,
                         std::function<void(zero::ZeroOptions&)> more) {
    return [=](zero::ZeroOptions& o) {
      offload(o);
      o.dtype = runtime::DType::kBF16;
      o.host_master_dtype = runtime::DType::kBF16;
      if (moments) o.host_moments_dtype = runtime::DType::kBF16;
      if (more) more(o);
    };
  };
  for (int world : {1, 2, 3}) {
    cases.push_back({absl::StrCat("bf16_states_w", world), world,
                     bf16_states(true, nullptr)});
  }
  cases.push_back({"bf16_master_only_w2", 2, bf16_states(false, nullptr)});
  cases.push_back({"bf16_states_offload_param", 2,
                   bf16_states(true, [](zero::ZeroOptions& o) {
                     o.offload_param = true;
                   })});
  cases.push_back({"bf16_states_accumulation2_pieces", 2,
                   bf16_states(true, [](zero::ZeroOptions& o) {
                     o.accumulation = 2;
                     o.sub_group_size = 5000;
                     o.host_step_piece = 777;
                   })});
  cases.push_back(
      {"bf16_states_clipping", 2,
       bf16_states(true,
                   [](zero::ZeroOptions& o) { o.gradient_clipping = 0.05; }),
       "tiny", true});
  cases.push_back({"bf16_states_speculative", 2,
                   bf16_states(true, [](zero::ZeroOptions& o) {
                     o.speculative_step = zero::SpeculativeStep::kOn;
                     o.host_step_piece = 777;
                   })});
  for (const auto& [name, mode] : modes) {
    cases.push_back({"bf16_states_" + name, 2,
                     moved(mode, bf16_states(true, [](zero::ZeroOptions& o) {
                             o.gradient_clipping = 0;
                           }))});
  }
  cases.push_back(carried("bf16_states", 2, bf16_states(true, nullptr)));
  // The offloaded step on the device (zero3.offloaded_step), all of it or
  // a share beside the host's, in pieces through its slots: bitwise the
  // run without offload (Check) where the host share's step is exact too,
  // and against the reference on the delayed plan's lag.
  auto streamed = [=](double share,
                      std::function<void(zero::ZeroOptions&)> more) {
    return [=](zero::ZeroOptions& o) {
      offload(o);
      o.device_step_share = share;
      o.offloaded_step = share >= 1 ? config::OffloadedStep::kDevice
                                    : config::OffloadedStep::kAuto;
      o.sub_group_size = 5000;
      o.host_step_piece = 777;
      if (more) more(o);
    };
  };
  for (int world : {1, 2, 3}) {
    cases.push_back(
        {absl::StrCat("device_step_w", world), world, streamed(1, nullptr)});
  }
  cases.push_back({"device_step_half_w2", 2, streamed(0.5, nullptr)});
  // Two slots (each reused every other piece) and a slot a piece (every
  // piece copied in as backward starts).
  cases.push_back(
      {"device_step_two_slots_w2", 2,
       streamed(1, [](zero::ZeroOptions& o) { o.streamed_slots = 2; })});
  cases.push_back(
      {"device_step_slot_a_piece_w1", 1,
       streamed(1, [](zero::ZeroOptions& o) { o.streamed_slots = 1024; })});
  // DeepSpeed's per-parameter fp32 copies for the host's share beside it.
  cases.push_back({"device_step_half_per_param_fp32", 2,
                   streamed(0.5, [](zero::ZeroOptions& o) {
                     o.per_param_fp32_grads = true;
                   })});
  cases.push_back(
      {"device_step_one_piece_w1", 1, streamed(1, [](zero::ZeroOptions& o) {
         o.sub_group_size = 1000000000;
         o.host_step_piece = int64_t{1} << 25;
       })});
  cases.push_back(
      {"device_step_twin_flow", 2,
       streamed(0.5, [](zero::ZeroOptions& o) { o.offload_ratio = 0.5; })});
  cases.push_back({"device_step_bf16_accumulation2", 2,
                   streamed(0.6, [](zero::ZeroOptions& o) {
                     o.dtype = runtime::DType::kBF16;
                     o.accumulation = 2;
                   })});
  cases.push_back(
      {"device_step_clipping", 2,
       streamed(1, [](zero::ZeroOptions& o) { o.gradient_clipping = 0.05; }),
       "tiny", true});
  cases.push_back(
      {"device_step_f16_overflow_skips", 1, streamed(0.5, f16_overflow)});
  // Speculative: the streamed pieces stepped during backward, committed
  // (clipping off), replayed (clipping on) or discarded (fp16 overflow).
  const auto speculative = [](std::function<void(zero::ZeroOptions&)> more) {
    return [=](zero::ZeroOptions& o) {
      o.speculative_step = zero::SpeculativeStep::kOn;
      o.gradient_clipping = 0;
      o.reduce_bucket_size = 3000;
      if (more) more(o);
    };
  };
  cases.push_back(
      {"device_step_speculative", 2, streamed(0.5, speculative(nullptr))});
  for (int world : {1, 3}) {
    cases.push_back({absl::StrCat("device_step_speculative_all_w", world),
                     world, streamed(1, speculative(nullptr))});
  }
  cases.push_back({"device_step_speculative_two_slots", 2,
                   streamed(1, speculative([](zero::ZeroOptions& o) {
                              o.streamed_slots = 2;
                            }))});
  cases.push_back({"device_step_speculative_bf16_accumulation2", 2,
                   streamed(1, speculative([](zero::ZeroOptions& o) {
                              o.dtype = runtime::DType::kBF16;
                              o.accumulation = 2;
                            }))});
  cases.push_back({"device_step_speculative_clipping", 2,
                   streamed(1, speculative([](zero::ZeroOptions& o) {
                              o.gradient_clipping = 0.05;
                            })),
                   "tiny", true});
  cases.push_back({"device_step_speculative_f16_overflow_skips", 1,
                   streamed(1, speculative(f16_overflow))});
  // bf16 master weights and optimizer states streamed: the device AdamW
  // over bf16 state, bitwise the host's over the same state.
  cases.push_back(
      {"device_step_bf16_states", 2, streamed(1, bf16_states(true, nullptr))});
  cases.push_back({"device_step_half_bf16_master", 2,
                   streamed(0.5, bf16_states(false, nullptr))});
  cases.push_back({"device_step_speculative_bf16_states", 2,
                   streamed(0.5, speculative(bf16_states(true, nullptr)))});
  for (const auto& [name, mode] : modes) {
    cases.push_back(
        {"device_step_" + name, 2, moved(mode, streamed(0.5, nullptr))});
  }
  // The optimizer state on NVMe (a swap file per rank under the test's
  // temporary directory), in pieces through three host windows: bitwise
  // the run with it in host memory (Check).
  auto nvme = [=](std::function<void(zero::ZeroOptions&)> more) {
    return [=](zero::ZeroOptions& o) {
      offload(o);
      const char* tmp = std::getenv("TEST_TMPDIR");
      o.nvme_path = tmp != nullptr ? tmp : "/tmp";
      o.nvme_buffers = 3;
      o.sub_group_size = 5000;
      o.host_step_piece = 777;
      if (more) more(o);
    };
  };
  for (int world : {1, 2, 3}) {
    cases.push_back({absl::StrCat("nvme_w", world), world, nvme(nullptr)});
  }
  cases.push_back({"nvme_bf16_accumulation2", 2, nvme([](zero::ZeroOptions& o) {
                     o.dtype = runtime::DType::kBF16;
                     o.accumulation = 2;
                   })});
  cases.push_back({"nvme_clipping", 2, nvme([](zero::ZeroOptions& o) {
                     o.gradient_clipping = 0.05;
                   }),
                   "tiny", true});
  cases.push_back({"nvme_f16_overflow_skips", 1, nvme(f16_overflow)});
  cases.push_back({"nvme_bf16_states", 2, nvme([](zero::ZeroOptions& o) {
                     o.dtype = runtime::DType::kBF16;
                     o.host_master_dtype = runtime::DType::kBF16;
                     o.host_moments_dtype = runtime::DType::kBF16;
                   })});
  cases.push_back(
      {"nvme_bf16_master_accumulation2", 2, nvme([](zero::ZeroOptions& o) {
         o.dtype = runtime::DType::kBF16;
         o.host_master_dtype = runtime::DType::kBF16;
         o.accumulation = 2;
       })});
  cases.push_back({"nvme_twin_flow", 2,
                   nvme([](zero::ZeroOptions& o) { o.offload_ratio = 0.5; })});
  cases.push_back({"nvme_one_piece", 1, nvme([](zero::ZeroOptions& o) {
                     o.sub_group_size = 1000000000;
                     o.host_step_piece = int64_t{1} << 25;
                     o.nvme_buffers = 4;
                   })});
  // The parameters on NVMe (offload_param.device "nvme"): pieces of 777
  // elements, so partitions span pieces and pieces span partitions, read
  // through two or three windows; bitwise the run with the shard in host
  // memory (Check), the optimizer state in memory or on NVMe too.
  auto param_nvme = [=](std::function<void(zero::ZeroOptions&)> more) {
    return nvme([=](zero::ZeroOptions& o) {
      // The drive moves from the optimizer state to the parameters.
      std::swap(o.nvme_path, o.param_nvme_path);
      o.offload_param = true;
      o.param_nvme_buffers = 3;
      if (more) more(o);
    });
  };
  for (int world : {1, 2, 3}) {
    cases.push_back(
        {absl::StrCat("param_nvme_w", world), world, param_nvme(nullptr)});
  }
  cases.push_back(
      {"param_nvme_bf16_accumulation2", 2, param_nvme([](zero::ZeroOptions& o) {
         o.dtype = runtime::DType::kBF16;
         o.accumulation = 2;
       })});
  cases.push_back(
      {"param_nvme_clipping", 2,
       param_nvme([](zero::ZeroOptions& o) { o.gradient_clipping = 0.05; }),
       "tiny", true});
  cases.push_back(
      {"param_nvme_f16_overflow_skips", 1, param_nvme(f16_overflow)});
  cases.push_back({"param_nvme_two_windows_persistent", 2,
                   param_nvme([](zero::ZeroOptions& o) {
                     o.param_nvme_buffers = 2;
                     o.param_persistence_threshold = 100;
                     o.param_pin_memory = false;
                   })});
  cases.push_back(
      {"param_nvme_one_piece", 2, param_nvme([](zero::ZeroOptions& o) {
         o.sub_group_size = 1000000000;
         o.host_step_piece = int64_t{1} << 25;
       })});
  cases.push_back(
      {"param_and_optimizer_nvme", 2, param_nvme([](zero::ZeroOptions& o) {
         const char* tmp = std::getenv("TEST_TMPDIR");
         o.nvme_path = tmp != nullptr ? tmp : "/tmp";
         o.nvme_buffers = 3;
       })});
  return cases;
}

// OneCycle's first step runs with the betas DeepSpeed sets when it builds
// the schedule, (cycle_min_mom, 0.99), at cycle_min_lr: the same bits as a
// constant schedule with those values, and not those of the optimizer's own
// betas.
TEST(OneCycleTest, FirstStepUsesTheCyclesBetas) {
  ASSERT_OK_AND_ASSIGN(model::ModelSpec spec, model::LoadModelSpec("tiny"));
  zero::ZeroOptions cycle = Base();
  cycle.lr_schedule.type = zero::LrScheduleType::kOneCycle;
  cycle.lr_schedule.cycle_min_lr = 1e-2;
  cycle.lr_schedule.cycle_max_lr = 1e-1;
  zero::ZeroOptions plain = Base();
  plain.lr = 1e-2f;
  plain.beta1 = 0.8f;
  plain.beta2 = 0.99f;
  zero::ZeroOptions own = plain;
  own.beta1 = 0.9f;
  own.beta2 = 0.999f;
  auto data = model::SyntheticBatches(spec.vocab_size(), 7);
  sim::SimOptions sim;
  sim.profile = sim::TestProfile();
  ASSERT_OK_AND_ASSIGN(RunResult a, RunZero(spec, cycle, 2, 1, *data, sim));
  ASSERT_OK_AND_ASSIGN(RunResult b, RunZero(spec, plain, 2, 1, *data, sim));
  ASSERT_OK_AND_ASSIGN(RunResult c, RunZero(spec, own, 2, 1, *data, sim));
  EXPECT_EQ(a.params, b.params);
  EXPECT_NE(a.params, c.params);
}

// The loss is the mean over the global batch's predicted targets, not a
// mean of micro-batch means: one rank with the whole batch in one
// micro-batch and two ranks with two micro-batches of two examples each
// see the same losses and gradient norms (to float summation order: 1e-6),
// though their micro-batches predict different numbers of targets. (Not
// the parameters: AdamW's first steps divide gradients near zero by their
// own size, which turns summation-order differences into 1e-5 of a step.)
TEST(MaskedLossTest, TheSplitOfTheGlobalBatchDoesNotMatter) {
  ASSERT_OK_AND_ASSIGN(model::ModelSpec spec, model::LoadModelSpec("tiny"));
  zero::ZeroOptions whole = Base();
  whole.micro_batch = 8;
  zero::ZeroOptions split = Base();
  split.micro_batch = 2;
  split.accumulation = 2;
  ASSERT_OK_AND_ASSIGN(
      auto data, MaskedExamples("split", 40, spec.vocab_size(), whole.seq, 3));
  sim::SimOptions sim;
  sim.profile = sim::TestProfile();
  ASSERT_OK_AND_ASSIGN(RunResult one, RunZero(spec, whole, 1, 2, *data, sim));
  ASSERT_OK_AND_ASSIGN(RunResult two, RunZero(spec, split, 2, 2, *data, sim));
  for (int s = 0; s < 2; ++s) {
    const engine::StepStats& a = one.rank0[s];
    const engine::StepStats& b = two.rank0[s];
    EXPECT_NEAR(two.losses[s], one.losses[s], 1e-6 * one.losses[s])
        << "step " << s;
    EXPECT_NEAR(b.grad_norm, a.grad_norm, 1e-6 * a.grad_norm) << "step " << s;
    EXPECT_EQ(b.predicted_tokens, a.predicted_tokens) << "step " << s;
  }
  // The micro-batches do differ in predicted targets (else a mean of means
  // would pass too).
  std::vector<int32_t> tokens, targets;
  std::vector<int64_t> counts;
  const model::BatchShape shape{split.micro_batch, split.seq, 2, 2};
  for (int micro = 0; micro < 2; ++micro) {
    for (int rank = 0; rank < 2; ++rank) {
      ASSERT_OK(data->Fill(shape, 0, micro, rank, &tokens, &targets));
      counts.push_back(std::count_if(targets.begin(), targets.end(),
                                     [](int32_t t) { return t >= 0; }));
    }
  }
  EXPECT_NE(*std::min_element(counts.begin(), counts.end()),
            *std::max_element(counts.begin(), counts.end()));
  EXPECT_EQ(two.rank0.front().predicted_tokens,
            counts[0] + counts[1] + counts[2] + counts[3]);
}

INSTANTIATE_TEST_SUITE_P(All, EquivalenceTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace testing
}  // namespace zero3
