// Copyright 2026 The zero3 Authors.
//
// The chunked LM head (Checkpointing::lm_head_chunk_tokens) against the
// whole one, on the simulator's CPU reference kernels: the loss is the same
// bits, every gradient but the LM head's (and, tied, the embedding's) is the
// same bits, and the LM head's differs only by the order of its fp32 sums.

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/kernels/reference.h"
#include "core/model/presets.h"
#include "core/model/transformer.h"
#include "core/util/check.h"
#include "core/util/status_macros.h"
#include "gtest/gtest.h"
#include "sim/simulator.h"
#include "sim/testing/test_profile.h"

namespace zero3 {
namespace model {
namespace {

using runtime::BufferSlice;
using runtime::OwnedBuffer;

constexpr int64_t kBatch = 2, kSeq = 8, kTokens = kBatch * kSeq;
constexpr uint64_t kSeed = 5;

// Every parameter and gradient resident, in the model's dtype.
class Resident : public ParamProvider {
 public:
  absl::Status BeginModule(int, Pass) override { return absl::OkStatus(); }
  TensorRef Param(int p) override { return params[p]; }
  absl::Status EndModule(int, Pass) override { return absl::OkStatus(); }
  absl::StatusOr<TensorRef> Grad(int p) override { return grads[p]; }
  absl::Status GradsReady(absl::Span<const int>) override {
    return absl::OkStatus();
  }

  std::vector<OwnedBuffer> buffers;
  std::vector<TensorRef> params, grads;
};

// Copies `bytes` from host memory into a new device buffer.
absl::StatusOr<OwnedBuffer> Upload(runtime::Runtime& rt,
                                   runtime::Stream& stream, const void* bytes,
                                   int64_t size) {
  ZR_ASSIGN_OR_RETURN(OwnedBuffer dev,
                      runtime::AllocateDevice(rt.device(), size, "upload"));
  ZR_ASSIGN_OR_RETURN(OwnedBuffer host,
                      runtime::AllocateHost(
                          rt, size, runtime::HostMemoryKind::kPinned, "host"));
  runtime::HostTask fill;
  fill.label = "fill";
  fill.writes = {host.All()};
  fill.run = [&]() -> absl::Status {
    std::memcpy(host.data(), bytes, size);
    return absl::OkStatus();
  };
  ZR_RETURN_IF_ERROR(rt.RunHostTask(fill));
  ZR_RETURN_IF_ERROR(stream.Copy(dev.All(), host.All(), "H2D"));
  ZR_RETURN_IF_ERROR(stream.Synchronize());
  ZR_RETURN_IF_ERROR(host.Free());
  return dev;
}

// A device tensor's values as floats.
absl::StatusOr<std::vector<float>> Download(runtime::Runtime& rt,
                                            runtime::Stream& stream,
                                            const TensorRef& t) {
  ZR_ASSIGN_OR_RETURN(
      OwnedBuffer host,
      runtime::AllocateHost(rt, t.slice.bytes(),
                            runtime::HostMemoryKind::kPinned, "read"));
  ZR_RETURN_IF_ERROR(stream.Copy(host.All(), t.slice, "D2H"));
  ZR_RETURN_IF_ERROR(stream.Synchronize());
  std::vector<float> values(t.elements());
  runtime::HostTask read;
  read.label = "read";
  read.reads = {host.All()};
  read.run = [&]() -> absl::Status {
    kernels::CastArgs cast;
    cast.n = t.elements();
    cast.src = t.dtype;
    kernels::Cast(cast, host.data(), values.data());
    return absl::OkStatus();
  };
  ZR_RETURN_IF_ERROR(rt.RunHostTask(read));
  ZR_RETURN_IF_ERROR(host.Free());
  return values;
}

struct Result {
  float loss = 0;
  std::vector<std::string> names;
  std::vector<std::vector<float>> grads;
  int64_t activation_bytes = 0;
};

// One forward and backward of `preset` on fixed tokens; targets -1 every
// fifth row.
Result RunHead(const std::string& preset, DType dtype, int64_t chunk,
               float grad_scale) {
  const ModelSpec spec = LoadModelSpec(preset).value();
  std::vector<int32_t> tokens(kTokens), targets(kTokens);
  for (int64_t i = 0; i < kTokens; ++i) {
    tokens[i] = static_cast<int32_t>((i * 37 + 11) % spec.vocab_size());
    targets[i] = i % 5 == 3
                     ? -1
                     : static_cast<int32_t>((i * 53 + 7) % spec.vocab_size());
  }
  sim::SimOptions so;
  so.profile = sim::TestProfile();
  so.mode = sim::SimMode::kData;
  auto world = sim::SimWorld::Create(so);
  ZR_CHECK_OK(world.status());
  Result r;
  ZR_CHECK_OK((*world)->Run([&](runtime::Runtime& rt) -> absl::Status {
    ZR_ASSIGN_OR_RETURN(auto stream, rt.device().CreateStream("s"));
    Checkpointing ckpt;
    ckpt.lm_head_chunk_tokens = chunk;
    ZR_ASSIGN_OR_RETURN(auto model, Transformer::Create(spec, dtype, kBatch,
                                                        kSeq, rt, {}, ckpt));
    r.activation_bytes = model->activation_bytes();
    // The layout alone says the same.
    EXPECT_EQ(Transformer::ActivationBytes(spec, dtype, kBatch, kSeq, 1, ckpt)
                  .value(),
              r.activation_bytes);
    Resident res;
    for (const ParamInfo& p : model->params()) {
      std::vector<float> values(p.numel());
      for (int64_t i = 0; i < p.numel(); ++i) {
        values[i] = InitialValue(spec, p, kSeed, i);
      }
      std::vector<uint8_t> encoded(p.numel() * kernels::DTypeSize(dtype));
      kernels::CastArgs cast;
      cast.n = p.numel();
      cast.dst = dtype;
      kernels::Cast(cast, values.data(), encoded.data());
      ZR_ASSIGN_OR_RETURN(OwnedBuffer param,
                          Upload(rt, *stream, encoded.data(), encoded.size()));
      ZR_ASSIGN_OR_RETURN(
          OwnedBuffer grad,
          runtime::AllocateDevice(rt.device(), encoded.size(), "grad"));
      res.params.push_back(TensorRef::Of(param, dtype, 0, p.numel()));
      res.grads.push_back(TensorRef::Of(grad, dtype, 0, p.numel()));
      res.buffers.push_back(std::move(param));
      res.buffers.push_back(std::move(grad));
      r.names.push_back(p.name);
    }
    ZR_ASSIGN_OR_RETURN(OwnedBuffer tok,
                        Upload(rt, *stream, tokens.data(), kTokens * 4));
    ZR_ASSIGN_OR_RETURN(OwnedBuffer tgt,
                        Upload(rt, *stream, targets.data(), kTokens * 4));
    ZR_ASSIGN_OR_RETURN(OwnedBuffer loss,
                        runtime::AllocateDevice(rt.device(), 4, "loss"));
    const TensorRef loss_ref = TensorRef::Of(loss, DType::kF32, 0, 1);
    ZR_RETURN_IF_ERROR(model->Forward(*stream, res, tok.All(), tgt.All(),
                                      loss_ref, grad_scale));
    ZR_RETURN_IF_ERROR(model->Backward(*stream, res));
    ZR_ASSIGN_OR_RETURN(std::vector<float> l, Download(rt, *stream, loss_ref));
    r.loss = l[0];
    for (const TensorRef& g : res.grads) {
      ZR_ASSIGN_OR_RETURN(std::vector<float> v, Download(rt, *stream, g));
      r.grads.push_back(std::move(v));
    }
    return stream->Synchronize();
  }));
  EXPECT_TRUE((*world)->races().empty());
  return r;
}

// ||a - b|| / ||b||.
double RelativeDifference(const std::vector<float>& a,
                          const std::vector<float>& b) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    diff += d * d;
    norm += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(diff / norm);
}

struct Case {
  std::string preset;
  DType dtype;
  float grad_scale;
  // Norm-wise relative tolerance of the gradients the chunks sum.
  double tolerance;
};

void Compare(const Case& c) {
  const Result whole = RunHead(c.preset, c.dtype, 0, c.grad_scale);
  // 1, 5 (not dividing the 16 tokens) and 15 rows.
  for (int64_t chunk : {int64_t{1}, int64_t{5}, kTokens - 1}) {
    SCOPED_TRACE(::testing::Message()
                 << c.preset << " " << kernels::DTypeName(c.dtype) << " chunk "
                 << chunk);
    const Result chunked = RunHead(c.preset, c.dtype, chunk, c.grad_scale);
    EXPECT_EQ(std::memcmp(&chunked.loss, &whole.loss, 4), 0)
        << chunked.loss << " vs " << whole.loss;
    if (c.dtype == DType::kF32 && chunk <= 5) {
      // The chunk fits in the backward scratch it overlays.
      EXPECT_LT(chunked.activation_bytes, whole.activation_bytes);
    }
    ASSERT_EQ(chunked.grads.size(), whole.grads.size());
    for (size_t p = 0; p < whole.grads.size(); ++p) {
      const std::string& name = whole.names[p];
      const bool summed = name == "lm_head" || name == "embed_tokens";
      if (summed) {
        const double d = RelativeDifference(chunked.grads[p], whole.grads[p]);
        EXPECT_LE(d, c.tolerance) << name;
        std::printf("%-9s %-4s chunk %2d %-12s relative difference %.3g\n",
                    c.preset.c_str(),
                    std::string(kernels::DTypeName(c.dtype)).c_str(),
                    static_cast<int>(chunk), name.c_str(), d);
      } else {
        EXPECT_EQ(chunked.grads[p], whole.grads[p]) << name;
      }
    }
  }
}

TEST(HeadChunkTest, Fp32) { Compare({"tiny", DType::kF32, 1.0f, 1e-6}); }

TEST(HeadChunkTest, Fp32TiedAccumulationScale) {
  Compare({"tiny-tied", DType::kF32, 0.25f, 1e-6});
}

// bf16 gradients: both sum in fp32 and round once; a sum whose order moves
// it across a rounding boundary differs by one bf16 ulp (2^-8 relative).
TEST(HeadChunkTest, Bf16) { Compare({"tiny", DType::kBF16, 1.0f, 4e-3}); }

TEST(HeadChunkTest, Bf16Tied) {
  Compare({"tiny-tied", DType::kBF16, 0.5f, 4e-3});
}

// fp16 with a loss scale of 1024 and 1 / accumulation 2.
TEST(HeadChunkTest, Fp16LossScale) {
  Compare({"tiny", DType::kF16, 512.0f, 2e-3});
}

// A chunk of every token is the whole head: the same bits, the same arena.
TEST(HeadChunkTest, ChunkOfAllTokensIsTheWholeHead) {
  const Result whole = RunHead("tiny", DType::kBF16, 0, 1.0f);
  for (int64_t chunk : {kTokens, 3 * kTokens}) {
    const Result same = RunHead("tiny", DType::kBF16, chunk, 1.0f);
    EXPECT_EQ(same.loss, whole.loss);
    EXPECT_EQ(same.grads, whole.grads);
    EXPECT_EQ(same.activation_bytes, whole.activation_bytes);
  }
}

TEST(HeadChunkTest, NegativeChunkIsRefused) {
  sim::SimOptions so;
  so.profile = sim::TestProfile();
  auto world = sim::SimWorld::Create(so);
  ZR_CHECK_OK(world.status());
  ZR_CHECK_OK((*world)->Run([&](runtime::Runtime& rt) -> absl::Status {
    Checkpointing ckpt;
    ckpt.lm_head_chunk_tokens = -1;
    auto model = Transformer::Create(LoadModelSpec("tiny").value(), DType::kF32,
                                     kBatch, kSeq, rt, {}, ckpt);
    EXPECT_FALSE(model.ok());
    return absl::OkStatus();
  }));
}

}  // namespace
}  // namespace model
}  // namespace zero3
