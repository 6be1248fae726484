// Copyright 2026 The zero3 Authors.
//
// Embedding and cross-entropy (plain and with soft-capped logits, whole
// batches and chunks of rows) against the CPU reference, and the handling of
// ids outside the vocabulary.

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "backends/cuda/kernels/test_util.h"
#include "core/kernels/dtype.h"
#include "core/kernels/reference.h"
#include "core/runtime/kernel_call.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace cuda {
namespace testing {
namespace {

using kernels::DType;
using kernels::DTypeName;
namespace ops = runtime::ops;

class EmbeddingTest : public KernelTest {};

struct EmbeddingCase {
  DType table, out;
  int64_t tokens, vocab, dim;
};

constexpr EmbeddingCase kEmbeddingCases[] = {
    {DType::kF32, DType::kF32, 77, 50, 24},
    {DType::kBF16, DType::kBF16, 77, 50, 13},
    {DType::kF32, DType::kBF16, 300, 10, 40},  // many repeats per id
    {DType::kBF16, DType::kF32, 5, 3, 8},
    {DType::kBF16, DType::kBF16, 8192, 151936, 64},
};

TEST_F(EmbeddingTest, Forward) {
  for (const EmbeddingCase& c : kEmbeddingCases) {
    OpHarness h;
    h.Ids("tokens", RandomIds(c.tokens, static_cast<int32_t>(c.vocab), 31));
    h.Input("table", c.table, RandomValues(c.vocab * c.dim, 32));
    h.Output("out", c.out, c.tokens * c.dim, Tolerance::Exact());
    ASSERT_TRUE(h.Run(*ctx_,
                      absl::StrCat("embedding fwd ", DTypeName(c.table), "->",
                                   DTypeName(c.out), " T=", c.tokens,
                                   " V=", c.vocab, " D=", c.dim),
                      [&](const OpHarness::Binder& b) {
                        ops::EmbeddingForward op;
                        op.args.num_tokens = c.tokens;
                        op.args.vocab_size = c.vocab;
                        op.args.dim = c.dim;
                        op.tokens = b.Ids("tokens");
                        op.table = b.T("table");
                        op.out = b.T("out");
                        return runtime::Op(op);
                      })
                    .ok());
  }
}

// The backward pass sums each id's rows in position order, as the
// reference does, so even fp32 matches bit for bit.
TEST_F(EmbeddingTest, BackwardIsExactAndDeterministic) {
  for (const EmbeddingCase& c : kEmbeddingCases) {
    // d_out has the activation's type (c.out), d_table the table's.
    std::vector<int32_t> tokens =
        RandomIds(c.tokens, static_cast<int32_t>(c.vocab), 33);
    if (c.tokens > 100) {
      // A long run of one id, like padding.
      for (int64_t t = 0; t < c.tokens / 3; ++t) tokens[t * 2] = 1;
    }
    std::vector<float> first;
    for (int run = 0; run < 2; ++run) {
      OpHarness h;
      h.Ids("tokens", tokens);
      h.Input("d_out", c.out, RandomValues(c.tokens * c.dim, 34));
      h.InOut("d_table", c.table, RandomValues(c.vocab * c.dim, 35),
              Tolerance::Exact());
      ASSERT_TRUE(h.Run(*ctx_,
                        absl::StrCat("embedding bwd ", DTypeName(c.out), "->",
                                     DTypeName(c.table), " T=", c.tokens,
                                     " V=", c.vocab, " D=", c.dim),
                        [&](const OpHarness::Binder& b) {
                          ops::EmbeddingBackward op;
                          op.args.num_tokens = c.tokens;
                          op.args.vocab_size = c.vocab;
                          op.args.dim = c.dim;
                          op.tokens = b.Ids("tokens");
                          op.d_out = b.T("d_out");
                          op.d_table = b.T("d_table");
                          return runtime::Op(op);
                        })
                      .ok());
      const std::vector<float> result = h.DeviceResult("d_table");
      if (run == 0) {
        first = result;
      } else {
        EXPECT_EQ(std::memcmp(first.data(), result.data(),
                              first.size() * sizeof(float)),
                  0)
            << "two runs differ";
      }
    }
  }
}

TEST_F(EmbeddingTest, InvalidIdsAreCountedAndSkipped) {
  const int64_t tokens = 6, vocab = 4, dim = 8;
  const std::vector<int32_t> ids = {0, -1, 3, 4, 2, 100};
  int32_t* d_ids = nullptr;
  float* d_table = nullptr;
  float* d_out = nullptr;
  ASSERT_EQ(cudaMalloc(&d_ids, tokens * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_table, vocab * dim * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_out, tokens * dim * 4), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_ids, ids.data(), tokens * 4, cudaMemcpyHostToDevice),
            cudaSuccess);
  const std::vector<float> table = RandomValues(vocab * dim, 36);
  ASSERT_EQ(cudaMemcpy(d_table, table.data(), table.size() * 4,
                       cudaMemcpyHostToDevice),
            cudaSuccess);
  const runtime::Buffer ids_buffer(1, tokens * 4, runtime::MemorySpace::kDevice,
                                   d_ids);
  const runtime::Buffer table_buffer(2, vocab * dim * 4,
                                     runtime::MemorySpace::kDevice, d_table);
  const runtime::Buffer out_buffer(3, tokens * dim * 4,
                                   runtime::MemorySpace::kDevice, d_out);
  ops::EmbeddingForward op;
  op.args.num_tokens = tokens;
  op.args.vocab_size = vocab;
  op.args.dim = dim;
  op.tokens = ids_buffer.All();
  op.table = runtime::TensorRef(table_buffer.All(), DType::kF32);
  op.out = runtime::TensorRef(out_buffer.All(), DType::kF32);
  ASSERT_TRUE(
      LaunchKernel(runtime::KernelCall(op, "bad ids"), stream_, *ctx_).ok());
  const absl::Status errors = ctx_->ConsumeDeviceErrors();
  EXPECT_EQ(errors.code(), absl::StatusCode::kInvalidArgument) << errors;
  EXPECT_NE(errors.message().find("3 token or target ids"), std::string::npos)
      << errors;
  EXPECT_TRUE(ctx_->ConsumeDeviceErrors().ok()) << "the count resets";
  std::vector<float> out(tokens * dim);
  ASSERT_EQ(
      cudaMemcpy(out.data(), d_out, out.size() * 4, cudaMemcpyDeviceToHost),
      cudaSuccess);
  for (int64_t t = 0; t < tokens; ++t) {
    const bool valid = ids[t] >= 0 && ids[t] < vocab;
    for (int64_t d = 0; d < dim; ++d) {
      EXPECT_EQ(out[t * dim + d], valid ? table[ids[t] * dim + d] : 0.0f)
          << t << "," << d;
    }
  }
  cudaFree(d_ids);
  cudaFree(d_table);
  cudaFree(d_out);
}

// ---------------------------------------------------------------------------
// Cross-entropy

struct CrossEntropyCase {
  DType logits;
  int64_t tokens, vocab;
  int32_t ignore_index;
  int ignored_every;     // every n-th target is ignore_index; 0: none; 1: all
  float softcap = 0.0f;  // CrossEntropyArgs::logit_softcap
};

// The logits span [-8, 8]; caps of 3 to 6 bend them well into tanh.
constexpr CrossEntropyCase kCrossEntropyCases[] = {
    {DType::kF32, 37, 1000, -1, 5},
    {DType::kF32, 3, 1001, -100, 0},
    {DType::kBF16, 37, 1000, -100, 3},
    {DType::kBF16, 9, 77, -1, 1},
    {DType::kF16, 16, 512, -1, 4},
    {DType::kBF16, 64, 151936, -100, 7},
    {DType::kF32, 37, 1000, -1, 5, 3.0f},
    {DType::kF32, 3, 1001, -100, 0, 5.0f},
    {DType::kBF16, 37, 1000, -100, 3, 4.0f},
    {DType::kF16, 16, 512, -1, 4, 3.0f},
    {DType::kBF16, 64, 151936, -100, 7, 6.0f},
};

std::vector<int32_t> Targets(const CrossEntropyCase& c) {
  std::vector<int32_t> targets =
      RandomIds(c.tokens, static_cast<int32_t>(c.vocab), 37);
  if (c.ignored_every > 0) {
    for (int64_t t = 0; t < c.tokens; t += c.ignored_every) {
      targets[t] = c.ignore_index;
    }
  }
  return targets;
}

std::string CrossEntropyLabel(const char* what, const CrossEntropyCase& c) {
  return absl::StrCat(
      what, " ", DTypeName(c.logits), " T=", c.tokens, " V=", c.vocab,
      " ignore every ", c.ignored_every,
      c.softcap > 0 ? absl::StrCat(" softcap=", c.softcap) : "");
}

TEST_F(EmbeddingTest, CrossEntropyForward) {
  for (const CrossEntropyCase& c : kCrossEntropyCases) {
    OpHarness h;
    h.Input("logits", c.logits, RandomValues(c.tokens * c.vocab, 38, -8, 8));
    h.Ids("targets", Targets(c));
    // lse and the loss are fp32 statistics even for bf16 logits.
    h.Output("lse", DType::kF32, c.tokens, Tolerance::For(DType::kF32));
    h.Output("loss", DType::kF32, 1, Tolerance::For(DType::kF32));
    ASSERT_TRUE(h.Run(*ctx_, CrossEntropyLabel("cross_entropy fwd", c),
                      [&](const OpHarness::Binder& b) {
                        ops::CrossEntropyForward op;
                        op.args.num_tokens = c.tokens;
                        op.args.vocab_size = c.vocab;
                        op.args.ignore_index = c.ignore_index;
                        op.args.logit_softcap = c.softcap;
                        op.logits = b.T("logits");
                        op.targets = b.Ids("targets");
                        op.lse = b.T("lse");
                        op.loss = b.T("loss");
                        return runtime::Op(op);
                      })
                    .ok());
  }
}

TEST_F(EmbeddingTest, CrossEntropyBackward) {
  for (const CrossEntropyCase& c : kCrossEntropyCases) {
    for (bool in_place : {false, true}) {
      const std::vector<float> logits =
          Rounded(c.logits, RandomValues(c.tokens * c.vocab, 39, -8.0f, 8.0f));
      const std::vector<int32_t> targets = Targets(c);
      // lse as the forward pass computes it.
      kernels::CrossEntropyArgs args;
      args.num_tokens = c.tokens;
      args.vocab_size = c.vocab;
      args.ignore_index = c.ignore_index;
      args.grad_scale = 0.5f;
      args.logit_softcap = c.softcap;
      std::vector<float> lse(c.tokens);
      kernels::CrossEntropyForward(args, logits.data(), targets.data(),
                                   lse.data());
      OpHarness h;
      if (in_place) {
        h.InOut("logits", c.logits, logits, Tolerance::For(c.logits));
      } else {
        h.Input("logits", c.logits, logits);
        h.Output("d_logits", c.logits, c.tokens * c.vocab,
                 Tolerance::For(c.logits));
      }
      h.Ids("targets", targets);
      h.Input("lse", DType::kF32, lse);
      ASSERT_TRUE(
          h.Run(*ctx_,
                CrossEntropyLabel(in_place ? "cross_entropy bwd in place"
                                           : "cross_entropy bwd",
                                  c),
                [&](const OpHarness::Binder& b) {
                  ops::CrossEntropyBackward op;
                  op.args = args;
                  op.logits = b.T("logits");
                  op.targets = b.Ids("targets");
                  op.lse = b.T("lse");
                  op.d_logits = b.T(in_place ? "logits" : "d_logits");
                  return runtime::Op(op);
                })
              .ok());
    }
  }
}

// A chunk of a batch's rows (row_offset > 0, batch_tokens the batch): the
// forward pass writes each row's loss term (in double) instead of the mean,
// the backward pass divides by the whole batch's count.
TEST_F(EmbeddingTest, CrossEntropyChunkOfRows) {
  for (const CrossEntropyCase& c : kCrossEntropyCases) {
    if (c.tokens < 3) continue;
    const int64_t first = c.tokens / 3;
    const int64_t rows = c.tokens - first - 1;
    kernels::CrossEntropyArgs args;
    args.num_tokens = rows;
    args.vocab_size = c.vocab;
    args.ignore_index = c.ignore_index;
    args.grad_scale = 0.5f;
    args.loss_divisor = 7.5;
    args.batch_tokens = c.tokens;
    args.row_offset = first;
    args.logit_softcap = c.softcap;
    const std::vector<float> logits =
        Rounded(c.logits, RandomValues(rows * c.vocab, 40, -8.0f, 8.0f));
    const std::vector<int32_t> targets = Targets(c);
    {
      OpHarness h;
      h.Input("logits", c.logits, logits);
      h.Ids("targets", targets);
      h.Output("lse", DType::kF32, rows, Tolerance::For(DType::kF32));
      // Doubles, compared below.
      h.Output("row_loss", DType::kF32, 2 * rows, Tolerance::Any());
      const std::string label = CrossEntropyLabel("cross_entropy fwd chunk", c);
      ASSERT_TRUE(h.Run(*ctx_, label, [&](const OpHarness::Binder& b) {
                     ops::CrossEntropyForward op;
                     op.args = args;
                     op.logits = b.T("logits");
                     op.targets = b.Ids("targets");
                     op.lse = b.T("lse");
                     op.row_loss = b.T("row_loss").slice;
                     return runtime::Op(op);
                   }).ok());
      const std::vector<float> got_words = h.DeviceResult("row_loss");
      const std::vector<float> ref_words = h.HostResult("row_loss");
      std::vector<double> got(rows), ref(rows);
      std::memcpy(got.data(), got_words.data(), rows * sizeof(double));
      std::memcpy(ref.data(), ref_words.data(), rows * sizeof(double));
      for (int64_t r = 0; r < rows; ++r) {
        EXPECT_NEAR(got[r], ref[r], 1e-5 * (1.0 + std::fabs(ref[r])))
            << label << ": row " << r;
      }
    }
    {
      std::vector<float> lse(rows);
      std::vector<double> row_loss(rows);
      kernels::CrossEntropyRowLosses(args, logits.data(), targets.data(),
                                     lse.data(), row_loss.data());
      OpHarness h;
      h.InOut("logits", c.logits, logits, Tolerance::For(c.logits));
      h.Ids("targets", targets);
      h.Input("lse", DType::kF32, lse);
      ASSERT_TRUE(
          h.Run(*ctx_, CrossEntropyLabel("cross_entropy bwd chunk in place", c),
                [&](const OpHarness::Binder& b) {
                  ops::CrossEntropyBackward op;
                  op.args = args;
                  op.logits = b.T("logits");
                  op.targets = b.Ids("targets");
                  op.lse = b.T("lse");
                  op.d_logits = b.T("logits");
                  return runtime::Op(op);
                })
              .ok());
    }
  }
}

}  // namespace
}  // namespace testing
}  // namespace cuda
}  // namespace zero3
