// Copyright 2026 The zero3 Authors.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "core/kernels/kernel_test_util.h"
#include "core/util/status_macros.h"
#include "gtest/gtest.h"
#include "testing/internal/conformance.h"

namespace zero3 {
namespace testing {
namespace conformance_internal {

using runtime::Buffer;
using runtime::BufferSlice;
using runtime::HostMemoryKind;
using runtime::TensorRef;

// ---------------------------------------------------------------------------
// Data conversion and generation

std::vector<uint8_t> Encode(absl::Span<const float> values, DType dtype) {
  std::vector<uint8_t> bytes(values.size() * kernels::DTypeSize(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    kernels::StoreFromFloat(dtype, values[i], bytes.data(), i);
  }
  return bytes;
}

std::vector<float> Decode(absl::Span<const uint8_t> bytes, DType dtype) {
  std::vector<float> values(bytes.size() / kernels::DTypeSize(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = kernels::LoadAsFloat(dtype, bytes.data(), i);
  }
  return values;
}

std::vector<float> RoundTo(std::vector<float> values, DType dtype) {
  if (dtype == DType::kF32) return values;
  return Decode(Encode(values, dtype), dtype);
}

std::vector<float> RandomValues(int64_t n, uint32_t seed, DType dtype,
                                double lo, double hi) {
  const std::vector<double> values =
      kernels::testing::RandomVector(n, seed, lo, hi);
  return RoundTo(std::vector<float>(values.begin(), values.end()), dtype);
}

std::vector<uint8_t> RandomBytes(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> bytes(n);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(byte(rng));
  return bytes;
}

// ---------------------------------------------------------------------------
// Host memory

absl::Status WriteHost(runtime::Runtime& rt, const BufferSlice& dst,
                       absl::Span<const uint8_t> bytes) {
  if (dst.bytes() != static_cast<int64_t>(bytes.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "WriteHost: slice of ", dst.bytes(), " bytes, data of ", bytes.size()));
  }
  runtime::HostTask task;
  task.label = "conformance: write host buffer";
  task.writes = {dst};
  task.memory_bytes = dst.bytes();
  task.run = [&]() -> absl::Status {
    if (dst.data() == nullptr) {
      return absl::FailedPreconditionError("host buffer without data");
    }
    std::memcpy(dst.data(), bytes.data(), bytes.size());
    return absl::OkStatus();
  };
  return rt.RunHostTask(task);
}

absl::StatusOr<std::vector<uint8_t>> ReadHost(runtime::Runtime& rt,
                                              const BufferSlice& src) {
  std::vector<uint8_t> bytes(src.bytes());
  runtime::HostTask task;
  task.label = "conformance: read host buffer";
  task.reads = {src};
  task.memory_bytes = src.bytes();
  task.run = [&]() -> absl::Status {
    if (src.data() == nullptr) {
      return absl::FailedPreconditionError("host buffer without data");
    }
    std::memcpy(bytes.data(), src.data(), bytes.size());
    return absl::OkStatus();
  };
  ZR_RETURN_IF_ERROR(rt.RunHostTask(task));
  return bytes;
}

// ---------------------------------------------------------------------------
// DeviceArena

DeviceArena::~DeviceArena() {
  // Work on any stream may still use the buffers; the device-wide
  // synchronize orders every use before the frees.
  rt_.device().Synchronize().IgnoreError();
  for (const Buffer& buffer : buffers_) {
    rt_.device().Free(buffer).IgnoreError();
  }
}

absl::StatusOr<Buffer> DeviceArena::Allocate(int64_t bytes,
                                             absl::string_view label) {
  ZR_ASSIGN_OR_RETURN(Buffer buffer, rt_.device().Allocate(bytes, label));
  buffers_.push_back(buffer);
  return buffer;
}

absl::StatusOr<TensorRef> DeviceArena::Input(absl::Span<const float> values,
                                             DType dtype,
                                             absl::string_view label) {
  const int64_t n = static_cast<int64_t>(values.size());
  ZR_ASSIGN_OR_RETURN(Buffer buffer,
                      Allocate(n * kernels::DTypeSize(dtype), label));
  ZR_RETURN_IF_ERROR(Upload(buffer.All(), Encode(values, dtype)));
  return TensorRef::Of(buffer, dtype, 0, n);
}

absl::StatusOr<TensorRef> DeviceArena::Output(int64_t elements, DType dtype,
                                              absl::string_view label) {
  ZR_ASSIGN_OR_RETURN(Buffer buffer,
                      Allocate(elements * kernels::DTypeSize(dtype), label));
  ZR_RETURN_IF_ERROR(stream_.Memset(buffer.All(), 0xFF, label));
  return TensorRef::Of(buffer, dtype, 0, elements);
}

absl::StatusOr<BufferSlice> DeviceArena::Ids(absl::Span<const int32_t> ids,
                                             absl::string_view label) {
  const int64_t bytes = static_cast<int64_t>(ids.size() * sizeof(int32_t));
  ZR_ASSIGN_OR_RETURN(Buffer buffer, Allocate(bytes, label));
  std::vector<uint8_t> raw(bytes);
  std::memcpy(raw.data(), ids.data(), bytes);
  ZR_RETURN_IF_ERROR(Upload(buffer.All(), raw));
  return buffer.All();
}

absl::Status DeviceArena::Upload(const BufferSlice& dst,
                                 absl::Span<const uint8_t> bytes) {
  ZR_ASSIGN_OR_RETURN(Buffer staging,
                      rt_.AllocateHost(dst.bytes(), HostMemoryKind::kPinned,
                                       "conformance: upload staging"));
  absl::Status status = WriteHost(rt_, staging.All(), bytes);
  if (status.ok()) status = stream_.Copy(dst, staging.All(), "upload");
  // The copy reads the staging buffer until the stream passes it.
  if (status.ok()) status = stream_.Synchronize();
  const absl::Status freed = rt_.FreeHost(staging);
  return status.ok() ? freed : status;
}

absl::StatusOr<std::vector<uint8_t>> DeviceArena::ReadBytes(
    const BufferSlice& src) {
  ZR_ASSIGN_OR_RETURN(Buffer staging,
                      rt_.AllocateHost(src.bytes(), HostMemoryKind::kPinned,
                                       "conformance: download staging"));
  absl::StatusOr<std::vector<uint8_t>> bytes;
  absl::Status status = stream_.Copy(staging.All(), src, "download");
  if (status.ok()) status = stream_.Synchronize();
  if (status.ok()) bytes = ReadHost(rt_, staging.All());
  const absl::Status freed = rt_.FreeHost(staging);
  if (!status.ok()) return status;
  if (!bytes.ok()) return bytes.status();
  if (!freed.ok()) return freed;
  return bytes;
}

absl::StatusOr<std::vector<float>> DeviceArena::Read(const TensorRef& tensor) {
  ZR_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadBytes(tensor.slice));
  return Decode(bytes, tensor.dtype);
}

// ---------------------------------------------------------------------------
// Checks

double Tolerance(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return 1e-5;
    case DType::kBF16:
    case DType::kF16:
      return 1e-2;
  }
  return 0;
}

void ExpectClose(absl::string_view what, absl::Span<const float> actual,
                 absl::Span<const float> expected, DType dtype) {
  if (actual.size() != expected.size()) {
    ADD_FAILURE() << what << ": " << actual.size() << " values, expected "
                  << expected.size();
    return;
  }
  constexpr double kAbsoluteFloor = 1e-7;
  const double tol = Tolerance(dtype);
  const size_t n = expected.size();
  double error2 = 0;
  double expected2 = 0;
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(actual[i]) || std::isnan(expected[i])) continue;
    const double d = static_cast<double>(actual[i]) - expected[i];
    error2 += d * d;
    expected2 += static_cast<double>(expected[i]) * expected[i];
  }
  const double rms = n == 0 ? 0 : std::sqrt(expected2 / n);
  const double floor = tol * rms + kAbsoluteFloor;

  // The element furthest outside its bound, as a multiple of the bound.
  size_t worst = 0;
  double worst_ratio = 0;
  for (size_t i = 0; i < n; ++i) {
    const double a = actual[i];
    const double e = expected[i];
    double ratio;
    if (std::isnan(a) || std::isnan(e)) {
      ratio = std::isnan(a) == std::isnan(e) ? 0 : HUGE_VAL;
    } else {
      ratio = std::fabs(a - e) / (tol * std::fabs(e) + floor);
    }
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      worst = i;
    }
  }
  const double norm_error = std::sqrt(error2);
  const double norm_bound =
      tol * std::sqrt(expected2) + kAbsoluteFloor * std::sqrt(double(n));
  EXPECT_LE(norm_error, norm_bound)
      << what << " (" << kernels::DTypeName(dtype) << ", " << n
      << " values): norm-wise error " << norm_error << " against |expected| "
      << std::sqrt(expected2) << ", tolerance " << tol;
  EXPECT_LE(worst_ratio, 1.0)
      << what << " (" << kernels::DTypeName(dtype) << "): element " << worst
      << " is " << actual[worst] << ", expected " << expected[worst]
      << " (bound " << tol << " x |expected| + " << floor << ")";
}

void ExpectEqualValues(absl::string_view what, absl::Span<const float> actual,
                       absl::Span<const float> expected) {
  if (actual.size() != expected.size()) {
    ADD_FAILURE() << what << ": " << actual.size() << " values, expected "
                  << expected.size();
    return;
  }
  int64_t mismatches = 0;
  size_t first = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const bool equal = actual[i] == expected[i] ||
                       (std::isnan(actual[i]) && std::isnan(expected[i]));
    if (!equal && mismatches++ == 0) first = i;
  }
  EXPECT_EQ(mismatches, 0) << what << ": first mismatch at element " << first
                           << ": " << actual[first] << ", expected "
                           << expected[first];
}

}  // namespace conformance_internal
}  // namespace testing
}  // namespace zero3
