// Copyright 2026 The zero3 Authors.
//
// Attention forward and backward against the CPU reference, on both the
// tensor-core kernels (bf16/fp16, head_dim 64 or 128) and the CUDA-core
// kernels (every dtype), causal and not, with grouped-query heads,
// sequences that end mid-tile, sliding windows and packed documents whose
// boundaries fall inside tiles, and scores with their own scale and
// soft-capped (Gemma 2), alone and under windows and packed documents.

#include <cstring>
#include <string>
#include <vector>

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

struct Case {
  DType dtype;
  int64_t batch, seq, heads, kv_heads, head_dim;
  bool causal;
  DType lse = DType::kF32;
  int64_t window = 0;  // AttentionArgs::window
  // > 0: packed documents, the first `doc` rows long and each next one 1.5
  // times the last (so boundaries fall anywhere in a tile); 0: none.
  int64_t doc = 0;
  float scale = 0.0f;    // AttentionArgs::scale
  float softcap = 0.0f;  // AttentionArgs::softcap
};

const Case kCases[] = {
    {DType::kF32, 2, 37, 4, 2, 16, true},
    {DType::kF32, 1, 20, 2, 2, 40, false},
    {DType::kF32, 1, 65, 3, 1, 200, true},
    {DType::kBF16, 2, 7, 2, 1, 64, true},
    {DType::kBF16, 2, 150, 4, 1, 64, true},
    {DType::kBF16, 1, 200, 6, 2, 128, true},
    {DType::kBF16, 1, 130, 2, 2, 128, false},
    {DType::kF16, 2, 64, 2, 1, 64, true},
    {DType::kBF16, 1, 100, 2, 1, 96, true, DType::kBF16},
    {DType::kBF16, 1, 1024, 4, 2, 128, true},
    // Sliding windows: shorter than a tile, across tiles, and two rows
    // (one row would make dq and dk exactly zero, nothing to compare).
    {DType::kF32, 2, 37, 4, 2, 16, true, DType::kF32, 5},
    {DType::kBF16, 2, 150, 4, 1, 64, true, DType::kF32, 48},
    {DType::kBF16, 1, 300, 2, 2, 128, true, DType::kF32, 100},
    {DType::kBF16, 1, 70, 2, 1, 128, true, DType::kF32, 2},
    // Packed documents, and packed documents under a window.
    {DType::kF32, 2, 37, 4, 2, 16, true, DType::kF32, 0, 5},
    {DType::kBF16, 2, 150, 4, 1, 64, true, DType::kF32, 0, 9},
    {DType::kBF16, 1, 300, 2, 2, 128, true, DType::kF32, 0, 21},
    {DType::kBF16, 1, 1024, 4, 2, 128, true, DType::kF32, 64, 100},
    // Their own scale, soft-capped scores (q spans [-3, 3], so the scores
    // reach well into the cap's curve), under windows and packed documents.
    {DType::kF32, 2, 37, 4, 2, 16, true, DType::kF32, 0, 0, 0.4f, 1.5f},
    {DType::kF32, 1, 20, 2, 2, 40, false, DType::kF32, 0, 0, 0.0f, 2.0f},
    {DType::kF32, 2, 37, 4, 2, 16, true, DType::kF32, 5, 0, 0.4f, 1.5f},
    {DType::kF16, 2, 64, 2, 1, 64, true, DType::kF32, 0, 0, 0.2f, 0.0f},
    {DType::kBF16, 2, 150, 4, 1, 64, true, DType::kF32, 0, 0, 0.2f, 2.0f},
    {DType::kBF16, 1, 130, 2, 2, 128, false, DType::kF32, 0, 0, 0.1f, 2.5f},
    {DType::kF16, 2, 150, 4, 1, 64, true, DType::kF32, 48, 0, 0.2f, 2.0f},
    {DType::kBF16, 1, 300, 2, 2, 128, true, DType::kF32, 100, 0, 0.1f, 2.5f},
    {DType::kBF16, 1, 300, 2, 2, 128, true, DType::kF32, 0, 21, 0.1f, 2.5f},
    {DType::kBF16, 1, 1024, 4, 2, 128, true, DType::kF32, 64, 100, 0.0f, 1.0f},
};

// Each row's place in its packed document (see Case::doc), batch by batch.
std::vector<int32_t> PositionsOf(const Case& c) {
  std::vector<int32_t> p(c.batch * c.seq);
  for (int64_t b = 0; b < c.batch; ++b) {
    int64_t length = c.doc, start = 0;
    for (int64_t s = 0; s < c.seq; ++s) {
      if (s - start == length) {
        start = s;
        length += length / 2;
      }
      p[b * c.seq + s] = static_cast<int32_t>(s - start);
    }
  }
  return p;
}

kernels::AttentionArgs ArgsOf(const Case& c) {
  kernels::AttentionArgs args;
  args.batch = c.batch;
  args.seq = c.seq;
  args.num_heads = c.heads;
  args.num_kv_heads = c.kv_heads;
  args.head_dim = c.head_dim;
  args.causal = c.causal;
  args.window = c.window;
  args.scale = c.scale;
  args.softcap = c.softcap;
  return args;
}

std::string Label(const char* what, const Case& c, bool simple) {
  const bool flash = !simple && c.dtype != DType::kF32 &&
                     (c.head_dim == 64 || c.head_dim == 128);
  return absl::StrCat(
      what, flash ? " [tensor cores] " : " [cuda cores] ", DTypeName(c.dtype),
      " b=", c.batch, " s=", c.seq, " h=", c.heads, "/", c.kv_heads,
      " d=", c.head_dim, c.causal ? " causal" : " full",
      c.window > 0 ? absl::StrCat(" window=", c.window) : "",
      c.doc > 0 ? absl::StrCat(" packed from ", c.doc) : "",
      c.scale > 0 ? absl::StrCat(" scale=", c.scale) : "",
      c.softcap > 0 ? absl::StrCat(" softcap=", c.softcap) : "");
}

struct Inputs {
  std::vector<float> q, k, v, out, lse, d_out;
};

// Random q, k, v (rounded to the case's dtype) and the reference forward's
// out and lse, rounded as the forward pass stores them.
Inputs MakeInputs(const Case& c) {
  const int64_t nq = c.batch * c.seq * c.heads * c.head_dim;
  const int64_t nk = c.batch * c.seq * c.kv_heads * c.head_dim;
  Inputs in;
  // q spans a wider range than k so that softmax rows are not flat.
  in.q = Rounded(c.dtype, RandomValues(nq, 50, -3.0f, 3.0f));
  in.k = Rounded(c.dtype, RandomValues(nk, 51));
  in.v = Rounded(c.dtype, RandomValues(nk, 52));
  in.d_out = Rounded(c.dtype, RandomValues(nq, 53));
  in.out.resize(nq);
  in.lse.resize(c.batch * c.heads * c.seq);
  const std::vector<int32_t> positions = PositionsOf(c);
  kernels::AttentionForward(ArgsOf(c), in.q.data(), in.k.data(), in.v.data(),
                            in.out.data(), in.lse.data(),
                            c.doc > 0 ? positions.data() : nullptr);
  in.out = Rounded(c.dtype, in.out);
  in.lse = Rounded(c.lse, in.lse);
  return in;
}

class AttentionTest : public KernelTest {
 protected:
  void Forward(const Case& c, const Inputs& in, bool simple) {
    OpHarness h;
    h.Input("q", c.dtype, in.q);
    h.Input("k", c.dtype, in.k);
    h.Input("v", c.dtype, in.v);
    h.Output("out", c.dtype, static_cast<int64_t>(in.q.size()),
             Tolerance::For(c.dtype));
    h.Output("lse", c.lse, static_cast<int64_t>(in.lse.size()),
             Tolerance::For(c.lse));
    if (c.doc > 0) h.Ids("positions", PositionsOf(c));
    const std::string label = Label("attention fwd", c, simple);
    const absl::Status status = h.Run(simple ? *simple_ctx_ : *ctx_, label,
                                      [&](const OpHarness::Binder& b) {
                                        ops::AttentionForward op;
                                        op.args = ArgsOf(c);
                                        op.q = b.T("q");
                                        op.k = b.T("k");
                                        op.v = b.T("v");
                                        op.out = b.T("out");
                                        op.lse = b.T("lse");
                                        if (c.doc > 0) {
                                          op.positions = b.Ids("positions");
                                        }
                                        return runtime::Op(op);
                                      });
    EXPECT_TRUE(status.ok()) << label << ": " << status;
  }

  // Returns dq, dk and dv as computed on the device.
  std::vector<float> Backward(const Case& c, const Inputs& in, bool simple) {
    OpHarness h;
    h.Input("q", c.dtype, in.q);
    h.Input("k", c.dtype, in.k);
    h.Input("v", c.dtype, in.v);
    h.Input("out", c.dtype, in.out);
    h.Input("lse", c.lse, in.lse);
    h.Input("d_out", c.dtype, in.d_out);
    h.Output("dq", c.dtype, static_cast<int64_t>(in.q.size()),
             Tolerance::For(c.dtype));
    h.Output("dk", c.dtype, static_cast<int64_t>(in.k.size()),
             Tolerance::For(c.dtype));
    h.Output("dv", c.dtype, static_cast<int64_t>(in.v.size()),
             Tolerance::For(c.dtype));
    if (c.doc > 0) h.Ids("positions", PositionsOf(c));
    const std::string label = Label("attention bwd", c, simple);
    const absl::Status status = h.Run(simple ? *simple_ctx_ : *ctx_, label,
                                      [&](const OpHarness::Binder& b) {
                                        ops::AttentionBackward op;
                                        op.args = ArgsOf(c);
                                        op.q = b.T("q");
                                        op.k = b.T("k");
                                        op.v = b.T("v");
                                        op.out = b.T("out");
                                        op.lse = b.T("lse");
                                        op.d_out = b.T("d_out");
                                        op.dq = b.T("dq");
                                        op.dk = b.T("dk");
                                        op.dv = b.T("dv");
                                        if (c.doc > 0) {
                                          op.positions = b.Ids("positions");
                                        }
                                        return runtime::Op(op);
                                      });
    EXPECT_TRUE(status.ok()) << label << ": " << status;
    std::vector<float> result = h.DeviceResult("dq");
    for (const char* name : {"dk", "dv"}) {
      const std::vector<float> more = h.DeviceResult(name);
      result.insert(result.end(), more.begin(), more.end());
    }
    return result;
  }
};

TEST_F(AttentionTest, ForwardMatchesReference) {
  for (const Case& c : kCases) {
    const Inputs in = MakeInputs(c);
    Forward(c, in, /*simple=*/false);
    if (c.dtype != DType::kF32) Forward(c, in, /*simple=*/true);
  }
}

TEST_F(AttentionTest, BackwardMatchesReferenceAndIsDeterministic) {
  for (const Case& c : kCases) {
    const Inputs in = MakeInputs(c);
    const std::vector<float> first = Backward(c, in, /*simple=*/false);
    const std::vector<float> second = Backward(c, in, /*simple=*/false);
    EXPECT_EQ(
        std::memcmp(first.data(), second.data(), first.size() * sizeof(float)),
        0)
        << Label("attention bwd", c, false) << ": two runs differ";
    if (c.dtype != DType::kF32) Backward(c, in, /*simple=*/true);
  }
}

}  // namespace
}  // namespace testing
}  // namespace cuda
}  // namespace zero3
