// Copyright 2026 The zero3 Authors.

#include "tools/calibrate/calibrate.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/kernels/op_args.h"
#include "core/kernels/op_cost.h"
#include "core/util/status_macros.h"
#include "core/zero/host_adam.h"
#include "google/protobuf/text_format.h"

namespace zero3 {
namespace calibrate {
namespace {

using runtime::Buffer;
using runtime::DType;
using runtime::HostMemoryKind;
using runtime::KernelCall;
using runtime::Runtime;
using runtime::Stream;
using runtime::TensorRef;
namespace ops = runtime::ops;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

class Bench {
 public:
  Bench(Runtime& rt, Stream& s, int reps) : rt_(rt), s_(s), reps_(reps) {}

  absl::Status Init() {
    ZR_ASSIGN_OR_RETURN(spin_buffer_,
                        rt_.device().Allocate(kSpinBytes, "spin"));
    return absl::OkStatus();
  }

  // Median device time in us of `enqueue`. The work is queued behind
  // milliseconds of other kernels and repeated `inner` times, and the time of
  // that other work alone is subtracted: so what is measured is how long the
  // device takes, not how fast the host can launch (the GPU runs a training
  // step's kernels back to back, with the host ahead of it).
  absl::StatusOr<double> DeviceUs(const std::function<absl::Status()>& enqueue,
                                  int inner = 1) {
    ZR_RETURN_IF_ERROR(enqueue());  // warm-up
    ZR_RETURN_IF_ERROR(s_.Synchronize());
    std::vector<double> with, without;
    for (int r = 0; r < reps_; ++r) {
      ZR_ASSIGN_OR_RETURN(double base,
                          Timed([] { return absl::OkStatus(); }, 0));
      ZR_ASSIGN_OR_RETURN(double total, Timed(enqueue, inner));
      without.push_back(base);
      with.push_back(total);
    }
    return std::max(0.0, (Median(with) - Median(without)) / inner);
  }

  // Median host time in us of `call` (no synchronize inside the timing).
  absl::StatusOr<double> HostUs(const std::function<absl::Status()>& call,
                                int inner = 1) {
    std::vector<double> samples;
    for (int r = 0; r < reps_; ++r) {
      ZR_RETURN_IF_ERROR(s_.Synchronize());
      const int64_t t0 = rt_.NowNanos();
      for (int i = 0; i < inner; ++i) ZR_RETURN_IF_ERROR(call());
      samples.push_back((rt_.NowNanos() - t0) / 1e3 / inner);
    }
    ZR_RETURN_IF_ERROR(s_.Synchronize());
    return Median(samples);
  }

 private:
  static constexpr int64_t kSpinBytes = int64_t{64} << 20;
  static constexpr int kSpinKernels = 100;

  // us from before the spin to the end of spin + `inner` x enqueue.
  absl::StatusOr<double> Timed(const std::function<absl::Status()>& enqueue,
                               int inner) {
    ops::Fill fill;
    fill.args.n = kSpinBytes / 2;
    fill.x = TensorRef::Of(spin_buffer_, DType::kBF16, 0, fill.args.n);
    ZR_RETURN_IF_ERROR(s_.Synchronize());
    const int64_t t0 = rt_.NowNanos();
    for (int i = 0; i < kSpinKernels; ++i) {
      ZR_RETURN_IF_ERROR(s_.Launch(KernelCall(fill, "spin")));
    }
    for (int i = 0; i < inner; ++i) ZR_RETURN_IF_ERROR(enqueue());
    ZR_RETURN_IF_ERROR(s_.Synchronize());
    return (rt_.NowNanos() - t0) / 1e3;
  }

  Runtime& rt_;
  Stream& s_;
  int reps_;
  Buffer spin_buffer_;
};

// Device buffers of a GEMM, zeroed so that values are defined.
struct GemmShape {
  int64_t m, n, k;
  bool ta, tb;
  bool operator<(const GemmShape& o) const {
    return std::tie(m, n, k, ta, tb) < std::tie(o.m, o.n, o.k, o.ta, o.tb);
  }
};

std::set<GemmShape> ModelGemms(const model::ModelSpec& s, int64_t t) {
  const int64_t h = s.hidden_size(), f = s.intermediate_size(),
                v = s.vocab_size();
  const int64_t q = s.num_heads() * s.head_dim();
  const int64_t kv = s.num_kv_heads() * s.head_dim();
  std::set<GemmShape> shapes;
  for (auto [in, out] : std::vector<std::pair<int64_t, int64_t>>{
           {h, q}, {h, kv}, {q, h}, {h, f}, {f, h}, {h, v}}) {
    shapes.insert({t, out, in, false, true});   // y = x W^T
    shapes.insert({t, in, out, false, false});  // dx = dy W
    shapes.insert({out, in, t, true, false});   // dW = dy^T x
  }
  return shapes;
}

}  // namespace

void ClearInStepAdjustments(sim::HardwareProfile* p) {
  p->mutable_gpu()->clear_gemm_in_step_factor();
  p->mutable_gpu()->clear_attention_in_step_factor();
  p->mutable_gpu()->clear_elementwise_in_step_factor();
  p->mutable_gpu()->clear_optimizer_in_step_factor();
  p->mutable_gpu()->clear_single_gpu_in_step_scale();
  p->mutable_gpu()->clear_copy2d_gbps();
  p->mutable_host_link()->clear_pageable_d2h_curve();
  p->mutable_host_link()->clear_pageable_shared_efficiency();
}

absl::StatusOr<Result> Calibrate(Runtime& rt, const Options& o) {
  Result result;
  sim::HardwareProfile& p = result.profile;
  p = o.base;
  ClearInStepAdjustments(&p);
  std::string& report = result.report;
  runtime::Device& dev = rt.device();
  ZR_ASSIGN_OR_RETURN(auto stream, dev.CreateStream("calibrate"));
  ZR_ASSIGN_OR_RETURN(auto other, dev.CreateStream("calibrate 2"));
  Bench bench(rt, *stream, o.reps);
  ZR_RETURN_IF_ERROR(bench.Init());
  const bool leader = rt.rank() == 0;
  const double peak_bf16 = p.gpu().peak_bf16_tflops();
  auto note = [&](const std::string& line) {
    if (leader) absl::StrAppend(&report, line, "\n");
  };

  // ---- GEMMs at the model presets' shapes, and square ones for the curve.
  std::set<GemmShape> shapes;
  for (const model::ModelSpec& spec : o.models) {
    for (const auto& [b, seq] : o.batches) {
      for (const GemmShape& g : ModelGemms(spec, b * seq)) shapes.insert(g);
    }
  }
  std::map<double, double> curve;  // flops -> efficiency, square GEMMs
  for (int64_t n : {512, 1024, 2048, 4096, 8192}) {
    shapes.insert({n, n, n, false, true});
  }
  p.mutable_gpu()->clear_gemm_table();
  for (const GemmShape& g : shapes) {
    const int64_t a_el = g.m * g.k, b_el = g.k * g.n, c_el = g.m * g.n;
    ZR_ASSIGN_OR_RETURN(Buffer buf,
                        dev.Allocate((a_el + b_el + c_el) * 2, "gemm"));
    ZR_RETURN_IF_ERROR(stream->Memset(buf.All(), 0, "zero gemm"));
    ops::Matmul mm;
    mm.args.m = g.m;
    mm.args.n = g.n;
    mm.args.k = g.k;
    mm.args.trans_a = g.ta;
    mm.args.trans_b = g.tb;
    mm.a = TensorRef::Of(buf, DType::kBF16, 0, a_el);
    mm.b = TensorRef::Of(buf, DType::kBF16, a_el, b_el);
    mm.c = TensorRef::Of(buf, DType::kBF16, a_el + b_el, c_el);
    const double flops = 2.0 * g.m * g.n * g.k;
    const int inner = flops < 1e11 ? 10 : 2;
    ZR_ASSIGN_OR_RETURN(
        double us,
        bench.DeviceUs([&] { return stream->Launch(KernelCall(mm, "gemm")); },
                       inner));
    ZR_RETURN_IF_ERROR(dev.Free(buf));
    sim::GemmPoint* point = p.mutable_gpu()->add_gemm_table();
    point->set_m(g.m);
    point->set_n(g.n);
    point->set_k(g.k);
    point->set_trans_a(g.ta);
    point->set_trans_b(g.tb);
    point->set_us(us);
    const double eff = flops / (us * 1e6 * peak_bf16);
    if (g.m == g.n && g.n == g.k) curve[flops] = std::min(1.0, eff);
    note(absl::StrFormat("gemm %6d x %6d x %6d %s%s: %10.1f us, %6.1f TFLOP/s",
                         g.m, g.n, g.k, g.ta ? "T" : "N", g.tb ? "T" : "N", us,
                         flops / us / 1e6));
  }
  p.mutable_gpu()->clear_matmul_efficiency();
  for (const auto& [flops, eff] : curve) {
    sim::CurvePoint* c = p.mutable_gpu()->add_matmul_efficiency();
    c->set_size(flops);
    c->set_value(eff);
  }

  // ---- Attention, forward and backward, at the models' shapes.
  std::vector<double> fwd_eff, bwd_eff;
  p.mutable_gpu()->clear_attention_table();
  for (const model::ModelSpec& spec : o.models) {
    for (const auto& [b, seq] : o.batches) {
      kernels::AttentionArgs a;
      a.batch = b;
      a.seq = seq;
      a.num_heads = spec.num_heads();
      a.num_kv_heads = spec.num_kv_heads();
      a.head_dim = spec.head_dim();
      const int64_t tq = b * seq * a.num_heads * a.head_dim;
      const int64_t tk = b * seq * a.num_kv_heads * a.head_dim;
      const int64_t lse = b * a.num_heads * seq;
      ZR_ASSIGN_OR_RETURN(Buffer act,
                          dev.Allocate((4 * tq + 4 * tk) * 2, "attention"));
      ZR_ASSIGN_OR_RETURN(Buffer stats, dev.Allocate(lse * 4, "lse"));
      ZR_RETURN_IF_ERROR(stream->Memset(act.All(), 0, "zero"));
      ZR_RETURN_IF_ERROR(stream->Memset(stats.All(), 0, "zero"));
      int64_t at = 0;
      auto take = [&](int64_t n) {
        TensorRef t = TensorRef::Of(act, DType::kBF16, at, n);
        at += n;
        return t;
      };
      ops::AttentionForward f;
      f.args = a;
      f.q = take(tq);
      f.k = take(tk);
      f.v = take(tk);
      f.out = take(tq);
      f.lse = TensorRef::Of(stats, DType::kF32, 0, lse);
      ops::AttentionBackward bw;
      bw.args = a;
      bw.q = f.q;
      bw.k = f.k;
      bw.v = f.v;
      bw.out = f.out;
      bw.lse = f.lse;
      bw.d_out = take(tq);
      bw.dq = take(tq);
      bw.dk = take(tk);
      bw.dv = TensorRef::Of(act, DType::kBF16, 0, tk);  // reuses q's space
      ZR_ASSIGN_OR_RETURN(double fus, bench.DeviceUs([&] {
        return stream->Launch(KernelCall(f, "attention fwd"));
      }));
      ZR_ASSIGN_OR_RETURN(double bus, bench.DeviceUs([&] {
        return stream->Launch(KernelCall(bw, "attention bwd"));
      }));
      ZR_RETURN_IF_ERROR(dev.Free(act));
      ZR_RETURN_IF_ERROR(dev.Free(stats));
      const double ff = static_cast<double>(
          kernels::AttentionForwardCost(a, DType::kBF16).flops);
      const double bf = static_cast<double>(
          kernels::AttentionBackwardCost(a, DType::kBF16).flops);
      sim::AttentionPoint* point = p.mutable_gpu()->add_attention_table();
      point->set_batch(b);
      point->set_seq(seq);
      point->set_num_heads(a.num_heads);
      point->set_num_kv_heads(a.num_kv_heads);
      point->set_head_dim(a.head_dim);
      point->set_forward_us(fus);
      point->set_backward_us(bus);
      fwd_eff.push_back(ff / (fus * 1e6 * peak_bf16));
      bwd_eff.push_back(bf / (bus * 1e6 * peak_bf16));
      note(absl::StrFormat(
          "attention %s b%d s%d: forward %.1f us (%.1f TFLOP/s), "
          "backward %.1f us (%.1f TFLOP/s)",
          spec.name(), b, seq, fus, ff / fus / 1e6, bus, bf / bus / 1e6));
    }
  }
  if (!fwd_eff.empty()) {
    p.mutable_gpu()->set_attention_efficiency(std::min(1.0, Median(fwd_eff)));
    p.mutable_gpu()->set_attention_backward_efficiency(
        std::min(1.0, Median(bwd_eff)));
  }

  // ---- Memory-bound kernels: achieved bandwidth and the shortest kernel.
  {
    const int64_t n = int64_t{1} << 27;  // 3 x 256 MiB of bf16
    ZR_ASSIGN_OR_RETURN(Buffer buf, dev.Allocate(3 * n * 2, "stream"));
    ZR_RETURN_IF_ERROR(stream->Memset(buf.All(), 0, "zero"));
    ops::Add add;
    add.args.n = n;
    add.a = TensorRef::Of(buf, DType::kBF16, 0, n);
    add.b = TensorRef::Of(buf, DType::kBF16, n, n);
    add.out = TensorRef::Of(buf, DType::kBF16, 2 * n, n);
    ZR_ASSIGN_OR_RETURN(
        double us,
        bench.DeviceUs([&] { return stream->Launch(KernelCall(add, "add")); },
                       5));
    const double gbps = 3.0 * n * 2 / (us * 1e3);
    p.mutable_gpu()->set_hbm_efficiency(
        std::min(1.0, gbps / p.gpu().hbm_bandwidth_gbps()));
    ops::Fill tiny;
    tiny.args.n = 1;
    tiny.x = TensorRef::Of(buf, DType::kBF16, 0, 1);
    ZR_ASSIGN_OR_RETURN(
        double min_us,
        bench.DeviceUs([&] { return stream->Launch(KernelCall(tiny, "tiny")); },
                       200));
    ZR_ASSIGN_OR_RETURN(
        double launch_us,
        bench.HostUs([&] { return stream->Launch(KernelCall(tiny, "tiny")); },
                     200));
    ZR_RETURN_IF_ERROR(dev.Free(buf));
    p.mutable_gpu()->set_min_kernel_us(min_us);
    p.mutable_host()->set_launch_us(launch_us);
    note(
        absl::StrFormat("memory-bound add of 3 x 256 MiB: %.1f GB/s; shortest "
                        "kernel %.2f us; launch %.2f us on the host",
                        gbps, min_us, launch_us));
  }

  // ---- The launch queue: how many commands a stream holds, while the
  // device is busy, before enqueueing one more blocks the host. Long GEMMs
  // keep the device busy (none finishes while the queue fills), then tiny
  // kernels are launched until one takes far longer than a launch.
  {
    constexpr int kLong = 12;
    constexpr int kMaxTiny = 8192;
    const int64_t m = 16384, n = 16384, k = 8192;
    ZR_ASSIGN_OR_RETURN(Buffer buf,
                        dev.Allocate((m * k + k * n + m * n + 1) * 2, "queue"));
    ZR_RETURN_IF_ERROR(stream->Memset(buf.All(), 0, "zero queue"));
    ZR_RETURN_IF_ERROR(stream->Synchronize());
    ops::Matmul mm;
    mm.args.m = m;
    mm.args.n = n;
    mm.args.k = k;
    mm.args.trans_b = true;
    mm.a = TensorRef::Of(buf, DType::kBF16, 0, m * k);
    mm.b = TensorRef::Of(buf, DType::kBF16, m * k, k * n);
    mm.c = TensorRef::Of(buf, DType::kBF16, m * k + k * n, m * n);
    ops::Fill tiny;
    tiny.args.n = 1;
    tiny.x = TensorRef::Of(buf, DType::kBF16, m * k + k * n + m * n, 1);
    for (int i = 0; i < kLong; ++i) {
      ZR_RETURN_IF_ERROR(stream->Launch(KernelCall(mm, "long gemm")));
    }
    const double threshold_ns = std::max(50e3, 20e3 * p.host().launch_us());
    int queued = -1;
    double blocked_us = 0;
    for (int i = 0; i < kMaxTiny; ++i) {
      const int64_t t0 = rt.NowNanos();
      ZR_RETURN_IF_ERROR(stream->Launch(KernelCall(tiny, "tiny")));
      const double ns = static_cast<double>(rt.NowNanos() - t0);
      if (ns > threshold_ns) {
        queued = kLong + i;
        blocked_us = ns / 1e3;
        break;
      }
    }
    ZR_RETURN_IF_ERROR(stream->Synchronize());
    ZR_RETURN_IF_ERROR(dev.Free(buf));
    if (queued > 0) {
      p.mutable_host()->set_stream_queue_depth(queued);
      note(absl::StrFormat(
          "launch queue: a stream took %d commands while the device was "
          "busy; the next launch blocked the host for %.0f us",
          queued, blocked_us));
    } else {
      p.mutable_host()->clear_stream_queue_depth();
      note(absl::StrFormat("launch queue: %d launches did not block the host",
                           kLong + kMaxTiny));
    }
  }

  // ---- Host <-> device copies.
  {
    const int64_t big = o.max_bytes;
    ZR_ASSIGN_OR_RETURN(Buffer dbuf, dev.Allocate(2 * big, "copy device"));
    ZR_ASSIGN_OR_RETURN(
        Buffer pinned,
        rt.AllocateHost(2 * big, HostMemoryKind::kPinned, "copy pinned"));
    ZR_ASSIGN_OR_RETURN(
        Buffer pageable,
        rt.AllocateHost(big, HostMemoryKind::kPageable, "copy pageable"));
    ZR_RETURN_IF_ERROR(stream->Memset(dbuf.All(), 0, "zero"));
    struct Kind {
      const char* name;
      bool to_device;
      const Buffer* host;
      std::function<void(double)> set;
    };
    sim::HostLinkProfile* link = p.mutable_host_link();
    const std::vector<Kind> kinds = {
        {"pinned H2D", true, &pinned,
         [&](double g) { link->set_pinned_h2d_gbps(g); }},
        {"pinned D2H", false, &pinned,
         [&](double g) { link->set_pinned_d2h_gbps(g); }},
        {"pageable H2D", true, &pageable,
         [&](double g) { link->set_pageable_h2d_gbps(g); }},
        {"pageable D2H", false, &pageable,
         [&](double g) { link->set_pageable_d2h_gbps(g); }},
    };
    for (const Kind& k : kinds) {
      auto copy = [&](int64_t bytes) {
        const runtime::BufferSlice d = dbuf.Slice(0, bytes),
                                   h = k.host->Slice(0, bytes);
        return k.to_device ? stream->Copy(d, h, k.name)
                           : stream->Copy(h, d, k.name);
      };
      ZR_ASSIGN_OR_RETURN(double us, bench.DeviceUs([&] { return copy(big); }));
      const double gbps = big / (us * 1e3);
      k.set(gbps);
      note(absl::StrFormat("%s of %d MiB: %.2f GB/s", k.name, big >> 20, gbps));
    }
    // Fixed cost of one copy: a 4 KiB pinned copy's device time.
    ZR_ASSIGN_OR_RETURN(double small_us,
                        bench.DeviceUs(
                            [&] {
                              return stream->Copy(pinned.Slice(0, 4096),
                                                  dbuf.Slice(0, 4096), "small");
                            },
                            50));
    link->set_copy_latency_us(small_us);
    ZR_ASSIGN_OR_RETURN(double call_us, bench.HostUs(
                                            [&] {
                                              return stream->Copy(
                                                  pinned.Slice(0, 4096),
                                                  dbuf.Slice(0, 4096), "call");
                                            },
                                            50));
    p.mutable_host()->set_copy_call_us(call_us);
    // Pageable H2D: the largest size whose call returns before the stream's
    // earlier work is done (the driver staged it), and the staging rate.
    ops::Fill spin;
    spin.args.n = std::min<int64_t>(big, int64_t{256} << 20) / 2;
    spin.x = TensorRef::Of(dbuf, DType::kBF16, big / 2, spin.args.n);
    int64_t async_max = 0;
    double staging_gbps = link->staging_gbps();
    for (int64_t bytes = 64 << 10; bytes <= (16 << 20) && bytes <= big / 2;
         bytes *= 2) {
      ZR_RETURN_IF_ERROR(stream->Synchronize());
      // Milliseconds of queued work ahead of the copy.
      for (int i = 0; i < 50; ++i) {
        ZR_RETURN_IF_ERROR(stream->Launch(KernelCall(spin, "busy")));
      }
      const int64_t t0 = rt.NowNanos();
      ZR_RETURN_IF_ERROR(stream->Copy(dbuf.Slice(0, bytes),
                                      pageable.Slice(0, bytes), "staged?"));
      const int64_t returned = rt.NowNanos() - t0;
      ZR_RETURN_IF_ERROR(stream->Synchronize());
      const int64_t done = rt.NowNanos() - t0;
      if (returned * 2 < done) {
        async_max = bytes;
        staging_gbps = bytes / std::max<double>(returned, 1.0);
      }
    }
    link->set_pageable_h2d_async_max_bytes(async_max);
    link->set_staging_gbps(staging_gbps);
    // Both directions at once.
    ZR_ASSIGN_OR_RETURN(double one_us, bench.DeviceUs([&] {
      return stream->Copy(dbuf.Slice(0, big), pinned.Slice(0, big), "h2d");
    }));
    std::vector<double> both;
    for (int r = 0; r < o.reps; ++r) {
      ZR_RETURN_IF_ERROR(dev.Synchronize());
      const int64_t t0 = rt.NowNanos();
      ZR_RETURN_IF_ERROR(
          stream->Copy(dbuf.Slice(0, big), pinned.Slice(0, big), "h2d"));
      ZR_RETURN_IF_ERROR(
          other->Copy(pinned.Slice(big, big), dbuf.Slice(big, big), "d2h"));
      ZR_RETURN_IF_ERROR(dev.Synchronize());
      both.push_back((rt.NowNanos() - t0) / 1e3);
    }
    link->set_bidirectional_efficiency(std::min(1.0, one_us / Median(both)));
    note(
        absl::StrFormat("copy latency %.2f us, copy call %.2f us on the host; "
                        "pageable H2D returns early up to %d bytes (staging "
                        "%.2f GB/s); both directions at once: %.0f%% each",
                        small_us, call_us, async_max, staging_gbps,
                        100 * link->bidirectional_efficiency()));
    ZR_RETURN_IF_ERROR(dev.Free(dbuf));
    // Pinning rate.
    const int64_t t0 = rt.NowNanos();
    ZR_ASSIGN_OR_RETURN(
        Buffer pin, rt.AllocateHost(big, HostMemoryKind::kPinned, "pin rate"));
    const double pin_gbps = big / std::max<double>(rt.NowNanos() - t0, 1.0);
    ZR_RETURN_IF_ERROR(rt.FreeHost(pin));
    p.mutable_host()->set_pin_gbps(pin_gbps);
    ZR_RETURN_IF_ERROR(rt.FreeHost(pinned));
    ZR_RETURN_IF_ERROR(rt.FreeHost(pageable));
    note(absl::StrFormat("pinning %d MiB: %.2f GB/s", big >> 20, pin_gbps));
  }

  // ---- Collectives (all ranks take part).
  if (rt.world_size() > 1) {
    const int n = rt.world_size();
    sim::FabricProfile* fabric = p.mutable_fabric();
    fabric->clear_allgather_busbw();
    fabric->clear_reduce_scatter_busbw();
    fabric->clear_allreduce_busbw();
    fabric->set_base_latency_us(0);
    fabric->set_step_latency_us(0);
    for (int64_t total = 1 << 20; total <= o.max_bytes; total *= 8) {
      const int64_t el = total / 2 / n * n;  // bf16, divisible by n
      ZR_ASSIGN_OR_RETURN(Buffer buf, dev.Allocate(el * 2 * 2, "collective"));
      ZR_RETURN_IF_ERROR(stream->Memset(buf.All(), 0, "zero"));
      const TensorRef all = TensorRef::Of(buf, DType::kBF16, 0, el);
      const TensorRef part = TensorRef::Of(buf, DType::kBF16, el, el / n);
      const TensorRef out = TensorRef::Of(buf, DType::kBF16, el, el);
      const double f = (n - 1.0) / n;
      ZR_ASSIGN_OR_RETURN(double ag, bench.DeviceUs([&] {
        return rt.world().AllGather(*stream, part, all, "ag");
      }));
      ZR_ASSIGN_OR_RETURN(double rs, bench.DeviceUs([&] {
        return rt.world().ReduceScatter(*stream, all, part, "rs");
      }));
      ZR_ASSIGN_OR_RETURN(double ar, bench.DeviceUs([&] {
        return rt.world().AllReduce(*stream, all, out, runtime::ReduceOp::kSum,
                                    "ar");
      }));
      ZR_RETURN_IF_ERROR(dev.Free(buf));
      const double bytes = el * 2.0;
      auto add = [&](google::protobuf::RepeatedPtrField<sim::CurvePoint>* c,
                     double busbw) {
        sim::CurvePoint* pt = c->Add();
        pt->set_size(bytes);
        pt->set_value(busbw);
      };
      add(fabric->mutable_allgather_busbw(), f * bytes / (ag * 1e3));
      add(fabric->mutable_reduce_scatter_busbw(), f * bytes / (rs * 1e3));
      add(fabric->mutable_allreduce_busbw(), 2 * f * bytes / (ar * 1e3));
      note(absl::StrFormat(
          "collectives of %d MiB on %d ranks: all-gather %.1f, "
          "reduce-scatter %.1f, all-reduce %.1f GB/s bus bandwidth",
          total >> 20, n, f * bytes / (ag * 1e3), f * bytes / (rs * 1e3),
          2 * f * bytes / (ar * 1e3)));
    }
  }

  // ---- Host AdamW by threads: the host's memory bandwidth as the
  // optimizer sees it (28 bytes per parameter).
  {
    const int64_t n = o.adam_elements;
    ZR_ASSIGN_OR_RETURN(
        Buffer state,
        rt.AllocateHost(n * 16, HostMemoryKind::kPageable, "adam"));
    const int max_threads = zero::OptimizerThreads(0);
    double one = 0, all = 0;
    for (int threads : {1, max_threads}) {
      runtime::HostTask task;
      task.label = "adamw";
      task.writes = {state.All()};
      task.memory_bytes = 28 * n;
      task.flops = 15.0 * n;
      task.threads = threads;
      task.run = [&, threads]() -> absl::Status {
        float* f = static_cast<float*>(state.data());
        kernels::AdamWArgs a;
        a.n = n;
        zero::HostAdamWStep(a, f, f + n, f + 2 * n, f + 3 * n, threads);
        return absl::OkStatus();
      };
      std::vector<double> samples;
      for (int r = 0; r < std::max(3, o.reps / 2); ++r) {
        const int64_t t0 = rt.NowNanos();
        ZR_RETURN_IF_ERROR(rt.RunHostTask(task));
        samples.push_back((rt.NowNanos() - t0) / 1e9);
      }
      const double gbps = 28.0 * n / Median(samples) / 1e9;
      (threads == 1 ? one : all) = gbps;
    }
    ZR_RETURN_IF_ERROR(rt.FreeHost(state));
    p.mutable_host()->set_memory_bandwidth_gbps_per_thread(one);
    p.mutable_host()->set_memory_bandwidth_gbps_per_rank(all);
    p.mutable_host()->set_cores_per_rank(max_threads);
    note(
        absl::StrFormat("host AdamW: %.1f GB/s on 1 thread (%.2f Gparam/s), "
                        "%.1f GB/s on %d threads (%.2f Gparam/s)",
                        one, one / 28, all, max_threads, all / 28));
  }
  return result;
}

std::string ProfileText(const Result& result) {
  std::string text;
  google::protobuf::TextFormat::PrintToString(result.profile, &text);
  std::string header =
      "# proto-file: sim/profile.proto\n"
      "# proto-message: zero3.sim.HardwareProfile\n#\n"
      "# Measured by `zero3 calibrate` through the runtime interface: device\n"
      "# times are medians over repetitions of host time between stream\n"
      "# synchronizes (amortized over several launches for short work);\n"
      "# copies are cudaMemcpyAsync-style calls on a non-blocking stream;\n"
      "# collectives span all ranks of the run; host AdamW runs the engine's\n"
      "# optimizer. Peaks, capacities and API costs not listed below come\n"
      "# from the base profile. The measurements:\n#\n";
  for (absl::string_view line : absl::StrSplit(result.report, '\n')) {
    if (!line.empty()) absl::StrAppend(&header, "#   ", line, "\n");
  }
  return absl::StrCat(header, "\n", text);
}

}  // namespace calibrate
}  // namespace zero3
