// Copyright 2026 The zero3 Authors.
//
// oracle_harness.h: what the PyTorch oracle test (testing/oracle_test.cc)
// runs: the golden token windows as a BatchSource, ZeroOptions matching the
// golden AdamW settings, and one forward and backward pass of the model on
// one simulated device with every parameter resident, reading back the
// loss, the logits and each parameter's gradient norm.

#ifndef ZERO3_TESTING_INTERNAL_ORACLE_HARNESS_H_
#define ZERO3_TESTING_INTERNAL_ORACLE_HARNESS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/config/json.h"
#include "core/model/data.h"
#include "core/model/model_spec.pb.h"
#include "core/model/param_source.h"
#include "core/zero/options.h"

namespace zero3 {
namespace testing {

// golden.json's "windows": [steps][batch][seq + 1] tokens. Sample n is
// window n % batch of step n / batch, so a global batch of `batch` windows
// per step is the same whatever the number of ranks it is split over. With
// "predicted" ([steps][batch][seq] of 0 or 1; masked_golden.json), target i
// of a window is predicted where its flag is 1, else -1. With "targets" and
// "positions" ([steps][batch][seq]; packed_golden.json), a window's first seq
// tokens are the inputs, the targets (-1: not predicted) and positions
// (several examples per sample) are as given.
class GoldenWindows : public model::BatchSource {
 public:
  explicit GoldenWindows(const config::JsonValue& golden);
  std::string description() const override { return "golden windows"; }
  int64_t min_vocab() const override { return min_vocab_; }
  bool masks_targets() const override {
    return !predicted_.empty() || !targets_.empty();
  }
  bool packs() const override { return !positions_.empty(); }
  int64_t seq() const { return seq_; }
  int64_t batch() const { return batch_; }

 protected:
  absl::Status Sample(int64_t n, int64_t seq, int32_t* out) const override;
  absl::Status SampleTargets(int64_t n, int64_t seq, int32_t* tokens,
                             int32_t* targets) const override;
  absl::Status SamplePositions(int64_t n, int64_t seq,
                               int32_t* positions) const override;

 private:
  int64_t seq_ = 0, batch_ = 0, min_vocab_ = 0;
  std::vector<std::vector<int32_t>> windows_;  // [step * batch + b]
  std::vector<std::vector<bool>> predicted_;   // likewise; empty: all
  // Packed goldens: each sample's targets (-1: none) and positions, where
  // the windows hold only the inputs (a target is not the next input at an
  // example's end). Empty otherwise.
  std::vector<std::vector<int32_t>> targets_, positions_;
};

// fp32 ZeRO-3 options for a golden "adamw" or "adamw_clipped" object: its
// lr, betas, eps, weight decay and clipping (absent: none), the global
// batch split over `world` ranks.
zero::ZeroOptions OptionsFor(const config::JsonValue& adamw,
                             const GoldenWindows& windows, int world);

struct ForwardBackwardResult {
  double loss = 0;
  std::vector<float> logits;       // [batch * seq, vocab]
  std::vector<std::string> names;  // parameter names, by id
  std::vector<double> grad_norms;  // by parameter id
};

// The first batch's forward and backward pass in fp32, parameters from
// `params`.
absl::StatusOr<ForwardBackwardResult> RunForwardBackward(
    const model::ModelSpec& spec, const model::ParamSource& params,
    const GoldenWindows& windows);

}  // namespace testing
}  // namespace zero3

#endif  // ZERO3_TESTING_INTERNAL_ORACLE_HARNESS_H_
