// Copyright 2026 The zero3 Authors.

#include "backends/cuda/kernels/test_util.h"

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_status.h"
#include "core/runtime/reference_executor.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace cuda {
namespace testing {
namespace {

namespace k = kernels;
using runtime::BufferSlice;
using runtime::KernelCall;
using runtime::TensorRef;

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
  const absl::Status reference = runtime::ExecuteReference(host_call);
  EXPECT_TRUE(reference.ok()) << reference;
  const KernelCall device_call(make_op(Binder(this, true)), label);
  absl::Status status = LaunchKernel(device_call, ctx.stream(), ctx);
  if (!status.ok()) return status;
  status = CudaStatus(cudaStreamSynchronize(ctx.stream()), "sync");
  if (!status.ok()) return status;

  for (auto& [name, e] : entries_) {
    if (!e.compare) continue;
    const int64_t size = ElementSize(e);
    e.device_result.resize(static_cast<size_t>(e.elements * size));
    if (e.elements > 0) {
      status = CudaStatus(
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
