// Copyright 2026 The zero3 Authors.

#include "tools/calibrate/calibrate.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/kernels/op_args.h"
#include "core/kernels/op_cost.h"
#include "core/runtime/launch_count.h"
#include "core/util/median.h"
#include "core/util/status_macros.h"
#include "core/zero/host_adam.h"
#include "google/protobuf/text_format.h"
#include "tools/calibrate/host_adam_rate.h"
#include "tools/calibrate/queue_units.h"

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
    return std::max(0.0, (UpperMedian(with) - UpperMedian(without)) / inner);
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
    return UpperMedian(samples);
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

// Attention forward and backward of `a` on `act`, which holds 4 query-sized
// and 4 key-sized bf16 tensors, and `stats` (the fp32 log-sum-exp).
struct AttentionKernels {
  ops::AttentionForward forward;
  ops::AttentionBackward backward;
};

AttentionKernels AttentionOn(const kernels::AttentionArgs& a, const Buffer& act,
                             const Buffer& stats) {
  const int64_t tq = a.batch * a.seq * a.num_heads * a.head_dim;
  const int64_t tk = a.batch * a.seq * a.num_kv_heads * a.head_dim;
  const int64_t lse = a.batch * a.num_heads * a.seq;
  int64_t at = 0;
  auto take = [&](int64_t n) {
    TensorRef t = TensorRef::Of(act, DType::kBF16, at, n);
    at += n;
    return t;
  };
  AttentionKernels attention;
  ops::AttentionForward& f = attention.forward;
  f.args = a;
  f.q = take(tq);
  f.k = take(tk);
  f.v = take(tk);
  f.out = take(tq);
  f.lse = TensorRef::Of(stats, DType::kF32, 0, lse);
  ops::AttentionBackward& bw = attention.backward;
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
  return attention;
}

// One calibration on one rank: each Measure* fills the profile's fields of
// one kind of work and notes what it found (on rank 0). Calibrate runs them
// in a fixed order; later ones read figures earlier ones set.
class Calibration {
 public:
  Calibration(Runtime& rt, Stream& stream, Stream& other, const Options& o,
              Result& result)
      : rt_(rt),
        dev_(rt.device()),
        stream_(stream),
        other_(other),
        bench_(rt, stream, o.reps),
        o_(o),
        p_(result.profile),
        report_(result.report),
        leader_(rt.rank() == 0),
        peak_bf16_(p_.gpu().peak_bf16_tflops()) {}

  absl::Status Init() {
    TakeDevice();
    return bench_.Init();
  }

  absl::Status MeasureGemms();
  absl::Status MeasureAttention();
  absl::Status MeasureMemoryBound();
  absl::Status MeasureLaunchQueue();
  absl::Status MeasureCopies();
  absl::Status MeasureCollectives();
  absl::Status MeasureHostAdam();
  absl::Status MeasureDrive();

 private:
  // The buffers the copy measurements share.
  struct CopyBuffers {
    Buffer device;    // 2 x max_bytes
    Buffer pinned;    // 2 x max_bytes
    Buffer pageable;  // max_bytes
  };

  void Note(const std::string& line) {
    if (leader_) absl::StrAppend(&report_, line, "\n");
  }
  // The device's own name and memory over the base profile's, so that the
  // profile of a smaller GPU does not promise the base GPU's memory to the
  // preflight and whatif. Its peaks and SM count stay the base profile's.
  void TakeDevice() {
    const std::string name(dev_.name());
    const double gib =
        std::round(static_cast<double>(dev_.total_memory_bytes()) /
                   static_cast<double>(int64_t{1} << 30) * 100) /
        100;
    if (name == p_.gpu().name() && gib == p_.gpu().memory_gib()) return;
    Note(absl::StrFormat(
        "gpu.name \"%s\" and gpu.memory_gib %.2f: the device's (peaks, "
        "bandwidths and the SM count are the base profile's, %s)",
        name, gib, p_.gpu().name()));
    p_.set_description(absl::StrFormat(
        "%s, %.2f GiB, measured by zero3 calibrate (what it does not "
        "measure: the %s profile's)",
        name, gib, p_.gpu().name()));
    p_.mutable_gpu()->set_name(name);
    p_.mutable_gpu()->set_memory_gib(gib);
  }
  absl::StatusOr<double> MeasureGemm(const GemmShape& g);
  absl::Status MeasureAttentionAt(const model::ModelSpec& spec, int64_t batch,
                                  int64_t seq, std::vector<double>& fwd_eff,
                                  std::vector<double>& bwd_eff);
  absl::Status MeasureCopyBandwidths(const CopyBuffers& b);
  absl::Status MeasureCopyCosts(const CopyBuffers& b);
  absl::Status MeasurePageableStaging(const CopyBuffers& b);
  absl::Status MeasureBidirectional(const CopyBuffers& b);
  absl::Status MeasurePinRate();
  absl::Status MeasureCollectivesOf(int64_t total);
  // The launch queue's probe: long GEMMs that keep the device busy.
  struct QueueProbe {
    static constexpr int kLong = 12;
    static constexpr int kMaxCommands = 8192;
    ops::Matmul long_gemm;
  };
  struct QueueDepth {
    int commands = 0;  // 0: never blocked
    double blocked_us = 0;
  };
  absl::StatusOr<QueueDepth> QueueDepthOf(
      const QueueProbe& probe, const std::function<absl::Status()>& enqueue);

  Runtime& rt_;
  runtime::Device& dev_;
  Stream& stream_;
  Stream& other_;
  Bench bench_;
  const Options& o_;
  sim::HardwareProfile& p_;
  std::string& report_;
  const bool leader_;
  const double peak_bf16_;
};

// GEMMs at the model presets' shapes, and square ones for the efficiency
// curve.
absl::Status Calibration::MeasureGemms() {
  std::set<GemmShape> shapes;
  for (const model::ModelSpec& spec : o_.models) {
    for (const auto& [b, seq] : o_.batches) {
      for (const GemmShape& g : ModelGemms(spec, b * seq)) shapes.insert(g);
    }
  }
  std::map<double, double> curve;  // flops -> efficiency, square GEMMs
  for (int64_t n : {512, 1024, 2048, 4096, 8192}) {
    shapes.insert({n, n, n, false, true});
  }
  p_.mutable_gpu()->clear_gemm_table();
  for (const GemmShape& g : shapes) {
    const double flops = 2.0 * g.m * g.n * g.k;
    ZR_ASSIGN_OR_RETURN(double us, MeasureGemm(g));
    // Faster than the peak is a timing glitch (a launch or a synchronize
    // that straddled the repetitions): once more, then left out.
    if (flops / (us * 1e6) > peak_bf16_) {
      ZR_ASSIGN_OR_RETURN(us, MeasureGemm(g));
      if (flops / (us * 1e6) > peak_bf16_) {
        Note(absl::StrFormat(
            "gemm %6d x %6d x %6d %s%s: %.1f us, faster than the %.0f "
            "TFLOP/s peak twice: left out",
            g.m, g.n, g.k, g.ta ? "T" : "N", g.tb ? "T" : "N", us, peak_bf16_));
        continue;
      }
    }
    sim::GemmPoint* point = p_.mutable_gpu()->add_gemm_table();
    point->set_m(g.m);
    point->set_n(g.n);
    point->set_k(g.k);
    point->set_trans_a(g.ta);
    point->set_trans_b(g.tb);
    point->set_us(us);
    const double eff = flops / (us * 1e6 * peak_bf16_);
    if (g.m == g.n && g.n == g.k) curve[flops] = std::min(1.0, eff);
    Note(absl::StrFormat("gemm %6d x %6d x %6d %s%s: %10.1f us, %6.1f TFLOP/s",
                         g.m, g.n, g.k, g.ta ? "T" : "N", g.tb ? "T" : "N", us,
                         flops / us / 1e6));
  }
  p_.mutable_gpu()->clear_matmul_efficiency();
  for (const auto& [flops, eff] : curve) {
    sim::CurvePoint* c = p_.mutable_gpu()->add_matmul_efficiency();
    c->set_size(flops);
    c->set_value(eff);
  }
  return absl::OkStatus();
}

// Device time in us of one bf16 GEMM of shape `g` on zeroed buffers.
absl::StatusOr<double> Calibration::MeasureGemm(const GemmShape& g) {
  const int64_t a_el = g.m * g.k, b_el = g.k * g.n, c_el = g.m * g.n;
  ZR_ASSIGN_OR_RETURN(Buffer buf,
                      dev_.Allocate((a_el + b_el + c_el) * 2, "gemm"));
  ZR_RETURN_IF_ERROR(stream_.Memset(buf.All(), 0, "zero gemm"));
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
      bench_.DeviceUs([&] { return stream_.Launch(KernelCall(mm, "gemm")); },
                      inner));
  ZR_RETURN_IF_ERROR(dev_.Free(buf));
  return us;
}

// Attention, forward and backward, at the models' shapes: the attention
// table and the efficiencies.
absl::Status Calibration::MeasureAttention() {
  std::vector<double> fwd_eff, bwd_eff;
  p_.mutable_gpu()->clear_attention_table();
  for (const model::ModelSpec& spec : o_.models) {
    for (const auto& [b, seq] : o_.batches) {
      ZR_RETURN_IF_ERROR(MeasureAttentionAt(spec, b, seq, fwd_eff, bwd_eff));
    }
  }
  if (!fwd_eff.empty()) {
    p_.mutable_gpu()->set_attention_efficiency(
        std::min(1.0, UpperMedian(fwd_eff)));
    p_.mutable_gpu()->set_attention_backward_efficiency(
        std::min(1.0, UpperMedian(bwd_eff)));
  }
  return absl::OkStatus();
}

absl::Status Calibration::MeasureAttentionAt(const model::ModelSpec& spec,
                                             int64_t b, int64_t seq,
                                             std::vector<double>& fwd_eff,
                                             std::vector<double>& bwd_eff) {
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
                      dev_.Allocate((4 * tq + 4 * tk) * 2, "attention"));
  ZR_ASSIGN_OR_RETURN(Buffer stats, dev_.Allocate(lse * 4, "lse"));
  ZR_RETURN_IF_ERROR(stream_.Memset(act.All(), 0, "zero"));
  ZR_RETURN_IF_ERROR(stream_.Memset(stats.All(), 0, "zero"));
  const AttentionKernels attention = AttentionOn(a, act, stats);
  const ops::AttentionForward& f = attention.forward;
  const ops::AttentionBackward& bw = attention.backward;
  ZR_ASSIGN_OR_RETURN(double fus, bench_.DeviceUs([&] {
    return stream_.Launch(KernelCall(f, "attention fwd"));
  }));
  ZR_ASSIGN_OR_RETURN(double bus, bench_.DeviceUs([&] {
    return stream_.Launch(KernelCall(bw, "attention bwd"));
  }));
  ZR_RETURN_IF_ERROR(dev_.Free(act));
  ZR_RETURN_IF_ERROR(dev_.Free(stats));
  const double ff =
      static_cast<double>(kernels::AttentionForwardCost(a, DType::kBF16).flops);
  const double bf = static_cast<double>(
      kernels::AttentionBackwardCost(a, DType::kBF16).flops);
  sim::AttentionPoint* point = p_.mutable_gpu()->add_attention_table();
  point->set_batch(b);
  point->set_seq(seq);
  point->set_num_heads(a.num_heads);
  point->set_num_kv_heads(a.num_kv_heads);
  point->set_head_dim(a.head_dim);
  point->set_forward_us(fus);
  point->set_backward_us(bus);
  fwd_eff.push_back(ff / (fus * 1e6 * peak_bf16_));
  bwd_eff.push_back(bf / (bus * 1e6 * peak_bf16_));
  Note(absl::StrFormat(
      "attention %s b%d s%d: forward %.1f us (%.1f TFLOP/s), "
      "backward %.1f us (%.1f TFLOP/s)",
      spec.name(), b, seq, fus, ff / fus / 1e6, bus, bf / bus / 1e6));
  return absl::OkStatus();
}

// Memory-bound kernels: achieved bandwidth, the shortest kernel, and the
// host's launch cost.
absl::Status Calibration::MeasureMemoryBound() {
  const int64_t n = int64_t{1} << 27;  // 3 x 256 MiB of bf16
  ZR_ASSIGN_OR_RETURN(Buffer buf, dev_.Allocate(3 * n * 2, "stream"));
  ZR_RETURN_IF_ERROR(stream_.Memset(buf.All(), 0, "zero"));
  ops::Add add;
  add.args.n = n;
  add.a = TensorRef::Of(buf, DType::kBF16, 0, n);
  add.b = TensorRef::Of(buf, DType::kBF16, n, n);
  add.out = TensorRef::Of(buf, DType::kBF16, 2 * n, n);
  ZR_ASSIGN_OR_RETURN(
      double us,
      bench_.DeviceUs([&] { return stream_.Launch(KernelCall(add, "add")); },
                      5));
  const double gbps = 3.0 * n * 2 / (us * 1e3);
  p_.mutable_gpu()->set_hbm_efficiency(
      std::min(1.0, gbps / p_.gpu().hbm_bandwidth_gbps()));
  ops::Fill tiny;
  tiny.args.n = 1;
  tiny.x = TensorRef::Of(buf, DType::kBF16, 0, 1);
  ZR_ASSIGN_OR_RETURN(
      double min_us,
      bench_.DeviceUs([&] { return stream_.Launch(KernelCall(tiny, "tiny")); },
                      200));
  ZR_ASSIGN_OR_RETURN(
      double launch_us,
      bench_.HostUs([&] { return stream_.Launch(KernelCall(tiny, "tiny")); },
                    200));
  ZR_RETURN_IF_ERROR(dev_.Free(buf));
  p_.mutable_gpu()->set_min_kernel_us(min_us);
  p_.mutable_host()->set_launch_us(launch_us);
  Note(
      absl::StrFormat("memory-bound add of 3 x 256 MiB: %.1f GB/s; shortest "
                      "kernel %.2f us; launch %.2f us on the host",
                      gbps, min_us, launch_us));
  return absl::OkStatus();
}

// The launch queue: how many commands a stream holds, while the device is
// busy, before enqueueing one more blocks the host. Long GEMMs keep the
// device busy (none finishes while the queue fills), then commands of one
// kind are enqueued until one takes far longer than a launch. The driver's
// queue holds commands of different sizes: the depths of tiny kernels,
// kernels with more arguments, GEMMs, event records and copies give each
// kind's room (SetQueueUnits), and the attention backward's (several
// launches on GPUs) whether the queue holds device launches or ops.
absl::Status Calibration::MeasureLaunchQueue() {
  const int64_t m = 16384, n = 16384, k = 8192;
  const int64_t small = 1024;  // elements of each small operand
  ZR_ASSIGN_OR_RETURN(
      Buffer buf,
      dev_.Allocate((m * k + k * n + m * n + 3 * small) * 2, "queue"));
  ZR_RETURN_IF_ERROR(stream_.Memset(buf.All(), 0, "zero queue"));
  ZR_RETURN_IF_ERROR(stream_.Synchronize());
  QueueProbe probe;
  probe.long_gemm.args.m = m;
  probe.long_gemm.args.n = n;
  probe.long_gemm.args.k = k;
  probe.long_gemm.args.trans_b = true;
  probe.long_gemm.a = TensorRef::Of(buf, DType::kBF16, 0, m * k);
  probe.long_gemm.b = TensorRef::Of(buf, DType::kBF16, m * k, k * n);
  probe.long_gemm.c = TensorRef::Of(buf, DType::kBF16, m * k + k * n, m * n);
  const int64_t at = m * k + k * n + m * n;
  auto part = [&](int i) {
    return TensorRef::Of(buf, DType::kBF16, at + i * small, small);
  };
  ops::Fill tiny;
  tiny.args.n = 1;
  tiny.x = part(0);
  ops::Add add;
  add.args.n = small;
  add.a = part(0);
  add.b = part(1);
  add.out = part(2);
  ops::Matmul gemm;  // 32 x 32 x 32 on the small operands
  gemm.args.m = gemm.args.n = gemm.args.k = 32;
  gemm.a = part(0);
  gemm.b = part(1);
  gemm.c = part(2);
  // Attention backward of 64 tokens, one head of 64 (several launches on
  // GPUs).
  kernels::AttentionArgs aa;
  aa.batch = 1;
  aa.seq = 64;
  aa.num_heads = aa.num_kv_heads = 1;
  aa.head_dim = 64;
  ZR_ASSIGN_OR_RETURN(Buffer act, dev_.Allocate(8 * 64 * 64 * 2, "queue act"));
  ZR_ASSIGN_OR_RETURN(Buffer lse, dev_.Allocate(64 * 4, "queue lse"));
  ZR_RETURN_IF_ERROR(stream_.Memset(act.All(), 0, "zero queue act"));
  ZR_RETURN_IF_ERROR(stream_.Memset(lse.All(), 0, "zero queue lse"));
  const AttentionKernels attention = AttentionOn(aa, act, lse);
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Event> event,
                      dev_.CreateEvent());
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Event> timed,
                      dev_.CreateTimedEvent());
  const runtime::BufferSlice from = buf.Slice(at * 2, 1024),
                             to = buf.Slice(at * 2 + 4096, 1024);
  const std::vector<std::pair<std::string, std::function<absl::Status()>>>
      kinds = {
          {"tiny kernels",
           [&] { return stream_.Launch(KernelCall(tiny, "tiny")); }},
          {"3-operand kernels",
           [&] { return stream_.Launch(KernelCall(add, "add")); }},
          {"32^3 GEMMs",
           [&] { return stream_.Launch(KernelCall(gemm, "gemm")); }},
          {"64-token attention backwards",
           [&] {
             return stream_.Launch(
                 KernelCall(attention.backward, "attention bwd"));
           }},
          {"event records", [&] { return stream_.Record(*event); }},
          {"timed event records", [&] { return stream_.Record(*timed); }},
          {"1 KiB device copies",
           [&] { return stream_.Copy(to, from, "queue copy"); }},
      };
  std::vector<std::string> depths;
  QueueDepths room;
  room.long_gemms = QueueProbe::kLong;
  room.max_commands = QueueProbe::kMaxCommands;
  room.attention_launches =
      runtime::LaunchesOf(KernelCall(attention.backward, "attention bwd"));
  int* const commands[] = {
      &room.tiny,  &room.kernel,      &room.gemm, &room.attention_backward,
      &room.event, &room.timed_event, &room.copy};
  for (size_t i = 0; i < kinds.size(); ++i) {
    const auto& [name, enqueue] = kinds[i];
    ZR_ASSIGN_OR_RETURN(const QueueDepth d, QueueDepthOf(probe, enqueue));
    *commands[i] = d.commands;
    if (i == 0) {
      Note(d.commands > 0
               ? absl::StrFormat(
                     "launch queue: a stream took %d commands while the "
                     "device was busy; the next launch blocked the host for "
                     "%.0f us",
                     d.commands, d.blocked_us)
               : std::string("launch queue: the launches did not block the "
                             "host"));
    }
    depths.push_back(absl::StrFormat(
        "%s %s", name,
        d.commands > 0 ? absl::StrCat(d.commands) : std::string("unbounded")));
  }
  // Waits for an event of another stream still pending behind long GEMMs
  // there (the engine's cross-stream waits).
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Event> pending,
                      dev_.CreateEvent());
  for (int i = 0; i < QueueProbe::kLong; ++i) {
    ZR_RETURN_IF_ERROR(other_.Launch(KernelCall(probe.long_gemm, "long gemm")));
  }
  ZR_RETURN_IF_ERROR(other_.Record(*pending));
  ZR_ASSIGN_OR_RETURN(const QueueDepth waits, QueueDepthOf(probe, [&] {
                        return stream_.Wait(*pending);
                      }));
  ZR_RETURN_IF_ERROR(other_.Synchronize());
  room.wait = waits.commands;
  depths.push_back(absl::StrFormat("waits for another stream's event %s",
                                   waits.commands > 0
                                       ? absl::StrCat(waits.commands)
                                       : std::string("unbounded")));
  Note(absl::StrCat("launch queue by command (12 long GEMMs first): ",
                    absl::StrJoin(depths, ", ")));
  Note(SetQueueUnits(room, p_.mutable_host()));
  ZR_RETURN_IF_ERROR(dev_.Free(buf));
  ZR_RETURN_IF_ERROR(dev_.Free(act));
  ZR_RETURN_IF_ERROR(dev_.Free(lse));
  return absl::OkStatus();
}

// Commands the stream holds behind QueueProbe::kLong long GEMMs before
// `enqueue` blocks the host (0: it never did).
absl::StatusOr<Calibration::QueueDepth> Calibration::QueueDepthOf(
    const QueueProbe& probe, const std::function<absl::Status()>& enqueue) {
  ZR_RETURN_IF_ERROR(stream_.Synchronize());
  for (int i = 0; i < QueueProbe::kLong; ++i) {
    ZR_RETURN_IF_ERROR(
        stream_.Launch(KernelCall(probe.long_gemm, "long gemm")));
  }
  const double threshold_ns = std::max(50e3, 20e3 * p_.host().launch_us());
  QueueDepth d;
  for (int i = 0; i < QueueProbe::kMaxCommands; ++i) {
    const int64_t t0 = rt_.NowNanos();
    ZR_RETURN_IF_ERROR(enqueue());
    const double ns = static_cast<double>(rt_.NowNanos() - t0);
    if (ns > threshold_ns) {
      d.commands = QueueProbe::kLong + i;
      d.blocked_us = ns / 1e3;
      break;
    }
  }
  ZR_RETURN_IF_ERROR(stream_.Synchronize());
  return d;
}

// Host <-> device copies: bandwidths, fixed costs, pageable staging, both
// directions at once, and the pinning rate.
absl::Status Calibration::MeasureCopies() {
  const int64_t big = o_.max_bytes;
  CopyBuffers b;
  ZR_ASSIGN_OR_RETURN(b.device, dev_.Allocate(2 * big, "copy device"));
  ZR_ASSIGN_OR_RETURN(
      b.pinned,
      rt_.AllocateHost(2 * big, HostMemoryKind::kPinned, "copy pinned"));
  ZR_ASSIGN_OR_RETURN(
      b.pageable,
      rt_.AllocateHost(big, HostMemoryKind::kPageable, "copy pageable"));
  ZR_RETURN_IF_ERROR(stream_.Memset(b.device.All(), 0, "zero"));
  ZR_RETURN_IF_ERROR(MeasureCopyBandwidths(b));
  ZR_RETURN_IF_ERROR(MeasureCopyCosts(b));
  ZR_RETURN_IF_ERROR(MeasurePageableStaging(b));
  ZR_RETURN_IF_ERROR(MeasureBidirectional(b));
  const sim::HostLinkProfile& link = p_.host_link();
  Note(
      absl::StrFormat("copy latency %.2f us, copy call %.2f us on the host; "
                      "pageable H2D returns early up to %d bytes (staging "
                      "%.2f GB/s); both directions at once: %.0f%% each",
                      link.copy_latency_us(), p_.host().copy_call_us(),
                      link.pageable_h2d_async_max_bytes(), link.staging_gbps(),
                      100 * link.bidirectional_efficiency()));
  ZR_RETURN_IF_ERROR(dev_.Free(b.device));
  ZR_RETURN_IF_ERROR(MeasurePinRate());
  ZR_RETURN_IF_ERROR(rt_.FreeHost(b.pinned));
  ZR_RETURN_IF_ERROR(rt_.FreeHost(b.pageable));
  Note(absl::StrFormat("pinning %d MiB: %.2f GB/s", big >> 20,
                       p_.host().pin_gbps()));
  return absl::OkStatus();
}

// Pinned and pageable copies of max_bytes in each direction.
absl::Status Calibration::MeasureCopyBandwidths(const CopyBuffers& b) {
  const int64_t big = o_.max_bytes;
  struct Kind {
    const char* name;
    bool to_device;
    const Buffer* host;
    std::function<void(double)> set;
  };
  sim::HostLinkProfile* link = p_.mutable_host_link();
  const std::vector<Kind> kinds = {
      {"pinned H2D", true, &b.pinned,
       [&](double g) { link->set_pinned_h2d_gbps(g); }},
      {"pinned D2H", false, &b.pinned,
       [&](double g) { link->set_pinned_d2h_gbps(g); }},
      {"pageable H2D", true, &b.pageable,
       [&](double g) { link->set_pageable_h2d_gbps(g); }},
      {"pageable D2H", false, &b.pageable,
       [&](double g) { link->set_pageable_d2h_gbps(g); }},
  };
  for (const Kind& k : kinds) {
    auto copy = [&](int64_t bytes) {
      const runtime::BufferSlice d = b.device.Slice(0, bytes),
                                 h = k.host->Slice(0, bytes);
      return k.to_device ? stream_.Copy(d, h, k.name)
                         : stream_.Copy(h, d, k.name);
    };
    ZR_ASSIGN_OR_RETURN(double us, bench_.DeviceUs([&] { return copy(big); }));
    const double gbps = big / (us * 1e3);
    k.set(gbps);
    Note(absl::StrFormat("%s of %d MiB: %.2f GB/s", k.name, big >> 20, gbps));
  }
  return absl::OkStatus();
}

// The fixed cost of one copy: a 4 KiB pinned copy's device time, and the
// host time of the call.
absl::Status Calibration::MeasureCopyCosts(const CopyBuffers& b) {
  auto small_copy = [&](const char* label) {
    return [&, label] {
      return stream_.Copy(b.pinned.Slice(0, 4096), b.device.Slice(0, 4096),
                          label);
    };
  };
  ZR_ASSIGN_OR_RETURN(double small_us,
                      bench_.DeviceUs(small_copy("small"), 50));
  p_.mutable_host_link()->set_copy_latency_us(small_us);
  ZR_ASSIGN_OR_RETURN(double call_us, bench_.HostUs(small_copy("call"), 50));
  p_.mutable_host()->set_copy_call_us(call_us);
  return absl::OkStatus();
}

// Pageable H2D: the largest size whose call returns before the stream's
// earlier work is done (the driver staged it), and the staging rate.
absl::Status Calibration::MeasurePageableStaging(const CopyBuffers& b) {
  const int64_t big = o_.max_bytes;
  sim::HostLinkProfile* link = p_.mutable_host_link();
  ops::Fill spin;
  spin.args.n = std::min<int64_t>(big, int64_t{256} << 20) / 2;
  spin.x = TensorRef::Of(b.device, DType::kBF16, big / 2, spin.args.n);
  int64_t async_max = 0;
  double staging_gbps = link->staging_gbps();
  for (int64_t bytes = 64 << 10; bytes <= (16 << 20) && bytes <= big / 2;
       bytes *= 2) {
    ZR_RETURN_IF_ERROR(stream_.Synchronize());
    // Milliseconds of queued work ahead of the copy.
    for (int i = 0; i < 50; ++i) {
      ZR_RETURN_IF_ERROR(stream_.Launch(KernelCall(spin, "busy")));
    }
    const int64_t t0 = rt_.NowNanos();
    ZR_RETURN_IF_ERROR(stream_.Copy(b.device.Slice(0, bytes),
                                    b.pageable.Slice(0, bytes), "staged?"));
    const int64_t returned = rt_.NowNanos() - t0;
    ZR_RETURN_IF_ERROR(stream_.Synchronize());
    const int64_t done = rt_.NowNanos() - t0;
    if (returned * 2 < done) {
      async_max = bytes;
      staging_gbps = bytes / std::max<double>(returned, 1.0);
    }
  }
  link->set_pageable_h2d_async_max_bytes(async_max);
  link->set_staging_gbps(staging_gbps);
  return absl::OkStatus();
}

// Both directions at once, on two streams, against one direction alone.
absl::Status Calibration::MeasureBidirectional(const CopyBuffers& b) {
  const int64_t big = o_.max_bytes;
  ZR_ASSIGN_OR_RETURN(double one_us, bench_.DeviceUs([&] {
    return stream_.Copy(b.device.Slice(0, big), b.pinned.Slice(0, big), "h2d");
  }));
  std::vector<double> both;
  for (int r = 0; r < o_.reps; ++r) {
    ZR_RETURN_IF_ERROR(dev_.Synchronize());
    const int64_t t0 = rt_.NowNanos();
    ZR_RETURN_IF_ERROR(
        stream_.Copy(b.device.Slice(0, big), b.pinned.Slice(0, big), "h2d"));
    ZR_RETURN_IF_ERROR(
        other_.Copy(b.pinned.Slice(big, big), b.device.Slice(big, big), "d2h"));
    ZR_RETURN_IF_ERROR(dev_.Synchronize());
    both.push_back((rt_.NowNanos() - t0) / 1e3);
  }
  p_.mutable_host_link()->set_bidirectional_efficiency(
      std::min(1.0, one_us / UpperMedian(both)));
  return absl::OkStatus();
}

// The drive behind nvme_path: the swapper's file, written then read in
// 64 MiB transfers with two in flight, by every rank at once; the node's
// rates are a rank's times the ranks.
absl::Status Calibration::MeasureDrive() {
  constexpr int64_t kPiece = int64_t{64} << 20;
  const int64_t pieces = std::max<int64_t>(2, o_.nvme_bytes / kPiece);
  runtime::DriveFileOptions f;
  f.dir = o_.nvme_path;
  f.name = absl::StrCat("zero3_calibrate_rank", rt_.rank(), ".swap");
  f.bytes = pieces * kPiece;
  f.swap = o_.swap;
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<runtime::DriveFile> file,
                      rt_.OpenDriveFile(f));
  const int64_t align = runtime::SwapFile::kAlignment;
  ZR_ASSIGN_OR_RETURN(
      Buffer host,
      rt_.AllocateHost(2 * kPiece + align, HostMemoryKind::kPageable, "drive"));
  const int64_t base = runtime::SwapFile::AlignmentGap(host.data());
  double gbps[2] = {0, 0};  // read, write
  for (const bool write : {true, false}) {
    const int64_t t0 = rt_.NowNanos();
    int64_t last = 0;
    for (int64_t k = 0; k < pieces; ++k) {
      const runtime::BufferSlice b =
          host.Slice(base + (k % 2) * kPiece, kPiece);
      ZR_ASSIGN_OR_RETURN(const int64_t t,
                          write ? file->Write(k * kPiece, b, "calibrate write")
                                : file->Read(k * kPiece, b, "calibrate read"));
      if (last != 0) ZR_RETURN_IF_ERROR(file->Wait(last));
      last = t;
    }
    ZR_RETURN_IF_ERROR(file->WaitAll());
    gbps[write ? 1 : 0] = static_cast<double>(pieces * kPiece) /
                          std::max<double>(rt_.NowNanos() - t0, 1.0);
  }
  file.reset();
  ZR_RETURN_IF_ERROR(rt_.FreeHost(host));
  const int ranks = rt_.world_size();
  p_.mutable_host()->set_nvme_read_gbps_per_node(gbps[0] * ranks);
  p_.mutable_host()->set_nvme_write_gbps_per_node(gbps[1] * ranks);
  Note(absl::StrFormat(
      "NVMe under %s: %d rank(s) at once, %d MiB each in 64 MiB transfers "
      "(block %d, depth %d): read %.2f GB/s, write %.2f GB/s a rank",
      o_.nvme_path, ranks, (pieces * kPiece) >> 20, o_.swap.block_size,
      o_.swap.queue_depth, gbps[0], gbps[1]));
  return absl::OkStatus();
}

// How fast host memory is pinned: one pinned allocation of max_bytes.
absl::Status Calibration::MeasurePinRate() {
  const int64_t big = o_.max_bytes;
  const int64_t t0 = rt_.NowNanos();
  ZR_ASSIGN_OR_RETURN(
      Buffer pin, rt_.AllocateHost(big, HostMemoryKind::kPinned, "pin rate"));
  const double pin_gbps = big / std::max<double>(rt_.NowNanos() - t0, 1.0);
  ZR_RETURN_IF_ERROR(rt_.FreeHost(pin));
  p_.mutable_host()->set_pin_gbps(pin_gbps);
  return absl::OkStatus();
}

// Collectives' bus bandwidth by size (all ranks take part; none with one
// rank).
absl::Status Calibration::MeasureCollectives() {
  if (rt_.world_size() <= 1) return absl::OkStatus();
  sim::FabricProfile* fabric = p_.mutable_fabric();
  fabric->clear_allgather_busbw();
  fabric->clear_reduce_scatter_busbw();
  fabric->clear_allreduce_busbw();
  fabric->set_base_latency_us(0);
  fabric->set_step_latency_us(0);
  for (int64_t total = 1 << 20; total <= o_.max_bytes; total *= 8) {
    ZR_RETURN_IF_ERROR(MeasureCollectivesOf(total));
  }
  return absl::OkStatus();
}

// All-gather, reduce-scatter and all-reduce of `total` bytes of bf16.
absl::Status Calibration::MeasureCollectivesOf(int64_t total) {
  const int n = rt_.world_size();
  sim::FabricProfile* fabric = p_.mutable_fabric();
  const int64_t el = total / 2 / n * n;  // bf16, divisible by n
  ZR_ASSIGN_OR_RETURN(Buffer buf, dev_.Allocate(el * 2 * 2, "collective"));
  ZR_RETURN_IF_ERROR(stream_.Memset(buf.All(), 0, "zero"));
  const TensorRef all = TensorRef::Of(buf, DType::kBF16, 0, el);
  const TensorRef part = TensorRef::Of(buf, DType::kBF16, el, el / n);
  const TensorRef out = TensorRef::Of(buf, DType::kBF16, el, el);
  const double f = (n - 1.0) / n;
  ZR_ASSIGN_OR_RETURN(double ag, bench_.DeviceUs([&] {
    return rt_.world().AllGather(stream_, part, all, "ag");
  }));
  ZR_ASSIGN_OR_RETURN(double rs, bench_.DeviceUs([&] {
    return rt_.world().ReduceScatter(stream_, all, part, "rs");
  }));
  ZR_ASSIGN_OR_RETURN(double ar, bench_.DeviceUs([&] {
    return rt_.world().AllReduce(stream_, all, out, runtime::ReduceOp::kSum,
                                 "ar");
  }));
  ZR_RETURN_IF_ERROR(dev_.Free(buf));
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
  Note(
      absl::StrFormat("collectives of %d MiB on %d ranks: all-gather %.1f, "
                      "reduce-scatter %.1f, all-reduce %.1f GB/s bus bandwidth",
                      total >> 20, n, f * bytes / (ag * 1e3),
                      f * bytes / (rs * 1e3), 2 * f * bytes / (ar * 1e3)));
  return absl::OkStatus();
}

// Host AdamW by threads: the host's memory bandwidth as the optimizer sees
// it (28 bytes per parameter).
absl::Status Calibration::MeasureHostAdam() {
  const int64_t n = o_.adam_elements;
  ZR_ASSIGN_OR_RETURN(
      Buffer state,
      rt_.AllocateHost(n * 16, HostMemoryKind::kPageable, "adam"));
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
    for (int r = 0; r < std::max(3, o_.reps / 2); ++r) {
      const int64_t t0 = rt_.NowNanos();
      ZR_RETURN_IF_ERROR(rt_.RunHostTask(task));
      samples.push_back((rt_.NowNanos() - t0) / 1e9);
    }
    const double gbps = 28.0 * n / UpperMedian(samples) / 1e9;
    (threads == 1 ? one : all) = gbps;
  }
  ZR_RETURN_IF_ERROR(rt_.FreeHost(state));
  // A base profile's curve by threads was measured on its own machine.
  SetHostAdamRate(one, all, max_threads, &p_);
  Note(
      absl::StrFormat("host AdamW: %.1f GB/s on 1 thread (%.2f Gparam/s), "
                      "%.1f GB/s on %d threads (%.2f Gparam/s)",
                      one, one / 28, all, max_threads, all / 28));
  return absl::OkStatus();
}

// `text` as comment lines of at most 78 columns (a longer word makes a
// longer line), indented like the measurements, continuations by 2 more.
std::string WrapComment(absl::string_view text) {
  std::string out, line = "#  ";
  bool line_empty = true;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (!line_empty && line.size() + 1 + word.size() > 78) {
      absl::StrAppend(&out, line, "\n");
      line = "#    ";
    }
    absl::StrAppend(&line, " ", word);
    line_empty = false;
  }
  return absl::StrCat(out, line, "\n");
}

}  // namespace

void ClearInStepAdjustments(sim::HardwareProfile* p) {
  p->mutable_gpu()->clear_gemm_in_step_factor();
  p->mutable_gpu()->clear_attention_in_step_factor();
  p->mutable_gpu()->clear_elementwise_in_step_factor();
  p->mutable_gpu()->clear_elementwise_in_step_us();
  p->mutable_gpu()->clear_kernel_in_step_factor();
  p->mutable_gpu()->clear_optimizer_in_step_factor();
  p->mutable_gpu()->clear_single_gpu_in_step_scale();
  p->mutable_gpu()->clear_copy2d_gbps();
  p->mutable_host_link()->clear_pageable_d2h_curve();
  p->mutable_host_link()->clear_pageable_shared_efficiency();
}

absl::StatusOr<Result> Calibrate(Runtime& rt, const Options& o) {
  Result result;
  result.profile = o.base;
  ClearInStepAdjustments(&result.profile);
  ZR_ASSIGN_OR_RETURN(auto stream, rt.device().CreateStream("calibrate"));
  ZR_ASSIGN_OR_RETURN(auto other, rt.device().CreateStream("calibrate 2"));
  Calibration c(rt, *stream, *other, o, result);
  auto progress = [&](const std::string& what) {
    if (o.progress && rt.rank() == 0) o.progress(what);
  };
  ZR_RETURN_IF_ERROR(c.Init());
  progress("GEMMs at the models' shapes");
  ZR_RETURN_IF_ERROR(c.MeasureGemms());
  progress("attention forward and backward");
  ZR_RETURN_IF_ERROR(c.MeasureAttention());
  progress("memory-bound kernels and launches");
  ZR_RETURN_IF_ERROR(c.MeasureMemoryBound());
  progress("the launch queue");
  ZR_RETURN_IF_ERROR(c.MeasureLaunchQueue());
  progress("host-device copies");
  ZR_RETURN_IF_ERROR(c.MeasureCopies());
  progress("collectives");
  ZR_RETURN_IF_ERROR(c.MeasureCollectives());
  progress("host AdamW by threads");
  ZR_RETURN_IF_ERROR(c.MeasureHostAdam());
  if (!o.nvme_path.empty()) {
    progress("the NVMe drive behind " + o.nvme_path);
    ZR_RETURN_IF_ERROR(c.MeasureDrive());
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
      "# optimizer. The GPU's name and memory are the device's; peaks and\n"
      "# API costs not listed below come from the base profile.\n#\n";
  if (!result.fit_notes.empty()) {
    absl::StrAppend(&header,
                    "# Fitted from training steps on the same machine (zero3 "
                    "calibrate's\n# in-step fit: op timing of each kind of "
                    "operation against the\n# isolated figures below):\n#\n");
    for (const std::string& note : result.fit_notes) {
      absl::StrAppend(&header, WrapComment(note));
    }
    absl::StrAppend(&header, "#\n");
  }
  absl::StrAppend(&header, "# The measurements:\n#\n");
  for (absl::string_view line : absl::StrSplit(result.report, '\n')) {
    if (!line.empty()) absl::StrAppend(&header, "#   ", line, "\n");
  }
  return absl::StrCat(header, "\n", text);
}

}  // namespace calibrate
}  // namespace zero3
