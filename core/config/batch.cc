// Copyright 2026 The zero3 Authors.

#include "core/config/batch.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace zero3 {
namespace config {

void ResolveBatch(int64_t world_size, Config* config, Diagnostics* diag) {
  for (const char* key : {"train_batch_size", "train_micro_batch_size_per_gpu",
                          "gradient_accumulation_steps"}) {
    if (diag->IsPoisoned(key)) return;
  }
  const int64_t ws = world_size;
  const bool has_tb = config->has_train_batch_size();
  const bool has_mb = config->has_train_micro_batch_size_per_gpu();
  const bool has_ga = config->has_gradient_accumulation_steps();
  bool positive = true;
  auto check_positive = [&](bool has, int64_t v, const char* key) {
    if (has && v <= 0) {
      diag->ValueError(key, absl::StrCat("must be at least 1, found ", v));
      positive = false;
    }
  };
  check_positive(has_tb, config->train_batch_size(), "train_batch_size");
  check_positive(has_mb, config->train_micro_batch_size_per_gpu(),
                 "train_micro_batch_size_per_gpu");
  check_positive(has_ga, config->gradient_accumulation_steps(),
                 "gradient_accumulation_steps");
  if (!positive) return;
  int64_t tb = config->train_batch_size();
  int64_t mb = config->train_micro_batch_size_per_gpu();
  int64_t ga = config->gradient_accumulation_steps();
  bool overflow = false;
  // Integer division rounds down, as DeepSpeed's does; the check below
  // reports a remainder.
  if (has_tb && has_mb && has_ga) {
    // All given: nothing to derive.
  } else if (has_tb && has_mb) {
    ga = tb / mb / ws;
  } else if (has_tb && has_ga) {
    mb = tb / ws / ga;
  } else if (has_mb && has_ga) {
    overflow = __builtin_mul_overflow(mb, ga, &tb) ||
               __builtin_mul_overflow(tb, ws, &tb);
  } else if (has_tb) {
    ga = 1;
    mb = tb / ws;
  } else if (has_mb) {
    ga = 1;
    overflow = __builtin_mul_overflow(mb, ws, &tb);
  } else {
    // DeepSpeed requires train_batch_size or the micro-batch size; zero3
    // defaults to one sample per rank per micro-batch.
    mb = 1;
    if (!has_ga) ga = 1;
    overflow = __builtin_mul_overflow(ga, ws, &tb);
    diag->Notice("train_micro_batch_size_per_gpu",
                 absl::StrCat(has_ga ? "not given (nor train_batch_size)"
                                     : "no batch size given",
                              "; using train_micro_batch_size_per_gpu 1",
                              has_ga ? "" : ", gradient_accumulation_steps 1",
                              " and train_batch_size ", tb,
                              " (DeepSpeed requires train_batch_size or "
                              "train_micro_batch_size_per_gpu)"));
  }
  if (overflow) {
    diag->ValueError("train_batch_size",
                     "the batch sizes multiply to more than 2^63; use "
                     "smaller values");
    return;
  }
  config->set_train_batch_size(tb);
  config->set_train_micro_batch_size_per_gpu(mb);
  config->set_gradient_accumulation_steps(ga);
  int64_t product = 0;
  const bool product_overflow = __builtin_mul_overflow(mb, ga, &product) ||
                                __builtin_mul_overflow(product, ws, &product);
  if (product_overflow || product != tb || mb <= 0 || ga <= 0) {
    auto shown = [](int64_t v, bool given) {
      return absl::StrCat(v, given ? "" : " (derived)");
    };
    diag->ValueError(
        "train_batch_size",
        absl::StrCat(
            "batch sizes are inconsistent: train_batch_size ",
            shown(tb, has_tb), " must equal train_micro_batch_size_per_gpu ",
            shown(mb, has_mb), " x gradient_accumulation_steps ",
            shown(ga, has_ga), " x data-parallel size ", ws, " = ",
            product_overflow ? std::string("(overflow)")
                             : absl::StrCat(product),
            ". Choose values whose product is train_batch_size, or give "
            "fewer of them and let zero3 derive the rest"));
  }
}

void CheckBatch(const Config& config, int64_t world_size, Diagnostics* diag) {
  // ResolveBatch poisons the batch sizes when it reports an error.
  if (diag->IsPoisoned("train_batch_size") ||
      diag->IsPoisoned("train_micro_batch_size_per_gpu") ||
      diag->IsPoisoned("gradient_accumulation_steps")) {
    return;
  }
  const int64_t tb = config.train_batch_size();
  const int64_t mb = config.train_micro_batch_size_per_gpu();
  const int64_t ga = config.gradient_accumulation_steps();
  if (world_size < 1) {
    diag->Error("", absl::StrCat("the data-parallel size (world size) must "
                                 "be at least 1, found ",
                                 world_size));
    return;
  }
  if (tb <= 0 || mb <= 0 || ga <= 0) {
    diag->Error("train_batch_size",
                absl::StrCat("batch sizes must be at least 1, found "
                             "train_batch_size ",
                             tb, ", train_micro_batch_size_per_gpu ", mb,
                             ", gradient_accumulation_steps ", ga));
    return;
  }
  int64_t product = 0;
  const bool overflow = __builtin_mul_overflow(mb, ga, &product) ||
                        __builtin_mul_overflow(product, world_size, &product);
  if (overflow || product != tb) {
    diag->Error("train_batch_size",
                absl::StrCat("batch sizes are inconsistent: "
                             "train_batch_size ",
                             tb,
                             " must equal train_micro_batch_size_per_"
                             "gpu ",
                             mb, " x gradient_accumulation_steps ", ga,
                             " x data-parallel size ", world_size));
  }
}

}  // namespace config
}  // namespace zero3
