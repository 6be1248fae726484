// Copyright 2026 The zero3 Authors.
//
// test_util.h: runs one op on the GPU (LaunchKernel) and on the host (the CPU
// reference kernels) from the same inputs, and compares every output.
//
//   OpHarness h;
//   h.Input("x", DType::kBF16, RandomValues(n, seed));
//   h.Output("y", DType::kBF16, n, Tolerance::For(DType::kBF16));
//   h.Run(*ctx, "rmsnorm", [&](const OpHarness::Binder& b) {
//     runtime::ops::RmsNormForward op;
//     ...
//     op.x = b.T("x");
//     return runtime::Op(op);
//   });
//
// The op is built twice, once over host buffers and once over device
// buffers holding the same bytes; the host call runs through
// runtime::ExecuteReference (core/runtime/reference_executor.h, the
// simulator's data mode: each tensor widened to fp32, computed by
// core/kernels/reference.h, stored back rounded). Each output is compared as
// floats: the norm-wise relative error ||got - ref|| / ||ref|| and the
// largest elementwise error relative to |ref| + rms(ref) (the floor keeps
// near-zero references from dominating). Both are printed, one line per
// output, so a run on a GPU node shows where each kernel stands.
//
// Not thread-safe; test code only.

#ifndef ZERO3_BACKENDS_CUDA_KERNELS_TEST_UTIL_H_
#define ZERO3_BACKENDS_CUDA_KERNELS_TEST_UTIL_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "backends/cuda/kernels/launch.h"
#include "core/kernels/dtype.h"
#include "core/runtime/buffer.h"
#include "core/runtime/kernel_call.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace cuda {
namespace testing {

// True when at least one CUDA device is visible.
bool HasGpu();

// n values uniform in [lo, hi), deterministic for a seed.
std::vector<float> RandomValues(int64_t n, uint32_t seed, float lo = -1.0f,
                                float hi = 1.0f);
// n ids uniform in [0, limit), deterministic for a seed.
std::vector<int32_t> RandomIds(int64_t n, int32_t limit, uint32_t seed);

// The values as `dtype` would store them (rounded to nearest even), as float.
std::vector<float> Rounded(kernels::DType dtype, const std::vector<float>& v);

struct Tolerance {
  double norm = 1e-5;     // on ||got - ref|| / ||ref||
  double element = 1e-4;  // on max |got - ref| / (|ref| + rms(ref))
  bool exact = false;     // bit-identical expected as well

  // fp32: 1e-5 norm-wise; bf16 and fp16: 1e-2.
  static Tolerance For(kernels::DType dtype);
  static Tolerance Exact();
  // Printed, never failed (for outputs the test checks another way).
  static Tolerance Any();
};

struct Comparison {
  double rel_l2 = 0;
  double max_abs = 0;
  double max_rel = 0;  // relative to |ref| + rms(ref)
  int64_t mismatched_bits = 0;
  int64_t elements = 0;
  int64_t nonfinite_mismatch = 0;  // NaN/inf in one and not the other
};

// Compares two arrays of `dtype` elements.
Comparison Compare(kernels::DType dtype, const void* got, const void* ref,
                   int64_t elements);

class OpHarness {
 public:
  // Hands out the tensors of the call being built (host or device).
  class Binder {
   public:
    runtime::TensorRef T(const std::string& name) const;
    runtime::BufferSlice Ids(const std::string& name) const;

   private:
    friend class OpHarness;
    Binder(const OpHarness* harness, bool device)
        : harness_(harness), device_(device) {}
    const OpHarness* harness_;
    bool device_;
  };

  OpHarness();
  ~OpHarness();
  OpHarness(const OpHarness&) = delete;
  OpHarness& operator=(const OpHarness&) = delete;

  // A tensor the op reads (values rounded to dtype). `offset` places the
  // tensor that many elements into its buffer, to exercise unaligned
  // addresses.
  void Input(const std::string& name, kernels::DType dtype,
             const std::vector<float>& values, int64_t offset = 0);
  // A tensor the op reads and writes (accumulates), compared afterwards.
  void InOut(const std::string& name, kernels::DType dtype,
             const std::vector<float>& values, Tolerance tolerance,
             int64_t offset = 0);
  // A tensor the op writes, compared afterwards. Its initial content is
  // `fill` (NaN by default: an op that reads what it should only write
  // shows it).
  void Output(const std::string& name, kernels::DType dtype, int64_t elements,
              Tolerance tolerance, float fill = __builtin_nanf(""),
              int64_t offset = 0);
  // int32 ids (tokens, targets).
  void Ids(const std::string& name, const std::vector<int32_t>& ids);

  // Builds the op over host and device buffers, runs both, compares the
  // outputs (gtest failures name `label` and the tensor), prints one line
  // per output. Returns the status of LaunchKernel.
  absl::Status Run(const KernelContext& ctx, const std::string& label,
                   const std::function<runtime::Op(const Binder&)>& make_op);

  // After Run: the device result of an output as floats.
  std::vector<float> DeviceResult(const std::string& name) const;
  // After Run: the reference result of an output as floats.
  std::vector<float> HostResult(const std::string& name) const;

 private:
  struct Entry {
    kernels::DType dtype = kernels::DType::kF32;
    int64_t elements = 0;
    int64_t offset = 0;  // in elements
    bool is_ids = false;
    bool compare = false;
    Tolerance tolerance;
    std::vector<uint8_t> initial;  // bytes of the tensor
    runtime::Buffer host, device;
    std::vector<uint8_t> host_memory;
    std::vector<uint8_t> device_result;
  };
  void Add(const std::string& name, Entry entry);
  int64_t ElementSize(const Entry& e) const;

  std::map<std::string, Entry> entries_;
  uint64_t next_id_ = 1;
};

// A fixture that skips without a GPU and otherwise provides a non-blocking
// stream with two kernel contexts on it: ctx_ (default options) and
// simple_ctx_ (attention on the CUDA-core kernels).
class KernelTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  cudaStream_t stream_ = nullptr;
  std::unique_ptr<KernelContext> ctx_;
  std::unique_ptr<KernelContext> simple_ctx_;
};

}  // namespace testing
}  // namespace cuda
}  // namespace zero3

#endif  // ZERO3_BACKENDS_CUDA_KERNELS_TEST_UTIL_H_
