// Copyright 2026 The zero3 Authors.
//
// The device launches launch.cc enqueues for each op, read from its
// Enqueue and the launchers of the .cu files, checked against
// runtime::LaunchesOf (which the simulator's launch queue charges). When a
// launcher gains or loses a kernel, change its row here and LaunchesOf.
// Needs no GPU.

#include "core/runtime/launch_count.h"

#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "core/runtime/kernel_call.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace cuda {
namespace {

using runtime::KernelCall;
namespace ops = runtime::ops;

struct Row {
  KernelCall call;
  int launches;  // what launch.cc enqueues for it
  const char* kernels;
};

// One non-empty call of every op (shapes of a small transformer layer).
std::vector<Row> Table() {
  constexpr int64_t kT = 4096, kDim = 1024, kVocab = 151936;
  std::vector<Row> rows;
  auto add = [&](auto op, int launches, const char* kernels) {
    rows.push_back({KernelCall(op, "row"), launches, kernels});
  };
  ops::EmbeddingForward ef;
  ef.args = {kT, kVocab, kDim};
  add(ef, 1, "EmbeddingForwardKernel");
  ops::EmbeddingBackward eb;
  eb.args = {kT, kVocab, kDim};
  // cub::DeviceRadixSort::SortPairs of 18-bit keys: onesweep histogram,
  // scan, three digit passes (CUB's own; the estimate of the table).
  add(eb, 1 + 5 + 1, "PrepareKeys, CUB radix sort, AccumulateRuns");
  ops::Matmul mm;
  mm.args.m = kT;
  mm.args.n = mm.args.k = kDim;
  add(mm, 1, "MatmulRunner::Run: one cublasLtMatmul");
  ops::BiasAdd ba;
  ba.args = {kT, kDim};
  add(ba, 1, "elementwise Run");
  ops::BiasBackward bb;
  bb.args = {kT, kDim};
  add(bb, 2, "ColumnPartialSums, FinalizeColumns");
  ops::RmsNormForward rf;
  rf.args.rows = kT;
  rf.args.dim = kDim;
  add(rf, 1, "RmsNormForwardKernel");
  ops::RmsNormBackward rb;
  rb.args.rows = kT;
  rb.args.dim = kDim;
  add(rb, 3, "RmsNormBackwardKernel, ColumnPartialSums, FinalizeColumns");
  ops::RotaryForward rof;
  rof.args = {2, 2048, 16, 64};
  add(rof, 1, "RotaryKernel");
  ops::RotaryBackward rob;
  rob.args = {2, 2048, 16, 64};
  add(rob, 1, "RotaryKernel (inverse)");
  ops::AttentionForward af;
  af.args.batch = 2;
  af.args.seq = 2048;
  add(af, 1, "FlashForwardKernel or the simple kernel");
  ops::AttentionBackward ab;
  ab.args = af.args;
  add(ab, 3, "AttentionDeltaKernel, dK/dV kernel, dQ kernel");
  ops::CrossEntropyForward cf;
  cf.args.num_tokens = kT;
  cf.args.vocab_size = kVocab;
  add(cf, 2, "CrossEntropyForwardKernel, CrossEntropyLossKernel");
  ops::CrossEntropyBackward cb;
  cb.args = cf.args;
  add(cb, 2, "CrossEntropyFactorKernel, CrossEntropyBackwardKernel");
  ops::CrossEntropyLoss cl;
  cl.args = cf.args;
  add(cl, 1, "CrossEntropyLossKernel");
  // Ops of n elements: one elementwise kernel each (elementwise.cu's Run).
  auto add_n = [&](auto op, int64_t n) {
    op.args.n = n;
    add(op, 1, "elementwise Run");
  };
  add_n(ops::SwigluForward(), kT * kDim);
  add_n(ops::SwigluBackward(), kT * kDim);
  add_n(ops::Accumulate(), kDim);
  add_n(ops::Scale(), kDim);
  add_n(ops::Add(), kDim);
  add_n(ops::AdamW(), kDim);
  ops::Fill fi;
  fi.args.n = kDim;
  add(fi, 1, "cudaMemsetAsync (zero) or elementwise Run");
  runtime::Buffer buf(1, 8 * kDim, runtime::MemorySpace::kDevice, nullptr);
  ops::Cast ca = ops::Cast::Of(
      runtime::TensorRef::Of(buf, kernels::DType::kF32, 0, kDim / 2),
      runtime::TensorRef::Of(buf, kernels::DType::kBF16, 2 * kDim, kDim / 2));
  add(ca, 1, "elementwise Run (same dtype: cudaMemcpyAsync)");
  ops::SumSquares ss;
  ss.args.n = kT * kDim;
  add(ss, 2, "SumSquaresPartial, SumSquaresFinal");
  return rows;
}

TEST(LaunchCountTest, EveryOpHasARow) {
  std::vector<std::string> seen;
  for (const Row& r : Table()) {
    for (const std::string& s : seen) EXPECT_NE(s, r.call.OpName());
    seen.emplace_back(r.call.OpName());
  }
  EXPECT_EQ(seen.size(), std::variant_size_v<runtime::Op>);
}

TEST(LaunchCountTest, LaunchesOfAgreesWithTheCudaLauncher) {
  for (const Row& r : Table()) {
    EXPECT_EQ(runtime::LaunchesOf(r.call), r.launches)
        << r.call.OpName() << ": " << r.kernels;
  }
}

}  // namespace
}  // namespace cuda
}  // namespace zero3
