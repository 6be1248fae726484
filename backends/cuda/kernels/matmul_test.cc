// Copyright 2026 The zero3 Authors.
//
// Matmul on cuBLAS against the CPU reference: every transpose combination,
// alpha and beta (beta = 0 must ignore NaN in C), the element types cuBLAS
// takes, unaligned operands, an empty k, and the three GEMMs of a linear
// layer.

#include <limits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "backends/cuda/kernels/test_util.h"
#include "core/kernels/dtype.h"
#include "core/kernels/op_args.h"
#include "core/runtime/kernel_call.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace cuda {
namespace testing {
namespace {

using kernels::DType;
using kernels::DTypeName;
namespace ops = runtime::ops;

class MatmulTest : public KernelTest {
 protected:
  void RunMatmul(const kernels::MatmulArgs& args, DType ab, DType c,
                 int64_t offset = 0) {
    OpHarness h;
    h.Input("a", ab, RandomValues(args.m * args.k, 40), offset);
    h.Input("b", ab, RandomValues(args.k * args.n, 41), offset);
    if (args.beta == 0.0f) {
      h.Output("c", c, args.m * args.n, Tolerance::For(c),
               std::numeric_limits<float>::quiet_NaN(), offset);
    } else {
      h.InOut("c", c, RandomValues(args.m * args.n, 42), Tolerance::For(c),
              offset);
    }
    const std::string label =
        absl::StrCat("matmul ", DTypeName(ab), "->", DTypeName(c),
                     args.trans_a ? " At" : "", args.trans_b ? " Bt" : "", " ",
                     args.m, "x", args.n, "x", args.k, " alpha=", args.alpha,
                     " beta=", args.beta, offset != 0 ? " unaligned" : "");
    const absl::Status status =
        h.Run(*ctx_, label, [&](const OpHarness::Binder& b) {
          ops::Matmul op;
          op.args = args;
          op.a = b.T("a");
          op.b = b.T("b");
          op.c = b.T("c");
          return runtime::Op(op);
        });
    EXPECT_TRUE(status.ok()) << label << ": " << status;
  }
};

TEST_F(MatmulTest, TransposesAlphaBetaDtypes) {
  struct Types {
    DType ab, c;
  };
  const Types types[] = {{DType::kF32, DType::kF32},
                         {DType::kBF16, DType::kBF16},
                         {DType::kBF16, DType::kF32},
                         {DType::kF16, DType::kF16},
                         {DType::kF16, DType::kF32}};
  for (const Types& t : types) {
    for (bool trans_a : {false, true}) {
      for (bool trans_b : {false, true}) {
        for (auto [alpha, beta] :
             {std::pair{1.0f, 0.0f}, {0.5f, 1.0f}, {-1.0f, 0.25f}}) {
          kernels::MatmulArgs args;
          args.trans_a = trans_a;
          args.trans_b = trans_b;
          args.m = 37;
          args.n = 29;
          args.k = 45;
          args.alpha = alpha;
          args.beta = beta;
          RunMatmul(args, t.ab, t.c);
        }
      }
    }
  }
}

TEST_F(MatmulTest, UnalignedOperands) {
  kernels::MatmulArgs args;
  args.m = 33;
  args.n = 17;
  args.k = 19;
  for (int64_t offset : {1, 3}) {
    RunMatmul(args, DType::kBF16, DType::kBF16, offset);
    RunMatmul(args, DType::kF32, DType::kF32, offset);
  }
}

TEST_F(MatmulTest, LinearLayerGemms) {
  const int64_t rows = 512, in = 384, out = 1536;
  RunMatmul(kernels::LinearForwardArgs(rows, in, out), DType::kBF16,
            DType::kBF16);
  RunMatmul(kernels::LinearBackwardInputArgs(rows, in, out), DType::kBF16,
            DType::kBF16);
  RunMatmul(kernels::LinearBackwardWeightArgs(rows, in, out), DType::kBF16,
            DType::kF32);
  RunMatmul(kernels::LinearForwardArgs(rows, in, out), DType::kF32,
            DType::kF32);
  RunMatmul(kernels::LinearBackwardWeightArgs(rows, in, out, 0.0f), DType::kF32,
            DType::kF32);
}

TEST_F(MatmulTest, EmptyInnerDimension) {
  kernels::MatmulArgs args;
  args.m = 5;
  args.n = 7;
  args.k = 0;
  RunMatmul(args, DType::kF32, DType::kF32);  // beta = 0: zeros
  args.beta = 0.5f;
  RunMatmul(args, DType::kBF16, DType::kBF16);  // C scaled by beta
}

TEST_F(MatmulTest, UnsupportedDtypesAreAClearError) {
  // Validation rejects the call before any device memory is touched, so the
  // buffers need no memory behind their (never dereferenced) addresses.
  static char fake[64];
  const runtime::Buffer a(1, 12, runtime::MemorySpace::kDevice, fake);
  const runtime::Buffer b(2, 24, runtime::MemorySpace::kDevice, fake);
  const runtime::Buffer c(3, 8, runtime::MemorySpace::kDevice, fake);
  ops::Matmul op;
  op.args.m = 2;
  op.args.n = 2;
  op.args.k = 3;
  op.a = runtime::TensorRef(a.All(), DType::kBF16);
  op.b = runtime::TensorRef(b.All(), DType::kF32);
  op.c = runtime::TensorRef(c.All(), DType::kBF16);
  const absl::Status status =
      LaunchKernel(runtime::KernelCall(op, "mixed"), stream_, *ctx_);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented) << status;
  EXPECT_NE(status.message().find("bf16"), std::string::npos) << status;
}

}  // namespace
}  // namespace testing
}  // namespace cuda
}  // namespace zero3
