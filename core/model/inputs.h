// Copyright 2026 The zero3 Authors.
//
// inputs.h: a micro-batch's tokens and targets, from a BatchSource to the
// device.
//
// An InputStager owns a pinned host staging buffer and a device buffer, each
// holding the tokens, the targets and the positions of one micro-batch
// (int32, B·S each; the positions are staged only for data that packs
// documents, BatchSource::packs).
// Stage() writes a micro-batch into the staging buffer in a host task and
// enqueues its copy to the device; the model reads tokens() and targets().
// The engine and the reference trainer stage their inputs through it, so
// both feed the model the same way. Not thread-safe.

#ifndef ZERO3_CORE_MODEL_INPUTS_H_
#define ZERO3_CORE_MODEL_INPUTS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model/data.h"
#include "core/runtime/owned_buffer.h"
#include "core/runtime/runtime.h"

namespace zero3 {
namespace model {

class InputStager {
 public:
  // Allocates, in this order, the pinned staging (`host_label`) and the
  // device buffer (`device_label`) for micro-batches of `tokens` tokens;
  // Stage's copies are named `copy_label`.
  static absl::StatusOr<InputStager> Create(runtime::Runtime& rt,
                                            int64_t tokens,
                                            absl::string_view host_label,
                                            absl::string_view device_label,
                                            absl::string_view copy_label);

  // Writes micro-batch (step, micro, rank) of `data` (BatchSource::Fill)
  // into the staging buffer in a host task named `fill_label`, and enqueues
  // its copy to the device on `stream`.
  absl::Status Stage(runtime::Stream& stream, const BatchSource& data,
                     const BatchShape& shape, int64_t step, int micro, int rank,
                     absl::string_view fill_label);

  // The device copies: int32 [tokens] each. positions() is empty unless
  // the last staged data packs documents.
  runtime::BufferSlice tokens() const;
  runtime::BufferSlice targets() const;
  runtime::BufferSlice positions() const;

 private:
  InputStager(runtime::Runtime& rt, int64_t tokens, std::string copy_label)
      : rt_(&rt), tokens_(tokens), copy_label_(std::move(copy_label)) {}

  runtime::Runtime* rt_;
  int64_t tokens_;
  std::string copy_label_;
  bool packed_ = false;
  runtime::OwnedBuffer host_, device_;
};

}  // namespace model
}  // namespace zero3

#endif  // ZERO3_CORE_MODEL_INPUTS_H_
