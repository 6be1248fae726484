// Copyright 2026 The zero3 Authors.
//
// host_optimizer_test.cc: the HostOptimizer on its own, on one simulated
// rank in data mode: its update at the step's end is the reference AdamW,
// element for element; the forward plan defers it and runs only the pieces
// a gather's range overlaps; Import replaces the state and stages the
// working copy on the device.

#include "core/zero/host_optimizer.h"

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/kernels/reference.h"
#include "core/util/status_macros.h"
#include "gtest/gtest.h"
#include "sim/simulator.h"
#include "sim/testing/test_profile.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace zero {
namespace {

using ::zero3::testing::IsOk;

const std::vector<int64_t> kNumels = {300, 41, 700, 9};
const std::vector<model::ModuleInfo> kModules = {{"a", {0, 1}}, {"b", {2, 3}}};

float Start(int64_t i) { return 0.01f * static_cast<float>(i % 97) - 0.4f; }
float Grad(int64_t i) { return 0.003f * static_cast<float>(i % 31) - 0.05f; }

// Runs `body` with a HostOptimizer over all of kNumels' optimizer (fp32
// model, one rank, pieces of 256 elements) whose master starts at Start and
// whose host gradients are Grad.
absl::Status WithHostOptimizer(
    bool in_forward,
    const std::function<absl::Status(runtime::Runtime&, HostOptimizer&,
                                     const runtime::Buffer& shard)>& body,
    const std::function<void(ZeroOptions&)>& configure = {}) {
  sim::SimOptions so;
  so.profile = sim::TestProfile();
  ZR_ASSIGN_OR_RETURN(auto world, sim::SimWorld::Create(so));
  return world->Run([&](runtime::Runtime& rt) -> absl::Status {
    ZeroOptions o;
    o.offload_optimizer = true;
    o.host_step_piece = 256;
    o.host_step_in_forward = in_forward;
    if (configure) configure(o);
    const ShardLayout layout(kNumels, 1, 0);
    runtime::Device& dev = rt.device();
    ZR_ASSIGN_OR_RETURN(auto stream, dev.CreateStream("compute"));
    ZeroContext ctx;
    ctx.rt = &rt;
    ctx.dp = &rt.world();
    ctx.compute = ctx.gather = ctx.reduce = stream.get();
    ctx.layout = &layout;
    ctx.options = &o;
    ctx.host_begin = 0;
    ZR_ASSIGN_OR_RETURN(auto reducer, GradReducer::Create(ctx, kModules));
    ZR_ASSIGN_OR_RETURN(
        runtime::OwnedBuffer shard,
        runtime::AllocateDevice(dev, layout.total() * 4, "shard"));
    const std::vector<ParamRange> groups = {layout.Range(0, 3)};
    const std::vector<std::vector<DecayRun>> runs = {
        {{0, layout.total(), 0.01f}}};
    ZR_ASSIGN_OR_RETURN(
        auto host, HostOptimizer::Create(ctx, *reducer, shard, groups, runs));
    const int64_t n = layout.total();
    std::vector<float> start(n), zeros(n, 0.0f);
    for (int64_t i = 0; i < n; ++i) start[i] = Start(i);
    ZR_RETURN_IF_ERROR(host->Import(start.data(), zeros.data(), zeros.data()));
    float* g = reducer->host_partition().slice.As<float>();
    for (int64_t i = 0; i < n; ++i) g[i] = Grad(i);
    ZR_RETURN_IF_ERROR(body(rt, *host, shard));
    return dev.Synchronize();
  });
}

std::vector<float> Master(const HostOptimizer& h) {
  std::vector<float> out(h.elements());
  std::memcpy(out.data(), h.state().master().data(), out.size() * 4);
  return out;
}

kernels::AdamWArgs Args() {
  kernels::AdamWArgs a;
  a.lr = 0.01f;
  a.weight_decay = 0.01f;
  return a;
}

// The reference AdamW's first step from Start with Grad, element `i`.
float Expected(int64_t i) {
  kernels::AdamWArgs a = Args();
  a.n = 1;
  float p = Start(i), g = Grad(i), m = 0, v = 0;
  kernels::AdamWStep(a, &p, &g, &m, &v);
  return p;
}

TEST(HostOptimizerTest, UpdateAtTheStepsEndIsTheReferenceAdamW) {
  ASSERT_THAT(WithHostOptimizer(false,
                                [](runtime::Runtime&, HostOptimizer& h,
                                   const runtime::Buffer&) -> absl::Status {
                                  EXPECT_GT(h.pieces().size(), 3u);
                                  h.BeginStep();
                                  ZR_RETURN_IF_ERROR(h.Update(Args(), true));
                                  EXPECT_EQ(h.outcome().speculation,
                                            Speculation::kNone);
                                  // Written back at once, on the compute
                                  // stream.
                                  EXPECT_TRUE(h.PendingWrites().empty());
                                  const std::vector<float> m = Master(h);
                                  for (int64_t i = 0; i < h.elements(); ++i) {
                                    EXPECT_EQ(m[i], Expected(i)) << i;
                                  }
                                  return absl::OkStatus();
                                }),
              IsOk());
}

std::string TestDir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return tmp != nullptr ? tmp : "/tmp";
}

void OnNvme(ZeroOptions& o) {
  o.nvme_path = TestDir();
  o.nvme_buffers = 3;
}

// With the state on NVMe the update is the same, read back from the drive;
// the swap file lives under nvme_path while the optimizer does.
TEST(HostOptimizerTest, OnNvmeTheUpdateIsTheReferenceAdamW) {
  std::string path;
  ASSERT_THAT(
      WithHostOptimizer(
          false,
          [&](runtime::Runtime&, HostOptimizer& h,
              const runtime::Buffer&) -> absl::Status {
            EXPECT_NE(h.nvme(), nullptr);
            path = h.nvme()->path();
            EXPECT_EQ(path.rfind(TestDir(), 0), 0u) << path;
            EXPECT_EQ(access(path.c_str(), F_OK), 0) << path;
            EXPECT_GT(h.pieces().size(), 3u);
            h.BeginStep();
            ZR_RETURN_IF_ERROR(h.Prefetch());
            ZR_RETURN_IF_ERROR(h.Update(Args(), true));
            std::vector<float> m(h.elements());
            ZR_RETURN_IF_ERROR(h.ReadState(0, 0, h.elements(), m.data()));
            for (int64_t i = 0; i < h.elements(); ++i) {
              EXPECT_EQ(m[i], Expected(i)) << i;
            }
            // A part of one tensor, across pieces.
            std::vector<float> v(300);
            ZR_RETURN_IF_ERROR(h.ReadState(2, 200, 300, v.data()));
            for (float x : v) EXPECT_GT(x, 0.0f);
            return absl::OkStatus();
          },
          OnNvme),
      IsOk());
  EXPECT_NE(access(path.c_str(), F_OK), 0) << "left behind: " << path;
}

// A failed write-back is an error naming the swap file and the operation,
// when the state is next read; a failed read, when the step needs it.
TEST(HostOptimizerTest, OnNvmeAFailedTransferIsAnError) {
  for (const bool write : {true, false}) {
    const absl::Status s = WithHostOptimizer(
        false,
        [&](runtime::Runtime&, HostOptimizer& h,
            const runtime::Buffer&) -> absl::Status {
          h.BeginStep();
          ZR_RETURN_IF_ERROR(h.Update(Args(), true));
          std::vector<float> m(h.elements());
          return h.ReadState(0, 0, h.elements(), m.data());
        },
        [&](ZeroOptions& o) {
          OnNvme(o);
          // Past the writes and reads of start-up (the initial state).
          o.nvme_fault = {write, write ? 6 : 2, EIO};
        });
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << write << ": " << s;
    EXPECT_NE(s.message().find(write ? "writing the swap file"
                                     : "reading the swap file"),
              std::string::npos)
        << s;
    EXPECT_NE(s.message().find("zero3_optimizer_rank0.swap"), std::string::npos)
        << s;
  }
}

TEST(HostOptimizerTest, ForwardPlanRunsOnlyThePiecesAGatherOverlaps) {
  ASSERT_THAT(WithHostOptimizer(
                  true,
                  [](runtime::Runtime&, HostOptimizer& h,
                     const runtime::Buffer&) -> absl::Status {
                    h.BeginStep();
                    ZR_RETURN_IF_ERROR(h.Update(Args(), true));
                    // Deferred: nothing updated yet; each piece's H2D is a
                    // write the next gathers wait for.
                    EXPECT_EQ(h.PendingWrites().size(), h.pieces().size());
                    std::vector<float> m = Master(h);
                    for (int64_t i = 0; i < h.elements(); ++i) {
                      EXPECT_EQ(m[i], Start(i)) << i;
                    }
                    // A gather of [300, 301) overlaps the second piece only.
                    const HostPiece& second = h.pieces()[1];
                    EXPECT_LE(second.offset, 300);
                    EXPECT_GT(second.offset + second.elements, 300);
                    ZR_RETURN_IF_ERROR(h.RunDeferredPieces(300, 1));
                    m = Master(h);
                    for (int64_t i = 0; i < h.elements(); ++i) {
                      const bool in = i >= second.offset &&
                                      i < second.offset + second.elements;
                      EXPECT_EQ(m[i], in ? Expected(i) : Start(i)) << i;
                    }
                    // The rest before the state is read: every element updated
                    // once.
                    ZR_RETURN_IF_ERROR(h.FinishHostStep());
                    m = Master(h);
                    for (int64_t i = 0; i < h.elements(); ++i) {
                      EXPECT_EQ(m[i], Expected(i)) << i;
                    }
                    return absl::OkStatus();
                  }),
              IsOk());
}

TEST(HostOptimizerTest, ImportStagesTheWorkingCopyOnTheDevice) {
  ASSERT_THAT(
      WithHostOptimizer(
          false,
          [](runtime::Runtime& rt, HostOptimizer& h,
             const runtime::Buffer& shard) -> absl::Status {
            const int64_t n = h.elements();
            ZR_ASSIGN_OR_RETURN(
                runtime::OwnedBuffer back,
                runtime::AllocateHost(
                    rt, n * 4, runtime::HostMemoryKind::kPinned, "read back"));
            ZR_ASSIGN_OR_RETURN(auto s, rt.device().CreateStream("read"));
            ZR_RETURN_IF_ERROR(s->Copy(back.All(), shard.All(), "D2H"));
            ZR_RETURN_IF_ERROR(s->Synchronize());
            const float* w = static_cast<const float*>(back.data());
            for (int64_t i = 0; i < n; ++i) EXPECT_EQ(w[i], Start(i)) << i;
            return absl::OkStatus();
          }),
      IsOk());
}

}  // namespace
}  // namespace zero
}  // namespace zero3
