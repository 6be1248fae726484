// Copyright 2026 The zero3 Authors.

#include "backends/cuda/kernels/test_util.h"

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <type_traits>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "backends/cuda/kernels/cuda_status.h"
#include "core/kernels/reference.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace cuda {
namespace testing {
namespace {

namespace k = kernels;
namespace ops = runtime::ops;
using runtime::BufferSlice;
using runtime::KernelCall;
using runtime::TensorRef;

// A tensor seen as fp32: the buffer itself when it holds fp32, else a widened
// copy that Commit() narrows back (as the simulator's executor does).
class F32 {
 public:
  F32(const TensorRef& t, bool load) : t_(t) {
    if (t.dtype == k::DType::kF32) {
      ptr_ = t.slice.As<float>();
    } else {
      copy_.resize(t.elements());
      if (load) {
        for (int64_t i = 0; i < t.elements(); ++i) {
          copy_[i] = k::LoadAsFloat(t.dtype, t.slice.data(), i);
        }
      }
      ptr_ = copy_.data();
    }
  }
  float* get() { return ptr_; }
  void Commit() {
    if (t_.dtype == k::DType::kF32) return;
    for (int64_t i = 0; i < t_.elements(); ++i) {
      k::StoreFromFloat(t_.dtype, copy_[i], t_.slice.data(), i);
    }
  }

 private:
  TensorRef t_;
  float* ptr_ = nullptr;
  std::vector<float> copy_;
};

template <class>
inline constexpr bool kAlwaysFalse = false;

}  // namespace

bool HasGpu() {
  int devices = 0;
  return cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
}

std::vector<float> RandomValues(int64_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(n);
  for (float& v : values) v = dist(rng);
  return values;
}

std::vector<int32_t> RandomIds(int64_t n, int32_t limit, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> dist(0, limit - 1);
  std::vector<int32_t> ids(n);
  for (int32_t& id : ids) id = dist(rng);
  return ids;
}

std::vector<float> Rounded(k::DType dtype, const std::vector<float>& v) {
  std::vector<float> out(v.size());
  uint32_t bits = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    k::StoreFromFloat(dtype, v[i], &bits, 0);
    out[i] = k::LoadAsFloat(dtype, &bits, 0);
  }
  return out;
}

absl::Status RunReference(const KernelCall& call) {
  absl::Status result;
  std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        const auto& a = o.args;
        if constexpr (std::is_same_v<T, ops::EmbeddingForward>) {
          F32 table(o.table, true), out(o.out, false);
          k::EmbeddingForward(a, o.tokens.template As<int32_t>(), table.get(),
                              out.get());
          out.Commit();
        } else if constexpr (std::is_same_v<T, ops::EmbeddingBackward>) {
          F32 d_out(o.d_out, true), d_table(o.d_table, true);
          k::EmbeddingBackward(a, o.tokens.template As<int32_t>(), d_out.get(),
                               d_table.get());
          d_table.Commit();
        } else if constexpr (std::is_same_v<T, ops::Matmul>) {
          F32 A(o.a, true), B(o.b, true), C(o.c, a.beta != 0.0f);
          k::Matmul(a, A.get(), B.get(), C.get());
          C.Commit();
        } else if constexpr (std::is_same_v<T, ops::BiasAdd>) {
          F32 bias(o.bias, true), x(o.x, true);
          k::BiasAdd(a, bias.get(), x.get());
          x.Commit();
        } else if constexpr (std::is_same_v<T, ops::BiasBackward>) {
          F32 dy(o.dy, true), db(o.d_bias, true);
          k::BiasBackward(a, dy.get(), db.get());
          db.Commit();
        } else if constexpr (std::is_same_v<T, ops::RmsNormForward>) {
          F32 x(o.x, true), w(o.weight, true), y(o.y, false), r(o.rstd, false);
          k::RmsNormForward(a, x.get(), w.get(), y.get(), r.get());
          y.Commit();
          r.Commit();
        } else if constexpr (std::is_same_v<T, ops::RmsNormBackward>) {
          F32 x(o.x, true), w(o.weight, true), r(o.rstd, true), dy(o.dy, true),
              dx(o.dx, false), dw(o.d_weight, true);
          k::RmsNormBackward(a, x.get(), w.get(), r.get(), dy.get(), dx.get(),
                             dw.get());
          dx.Commit();
          dw.Commit();
        } else if constexpr (std::is_same_v<T, ops::RotaryForward>) {
          F32 x(o.x, true), y(o.y, false);
          k::RotaryForward(a, x.get(), y.get());
          y.Commit();
        } else if constexpr (std::is_same_v<T, ops::RotaryBackward>) {
          F32 x(o.dy, true), y(o.dx, false);
          k::RotaryBackward(a, x.get(), y.get());
          y.Commit();
        } else if constexpr (std::is_same_v<T, ops::AttentionForward>) {
          F32 q(o.q, true), kk(o.k, true), v(o.v, true), out(o.out, false),
              lse(o.lse, false);
          k::AttentionForward(a, q.get(), kk.get(), v.get(), out.get(),
                              lse.get());
          out.Commit();
          lse.Commit();
        } else if constexpr (std::is_same_v<T, ops::AttentionBackward>) {
          F32 q(o.q, true), kk(o.k, true), v(o.v, true), out(o.out, true),
              lse(o.lse, true), dout(o.d_out, true), dq(o.dq, false),
              dk(o.dk, false), dv(o.dv, false);
          k::AttentionBackward(a, q.get(), kk.get(), v.get(), out.get(),
                               lse.get(), dout.get(), dq.get(), dk.get(),
                               dv.get());
          dq.Commit();
          dk.Commit();
          dv.Commit();
        } else if constexpr (std::is_same_v<T, ops::SwigluForward>) {
          F32 g(o.gate, true), u(o.up, true), h(o.h, false);
          k::SwigluForward(a, g.get(), u.get(), h.get());
          h.Commit();
        } else if constexpr (std::is_same_v<T, ops::SwigluBackward>) {
          F32 g(o.gate, true), u(o.up, true), dh(o.dh, true),
              dg(o.d_gate, false), du(o.d_up, false);
          k::SwigluBackward(a, g.get(), u.get(), dh.get(), dg.get(), du.get());
          dg.Commit();
          du.Commit();
        } else if constexpr (std::is_same_v<T, ops::CrossEntropyForward>) {
          F32 logits(o.logits, true), lse(o.lse, false), loss(o.loss, false);
          loss.get()[0] = static_cast<float>(k::CrossEntropyForward(
              a, logits.get(), o.targets.template As<int32_t>(), lse.get()));
          lse.Commit();
          loss.Commit();
        } else if constexpr (std::is_same_v<T, ops::CrossEntropyBackward>) {
          F32 logits(o.logits, true), lse(o.lse, true), dl(o.d_logits, false);
          k::CrossEntropyBackward(a, logits.get(),
                                  o.targets.template As<int32_t>(), lse.get(),
                                  dl.get());
          dl.Commit();
        } else if constexpr (std::is_same_v<T, ops::Accumulate>) {
          k::Accumulate(a, o.x.dtype, o.x.slice.data(), o.y.dtype,
                        o.y.slice.data());
        } else if constexpr (std::is_same_v<T, ops::Scale>) {
          k::Scale(a, o.x.dtype, o.x.slice.data());
        } else if constexpr (std::is_same_v<T, ops::Fill>) {
          k::Fill(a, o.x.dtype, o.x.slice.data());
        } else if constexpr (std::is_same_v<T, ops::Add>) {
          k::Add(a, o.out.dtype, o.a.slice.data(), o.b.slice.data(),
                 o.out.slice.data());
        } else if constexpr (std::is_same_v<T, ops::Cast>) {
          k::Cast(a, o.src.slice.data(), o.dst.slice.data());
        } else if constexpr (std::is_same_v<T, ops::SumSquares>) {
          float* out = o.out.slice.template As<float>();
          const double base =
              o.accumulate ? static_cast<double>(out[0]) + out[1] : 0.0;
          const double total =
              base + k::SumSquares(a, o.x.dtype, o.x.slice.data());
          out[0] = static_cast<float>(total);
          out[1] = static_cast<float>(total - static_cast<double>(out[0]));
        } else if constexpr (std::is_same_v<T, ops::AdamW>) {
          k::AdamWStep(a, o.params.slice.template As<float>(),
                       o.grads.slice.template As<float>(),
                       o.exp_avg.slice.template As<float>(),
                       o.exp_avg_sq.slice.template As<float>());
        } else {
          static_assert(kAlwaysFalse<T>, "unhandled op");
        }
      },
      call.op);
  return result;
}

Tolerance Tolerance::For(k::DType dtype) {
  Tolerance t;
  if (dtype != k::DType::kF32) {
    t.norm = 1e-2;
    t.element = 5e-2;
  }
  return t;
}

Tolerance Tolerance::Exact() {
  Tolerance t;
  t.norm = 0;
  t.element = 0;
  t.exact = true;
  return t;
}

Tolerance Tolerance::Any() {
  Tolerance t;
  t.norm = INFINITY;
  t.element = INFINITY;
  return t;
}

Comparison Compare(k::DType dtype, const void* got, const void* ref,
                   int64_t elements) {
  Comparison c;
  c.elements = elements;
  const int64_t size = k::DTypeSize(dtype);
  double sum_sq_ref = 0, sum_sq_diff = 0;
  for (int64_t i = 0; i < elements; ++i) {
    const double r = k::LoadAsFloat(dtype, ref, i);
    if (std::isfinite(r)) sum_sq_ref += r * r;
  }
  const double rms =
      elements > 0 ? std::sqrt(sum_sq_ref / static_cast<double>(elements)) : 0;
  for (int64_t i = 0; i < elements; ++i) {
    if (std::memcmp(static_cast<const char*>(got) + i * size,
                    static_cast<const char*>(ref) + i * size, size) != 0) {
      ++c.mismatched_bits;
    }
    const double g = k::LoadAsFloat(dtype, got, i);
    const double r = k::LoadAsFloat(dtype, ref, i);
    if (!std::isfinite(g) || !std::isfinite(r)) {
      const bool same = (std::isnan(g) && std::isnan(r)) || g == r;
      if (!same) ++c.nonfinite_mismatch;
      continue;
    }
    const double d = std::fabs(g - r);
    sum_sq_diff += d * d;
    c.max_abs = std::max(c.max_abs, d);
    const double floor = std::fabs(r) + rms;
    const double rel = floor > 0 ? d / floor : (d > 0 ? INFINITY : 0.0);
    c.max_rel = std::max(c.max_rel, rel);
  }
  const double norm_ref = std::sqrt(sum_sq_ref);
  c.rel_l2 = norm_ref > 0 ? std::sqrt(sum_sq_diff) / norm_ref
                          : (sum_sq_diff > 0 ? INFINITY : 0.0);
  return c;
}

// ---------------------------------------------------------------------------
// OpHarness

runtime::TensorRef OpHarness::Binder::T(const std::string& name) const {
  auto it = harness_->entries_.find(name);
  if (it == harness_->entries_.end() || it->second.is_ids) {
    ADD_FAILURE() << "no tensor " << name;
    return TensorRef();
  }
  const Entry& e = it->second;
  const int64_t size = k::DTypeSize(e.dtype);
  const runtime::Buffer& buffer = device_ ? e.device : e.host;
  return TensorRef(buffer.Slice(e.offset * size, e.elements * size), e.dtype);
}

BufferSlice OpHarness::Binder::Ids(const std::string& name) const {
  auto it = harness_->entries_.find(name);
  if (it == harness_->entries_.end() || !it->second.is_ids) {
    ADD_FAILURE() << "no ids " << name;
    return BufferSlice();
  }
  const Entry& e = it->second;
  const runtime::Buffer& buffer = device_ ? e.device : e.host;
  return buffer.Slice(0, e.elements * 4);
}

OpHarness::OpHarness() = default;

OpHarness::~OpHarness() {
  for (auto& [name, e] : entries_) {
    if (e.device.data() != nullptr) cudaFree(e.device.data());
  }
}

int64_t OpHarness::ElementSize(const Entry& e) const {
  return e.is_ids ? 4 : k::DTypeSize(e.dtype);
}

void OpHarness::Add(const std::string& name, Entry entry) {
  const int64_t size = ElementSize(entry);
  const int64_t bytes = (entry.offset + entry.elements) * size;
  entry.host_memory.assign(static_cast<size_t>(bytes), 0);
  std::memcpy(entry.host_memory.data() + entry.offset * size,
              entry.initial.data(), entry.initial.size());
  entry.host =
      runtime::Buffer(next_id_++, bytes, runtime::MemorySpace::kPageableHost,
                      entry.host_memory.data());
  void* device = nullptr;
  if (bytes > 0) {
    EXPECT_EQ(cudaMalloc(&device, static_cast<size_t>(bytes)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(device, entry.host_memory.data(),
                         static_cast<size_t>(bytes), cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  entry.device =
      runtime::Buffer(next_id_++, bytes, runtime::MemorySpace::kDevice, device);
  entries_[name] = std::move(entry);
}

void OpHarness::Input(const std::string& name, k::DType dtype,
                      const std::vector<float>& values, int64_t offset) {
  Entry e;
  e.dtype = dtype;
  e.elements = static_cast<int64_t>(values.size());
  e.offset = offset;
  e.initial.resize(values.size() * k::DTypeSize(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    k::StoreFromFloat(dtype, values[i], e.initial.data(),
                      static_cast<int64_t>(i));
  }
  Add(name, std::move(e));
}

void OpHarness::InOut(const std::string& name, k::DType dtype,
                      const std::vector<float>& values, Tolerance tolerance,
                      int64_t offset) {
  Input(name, dtype, values, offset);
  entries_[name].compare = true;
  entries_[name].tolerance = tolerance;
}

void OpHarness::Output(const std::string& name, k::DType dtype,
                       int64_t elements, Tolerance tolerance, float fill,
                       int64_t offset) {
  InOut(name, dtype, std::vector<float>(static_cast<size_t>(elements), fill),
        tolerance, offset);
}

void OpHarness::Ids(const std::string& name, const std::vector<int32_t>& ids) {
  Entry e;
  e.is_ids = true;
  e.elements = static_cast<int64_t>(ids.size());
  e.initial.resize(ids.size() * 4);
  std::memcpy(e.initial.data(), ids.data(), e.initial.size());
  Add(name, std::move(e));
}

absl::Status OpHarness::Run(
    const KernelContext& ctx, const std::string& label,
    const std::function<runtime::Op(const Binder&)>& make_op) {
  const KernelCall host_call(make_op(Binder(this, false)), label);
  const absl::Status reference = RunReference(host_call);
  EXPECT_TRUE(reference.ok()) << reference;
  const KernelCall device_call(make_op(Binder(this, true)), label);
  absl::Status status = LaunchKernel(device_call, ctx.stream(), ctx);
  if (!status.ok()) return status;
  status = internal::CudaStatus(cudaStreamSynchronize(ctx.stream()), "sync");
  if (!status.ok()) return status;

  for (auto& [name, e] : entries_) {
    if (!e.compare) continue;
    const int64_t size = ElementSize(e);
    e.device_result.resize(static_cast<size_t>(e.elements * size));
    if (e.elements > 0) {
      status = internal::CudaStatus(
          cudaMemcpy(e.device_result.data(),
                     static_cast<char*>(e.device.data()) + e.offset * size,
                     e.device_result.size(), cudaMemcpyDeviceToHost),
          "cudaMemcpy");
      if (!status.ok()) return status;
    }
    const uint8_t* ref = e.host_memory.data() + e.offset * size;
    const Comparison c =
        Compare(e.dtype, e.device_result.data(), ref, e.elements);
    const Tolerance& t = e.tolerance;
    const bool pass = c.nonfinite_mismatch == 0 &&
                      (t.exact ? c.mismatched_bits == 0
                               : c.rel_l2 <= t.norm && c.max_rel <= t.element);
    std::printf(
        "%-44s %-10s %-4s n=%-9lld rel_l2=%.3e max_rel=%.3e max_abs=%.3e "
        "bits_differ=%lld%s\n",
        label.c_str(), name.c_str(), std::string(k::DTypeName(e.dtype)).c_str(),
        static_cast<long long>(c.elements), c.rel_l2, c.max_rel, c.max_abs,
        static_cast<long long>(c.mismatched_bits), pass ? "" : "  FAIL");
    std::fflush(stdout);
    EXPECT_TRUE(pass) << label << ": " << name << " (" << k::DTypeName(e.dtype)
                      << ") rel_l2=" << c.rel_l2 << " max_rel=" << c.max_rel
                      << " max_abs=" << c.max_abs
                      << " bits_differ=" << c.mismatched_bits
                      << " nonfinite_mismatch=" << c.nonfinite_mismatch
                      << " tolerance norm=" << t.norm
                      << " element=" << t.element << " exact=" << t.exact;
  }
  return absl::OkStatus();
}

std::vector<float> OpHarness::DeviceResult(const std::string& name) const {
  const Entry& e = entries_.at(name);
  std::vector<float> out(static_cast<size_t>(e.elements));
  for (int64_t i = 0; i < e.elements; ++i) {
    out[i] = k::LoadAsFloat(e.dtype, e.device_result.data(), i);
  }
  return out;
}

std::vector<float> OpHarness::HostResult(const std::string& name) const {
  const Entry& e = entries_.at(name);
  std::vector<float> out(static_cast<size_t>(e.elements));
  const uint8_t* ref = e.host_memory.data() + e.offset * ElementSize(e);
  for (int64_t i = 0; i < e.elements; ++i) {
    out[i] = k::LoadAsFloat(e.dtype, ref, i);
  }
  return out;
}

// ---------------------------------------------------------------------------
// KernelTest

void KernelTest::SetUp() {
  if (!HasGpu()) GTEST_SKIP() << "no GPU visible";
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
            cudaSuccess);
  absl::StatusOr<std::unique_ptr<KernelContext>> ctx =
      CreateKernelContext(stream_);
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  ctx_ = std::move(*ctx);
  KernelContextOptions options;
  options.attention = AttentionKernels::kSimple;
  ctx = CreateKernelContext(stream_, options);
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  simple_ctx_ = std::move(*ctx);
}

void KernelTest::TearDown() {
  if (stream_ == nullptr) return;
  EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  ctx_.reset();
  simple_ctx_.reset();
  EXPECT_EQ(cudaStreamDestroy(stream_), cudaSuccess);
  stream_ = nullptr;
}

}  // namespace testing
}  // namespace cuda
}  // namespace zero3
