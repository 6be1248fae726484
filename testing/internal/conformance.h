// Copyright 2026 The zero3 Authors.
//
// conformance.h: the pieces of the backend conformance suite
// (testing/backend_conformance.h): its cases, and the helpers the cases use
// to move data between the host and the device through the runtime
// interface only.
//
// A case is a rank function plus the number of ranks it needs. Cases report
// wrong values with gtest EXPECTs and return a non-OK status when a runtime
// call fails, which fails the test through the backend's `run`.
//
// Every host access to a host buffer goes through a HostTask that declares
// it, and follows a synchronize where it reads a copy's destination, so a
// backend that checks ordering (the simulator's race detector) checks the
// suite's own programs too.
//
// Value checks (ExpectClose): with tol = 1e-5 for fp32 and 1e-2 for bf16
// (the output's dtype), rms the root mean square of the expected values and
// floor = tol * rms + 1e-7, a result passes when
//   ||actual - expected||_2 <= tol * ||expected||_2 + 1e-7 * sqrt(n)
// and every element has |actual - expected| <= tol * |expected| + floor.
// The norm bounds the error overall; the per-element bound catches a few
// wrong elements a norm would hide, and its floor keeps elements that
// cancel to near zero (whose relative error is meaningless) from failing a
// correct kernel that sums in another order. NaN matches only NaN.
//
// Thread-compatible: each rank's function uses its own objects.

#ifndef ZERO3_TESTING_INTERNAL_CONFORMANCE_H_
#define ZERO3_TESTING_INTERNAL_CONFORMANCE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/kernels/dtype.h"
#include "core/runtime/runtime.h"

namespace zero3 {
namespace testing {
namespace conformance_internal {

using kernels::DType;

struct ConformanceCase {
  std::string group;  // "Runtime", "Kernels", "Collectives"
  std::string name;   // "CopyRoundTrip/pinned"
  int ranks = 1;
  runtime::RankFunction body;
  // Where the case is defined, for gtest's failure locations.
  const char* file = "";
  int line = 0;
};

std::vector<ConformanceCase> RuntimeCases();
std::vector<ConformanceCase> KernelCases();
// Cases on 1 rank, and on 2 and 3 ranks where max_ranks allows.
std::vector<ConformanceCase> CollectiveCases(int max_ranks);

// ---------------------------------------------------------------------------
// Data conversion and generation

// Each value rounded to nearest even in `dtype`, as bytes.
std::vector<uint8_t> Encode(absl::Span<const float> values, DType dtype);
// `bytes` as values of `dtype`, widened exactly to float.
std::vector<float> Decode(absl::Span<const uint8_t> bytes, DType dtype);
// Each value replaced by the nearest one `dtype` holds.
std::vector<float> RoundTo(std::vector<float> values, DType dtype);

// n values uniform in [lo, hi), rounded to `dtype`, from a seeded generator.
std::vector<float> RandomValues(int64_t n, uint32_t seed, DType dtype,
                                double lo = -1.0, double hi = 1.0);
// n bytes from a seeded generator.
std::vector<uint8_t> RandomBytes(int64_t n, uint32_t seed);

// ---------------------------------------------------------------------------
// Host memory, through host tasks

// Copies `bytes` into the host slice `dst` (same size) in a HostTask that
// declares the write.
absl::Status WriteHost(runtime::Runtime& rt, const runtime::BufferSlice& dst,
                       absl::Span<const uint8_t> bytes);
// Returns the bytes of the host slice `src`, read in a HostTask that
// declares the read.
absl::StatusOr<std::vector<uint8_t>> ReadHost(runtime::Runtime& rt,
                                              const runtime::BufferSlice& src);

// ---------------------------------------------------------------------------
// Device memory

// Device buffers for one case, freed on destruction after a device-wide
// synchronize. Uploads and reads go through pinned staging buffers on
// `stream` and synchronize it, so they are ordered after everything
// enqueued on `stream` before them. The stream and the runtime must outlive
// the arena.
class DeviceArena {
 public:
  DeviceArena(runtime::Runtime& rt, runtime::Stream& stream)
      : rt_(rt), stream_(stream) {}
  ~DeviceArena();
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;

  absl::StatusOr<runtime::Buffer> Allocate(int64_t bytes,
                                           absl::string_view label);
  // A tensor holding `values` (already representable in `dtype`).
  absl::StatusOr<runtime::TensorRef> Input(absl::Span<const float> values,
                                           DType dtype,
                                           absl::string_view label);
  // A tensor of `elements` whose every byte is 0xFF, NaN in fp32 and bf16,
  // so a kernel that reads an output it should only write yields NaN.
  absl::StatusOr<runtime::TensorRef> Output(int64_t elements, DType dtype,
                                            absl::string_view label);
  // An int32 buffer holding `ids` (token or target ids).
  absl::StatusOr<runtime::BufferSlice> Ids(absl::Span<const int32_t> ids,
                                           absl::string_view label);

  // Copies `bytes` into the device slice `dst`.
  absl::Status Upload(const runtime::BufferSlice& dst,
                      absl::Span<const uint8_t> bytes);
  // The bytes of the device slice `src`.
  absl::StatusOr<std::vector<uint8_t>> ReadBytes(
      const runtime::BufferSlice& src);
  // The values of `tensor`, widened to float.
  absl::StatusOr<std::vector<float>> Read(const runtime::TensorRef& tensor);

 private:
  runtime::Runtime& rt_;
  runtime::Stream& stream_;
  std::vector<runtime::Buffer> buffers_;
};

// ---------------------------------------------------------------------------
// Checks

// The relative tolerance for results stored as `dtype`.
double Tolerance(DType dtype);

// EXPECTs that `actual` matches `expected` within Tolerance(dtype), as the
// file comment defines; `what` names the result in failure messages.
void ExpectClose(absl::string_view what, absl::Span<const float> actual,
                 absl::Span<const float> expected, DType dtype);

// EXPECTs bit-for-bit equal values (integer-valued data, copies).
void ExpectEqualValues(absl::string_view what, absl::Span<const float> actual,
                       absl::Span<const float> expected);

}  // namespace conformance_internal
}  // namespace testing
}  // namespace zero3

#endif  // ZERO3_TESTING_INTERNAL_CONFORMANCE_H_
