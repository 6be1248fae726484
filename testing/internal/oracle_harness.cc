// Copyright 2026 The zero3 Authors.

#include "testing/internal/oracle_harness.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/model/inputs.h"
#include "core/model/transformer.h"
#include "core/runtime/owned_buffer.h"
#include "core/util/check.h"
#include "core/util/status_macros.h"
#include "sim/simulator.h"
#include "sim/testing/test_profile.h"

namespace zero3 {
namespace testing {
namespace {

using runtime::DType;
using runtime::HostMemoryKind;
using runtime::TensorRef;

// Every parameter and gradient resident on the device.
class Resident : public model::ParamProvider {
 public:
  absl::Status BeginModule(int, model::Pass) override {
    return absl::OkStatus();
  }
  TensorRef Param(int p) override {
    return TensorRef::Of(params[p], DType::kF32, 0, numel[p]);
  }
  absl::Status EndModule(int, model::Pass) override { return absl::OkStatus(); }
  absl::StatusOr<TensorRef> Grad(int p) override {
    return TensorRef::Of(grads[p], DType::kF32, 0, numel[p]);
  }
  absl::Status GradsReady(absl::Span<const int>) override {
    return absl::OkStatus();
  }

  std::vector<int64_t> numel;
  std::vector<runtime::OwnedBuffer> params, grads;
};

// Copies `src` (device) to a pinned buffer and hands its floats to `read`.
absl::Status ReadBack(runtime::Runtime& rt, runtime::Stream& stream,
                      const runtime::BufferSlice& src,
                      const std::function<void(const float*, int64_t)>& read) {
  ZR_ASSIGN_OR_RETURN(
      runtime::OwnedBuffer host,
      runtime::AllocateHost(rt, src.bytes(), HostMemoryKind::kPinned, "read"));
  ZR_RETURN_IF_ERROR(stream.Copy(host.All(), src, "D2H"));
  ZR_RETURN_IF_ERROR(stream.Synchronize());
  runtime::HostTask task;
  task.label = "read back";
  task.reads = {host.All()};
  task.run = [&]() -> absl::Status {
    read(static_cast<const float*>(host.data()), src.bytes() / 4);
    return absl::OkStatus();
  };
  ZR_RETURN_IF_ERROR(rt.RunHostTask(task));
  return host.Free();
}

absl::Status Upload(runtime::Runtime& rt, runtime::Stream& stream,
                    const model::ParamSource& source,
                    const std::vector<model::ParamInfo>& infos,
                    Resident& resident) {
  for (const model::ParamInfo& p : infos) {
    const int64_t bytes = p.numel() * 4;
    resident.numel.push_back(p.numel());
    ZR_ASSIGN_OR_RETURN(runtime::OwnedBuffer param,
                        runtime::AllocateDevice(rt.device(), bytes, p.name));
    ZR_ASSIGN_OR_RETURN(runtime::OwnedBuffer grad,
                        runtime::AllocateDevice(rt.device(), bytes, p.name));
    ZR_ASSIGN_OR_RETURN(
        runtime::OwnedBuffer host,
        runtime::AllocateHost(rt, bytes, HostMemoryKind::kPinned, "upload"));
    runtime::HostTask fill;
    fill.label = "fill";
    fill.writes = {host.All()};
    fill.run = [&]() -> absl::Status {
      return source.Fill(p, 0, p.numel(), static_cast<float*>(host.data()));
    };
    ZR_RETURN_IF_ERROR(rt.RunHostTask(fill));
    ZR_RETURN_IF_ERROR(stream.Copy(param.All(), host.All(), "H2D"));
    ZR_RETURN_IF_ERROR(stream.Synchronize());
    ZR_RETURN_IF_ERROR(host.Free());
    resident.params.push_back(std::move(param));
    resident.grads.push_back(std::move(grad));
  }
  return absl::OkStatus();
}

// golden[key]: [steps][batch][seq] integers as one row per sample, or none
// where the key is absent.
std::vector<std::vector<int32_t>> Rows(const config::JsonValue& golden,
                                       const char* key) {
  std::vector<std::vector<int32_t>> rows;
  const config::JsonValue* value = golden.Find(key);
  if (value == nullptr) return rows;
  for (const config::JsonValue& step : value->array()) {
    for (const config::JsonValue& sample : step.array()) {
      std::vector<int32_t>& row = rows.emplace_back();
      for (const config::JsonValue& v : sample.array()) {
        row.push_back(static_cast<int32_t>(v.AsExactInt64().value()));
      }
    }
  }
  return rows;
}

}  // namespace

GoldenWindows::GoldenWindows(const config::JsonValue& golden) {
  seq_ = golden.Find("seq")->AsExactInt64().value();
  batch_ = golden.Find("batch")->AsExactInt64().value();
  for (const config::JsonValue& step : golden.Find("windows")->array()) {
    for (const config::JsonValue& w : step.array()) {
      std::vector<int32_t> tokens;
      for (const config::JsonValue& t : w.array()) {
        tokens.push_back(static_cast<int32_t>(t.AsExactInt64().value()));
        min_vocab_ = std::max<int64_t>(min_vocab_, tokens.back() + 1);
      }
      ZR_CHECK_EQ(static_cast<int64_t>(tokens.size()), seq_ + 1);
      windows_.push_back(std::move(tokens));
    }
  }
  targets_ = Rows(golden, "targets");
  positions_ = Rows(golden, "positions");
  ZR_CHECK(targets_.size() == positions_.size() &&
           (targets_.empty() || targets_.size() == windows_.size()));
  const config::JsonValue* predicted = golden.Find("predicted");
  if (predicted == nullptr) return;
  for (const config::JsonValue& step : predicted->array()) {
    for (const config::JsonValue& w : step.array()) {
      std::vector<bool> flags;
      for (const config::JsonValue& f : w.array()) {
        flags.push_back(f.AsExactInt64().value() != 0);
      }
      ZR_CHECK_EQ(static_cast<int64_t>(flags.size()), seq_);
      predicted_.push_back(std::move(flags));
    }
  }
  ZR_CHECK_EQ(predicted_.size(), windows_.size());
}

absl::Status GoldenWindows::SampleTargets(int64_t n, int64_t seq,
                                          int32_t* tokens,
                                          int32_t* targets) const {
  ZR_RETURN_IF_ERROR(BatchSource::SampleTargets(n, seq, tokens, targets));
  if (!targets_.empty()) {
    std::memcpy(targets, targets_[n].data(), seq * sizeof(int32_t));
  }
  if (predicted_.empty()) return absl::OkStatus();
  for (int64_t i = 0; i < seq; ++i) {
    if (!predicted_[n][i]) targets[i] = -1;
  }
  return absl::OkStatus();
}

absl::Status GoldenWindows::SamplePositions(int64_t n, int64_t seq,
                                            int32_t* positions) const {
  if (positions_.empty()) {
    return BatchSource::SamplePositions(n, seq, positions);
  }
  std::memcpy(positions, positions_[n].data(), seq * sizeof(int32_t));
  return absl::OkStatus();
}

absl::Status GoldenWindows::Sample(int64_t n, int64_t seq, int32_t* out) const {
  ZR_CHECK(seq == seq_ && n < static_cast<int64_t>(windows_.size()))
      << "sample " << n << " of " << seq << " tokens";
  std::memcpy(out, windows_[n].data(), (seq + 1) * sizeof(int32_t));
  return absl::OkStatus();
}

zero::ZeroOptions OptionsFor(const config::JsonValue& adamw,
                             const GoldenWindows& windows, int world) {
  zero::ZeroOptions o;
  o.dtype = DType::kF32;
  o.seq = windows.seq();
  o.micro_batch = windows.batch() / world;
  o.accumulation = 1;
  o.lr = static_cast<float>(adamw.Find("lr")->number_value());
  o.beta1 = static_cast<float>(adamw.Find("betas")->array()[0].number_value());
  o.beta2 = static_cast<float>(adamw.Find("betas")->array()[1].number_value());
  o.eps = static_cast<float>(adamw.Find("eps")->number_value());
  o.weight_decay =
      static_cast<float>(adamw.Find("weight_decay")->number_value());
  const config::JsonValue* clip = adamw.Find("gradient_clipping");
  o.gradient_clipping = clip != nullptr ? clip->number_value() : 0.0;
  // One rank updates on the host, two on the device: both update paths.
  o.offload_optimizer = world == 1;
  return o;
}

absl::StatusOr<ForwardBackwardResult> RunForwardBackward(
    const model::ModelSpec& spec, const model::ParamSource& params,
    const GoldenWindows& windows) {
  sim::SimOptions so;
  so.profile = sim::TestProfile();
  so.mode = sim::SimMode::kData;
  ZR_ASSIGN_OR_RETURN(auto world, sim::SimWorld::Create(so));
  ForwardBackwardResult result;
  ZR_RETURN_IF_ERROR(world->Run([&](runtime::Runtime& rt) -> absl::Status {
    ZR_ASSIGN_OR_RETURN(auto stream, rt.device().CreateStream("oracle"));
    ZR_ASSIGN_OR_RETURN(
        auto model, model::Transformer::Create(
                        spec, DType::kF32, windows.batch(), windows.seq(), rt));
    Resident resident;
    ZR_RETURN_IF_ERROR(Upload(rt, *stream, params, model->params(), resident));
    ZR_ASSIGN_OR_RETURN(
        model::InputStager inputs,
        model::InputStager::Create(rt, model->tokens(), "in", "in", "in H2D"));
    const model::BatchShape shape{windows.batch(), windows.seq(), 1, 1};
    ZR_RETURN_IF_ERROR(inputs.Stage(*stream, windows, shape, 0, 0, 0, "fill"));
    ZR_ASSIGN_OR_RETURN(runtime::OwnedBuffer loss,
                        runtime::AllocateDevice(rt.device(), 4, "loss"));
    ZR_RETURN_IF_ERROR(
        model->Forward(*stream, resident, inputs.tokens(), inputs.targets(),
                       TensorRef::Of(loss, DType::kF32, 0, 1), 1.0f));
    ZR_RETURN_IF_ERROR(
        ReadBack(rt, *stream, loss.All(),
                 [&](const float* v, int64_t) { result.loss = v[0]; }));
    ZR_RETURN_IF_ERROR(ReadBack(
        rt, *stream, model->logits().slice,
        [&](const float* v, int64_t n) { result.logits.assign(v, v + n); }));
    ZR_RETURN_IF_ERROR(model->Backward(*stream, resident));
    for (const model::ParamInfo& p : model->params()) {
      result.names.push_back(p.name);
      ZR_RETURN_IF_ERROR(ReadBack(rt, *stream, resident.grads[p.id].All(),
                                  [&](const float* v, int64_t n) {
                                    double sum = 0;
                                    for (int64_t i = 0; i < n; ++i) {
                                      sum += static_cast<double>(v[i]) * v[i];
                                    }
                                    result.grad_norms.push_back(std::sqrt(sum));
                                  }));
    }
    return stream->Synchronize();
  }));
  return result;
}

}  // namespace testing
}  // namespace zero3
