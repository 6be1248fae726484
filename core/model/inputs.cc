// Copyright 2026 The zero3 Authors.

#include "core/model/inputs.h"

#include <cstring>
#include <utility>
#include <vector>

#include "core/util/status_macros.h"

namespace zero3 {
namespace model {

absl::StatusOr<InputStager> InputStager::Create(runtime::Runtime& rt,
                                                int64_t tokens,
                                                absl::string_view host_label,
                                                absl::string_view device_label,
                                                absl::string_view copy_label) {
  InputStager s(rt, tokens, std::string(copy_label));
  const int64_t bytes = 3 * tokens * 4;
  ZR_ASSIGN_OR_RETURN(
      s.host_, runtime::AllocateHost(
                   rt, bytes, runtime::HostMemoryKind::kPinned, host_label));
  ZR_ASSIGN_OR_RETURN(
      s.device_, runtime::AllocateDevice(rt.device(), bytes, device_label));
  return s;
}

absl::Status InputStager::Stage(runtime::Stream& stream,
                                const BatchSource& data,
                                const BatchShape& shape, int64_t step,
                                int micro, int rank,
                                absl::string_view fill_label) {
  const int64_t t = tokens_;
  runtime::HostTask fill;
  fill.label = std::string(fill_label);
  fill.writes = {host_.All()};
  packed_ = data.packs();
  const int64_t arrays = packed_ ? 3 : 2;
  fill.memory_bytes = arrays * t * 4;
  fill.run = [&]() -> absl::Status {
    std::vector<int32_t> tokens, targets, positions;
    ZR_RETURN_IF_ERROR(data.Fill(shape, step, micro, rank, &tokens, &targets,
                                 packed_ ? &positions : nullptr));
    char* host = static_cast<char*>(host_.data());
    std::memcpy(host, tokens.data(), t * 4);
    std::memcpy(host + t * 4, targets.data(), t * 4);
    if (packed_) std::memcpy(host + 2 * t * 4, positions.data(), t * 4);
    return absl::OkStatus();
  };
  ZR_RETURN_IF_ERROR(rt_->RunHostTask(fill));
  return stream.Copy(device_.Slice(0, arrays * t * 4),
                     host_.Slice(0, arrays * t * 4), copy_label_);
}

runtime::BufferSlice InputStager::tokens() const {
  return device_.Slice(0, tokens_ * 4);
}
runtime::BufferSlice InputStager::targets() const {
  return device_.Slice(tokens_ * 4, tokens_ * 4);
}
runtime::BufferSlice InputStager::positions() const {
  return packed_ ? device_.Slice(2 * tokens_ * 4, tokens_ * 4)
                 : runtime::BufferSlice();
}

}  // namespace model
}  // namespace zero3
