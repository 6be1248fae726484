// Copyright 2026 The zero3 Authors.

#include "tools/calibrate/op_class.h"

#include <cctype>

#include "absl/strings/match.h"

namespace zero3 {
namespace calibrate {
namespace {

// Copies ("grad D2H bucket 3", "inputs H2D"), memsets ("... bwd zero",
// "zero grad norm") and collectives.
bool IsDataMovement(absl::string_view label) {
  for (absl::string_view marker :
       {"H2D", "D2H", "all-gather", "reduce-scatter", "all-reduce"}) {
    if (absl::StrContains(label, marker)) return true;
  }
  return absl::StartsWith(label, "zero ") || absl::EndsWith(label, " zero");
}

bool IsElementwise(absl::string_view label) {
  for (absl::string_view marker :
       {"norm", "bias", "rotary", "residual", "swiglu", "cross_entropy",
        "embedding", "working shard", "partition", "pre-divide", "cast"}) {
    if (absl::StrContains(label, marker)) return true;
  }
  return false;
}

}  // namespace

OpClass ClassifyOp(absl::string_view stream, absl::string_view label,
                   bool pageable_host) {
  const bool adam = absl::StartsWith(label, "adamw");
  if (stream == "host") return adam ? OpClass::kHostAdam : OpClass::kOther;
  if (absl::StartsWith(label, "bucket param")) return OpClass::kStridedCopy;
  if (pageable_host && absl::StartsWith(label, "param H2D")) {
    return OpClass::kPageableH2D;
  }
  if (pageable_host && absl::StartsWith(label, "grad D2H")) {
    return OpClass::kPageableD2H;
  }
  if (IsDataMovement(label)) return OpClass::kOther;
  if (adam) return OpClass::kOptimizer;
  if (absl::StrContains(label, "attention fwd") ||
      absl::StrContains(label, "attention bwd")) {
    return OpClass::kAttention;
  }
  if (absl::StrContains(label, "_proj") ||
      absl::StrContains(label, "lm_head")) {
    return OpClass::kGemm;
  }
  return IsElementwise(label) ? OpClass::kElementwise : OpClass::kOther;
}

absl::string_view OpClassName(OpClass c) {
  switch (c) {
    case OpClass::kGemm:
      return "gemm";
    case OpClass::kAttention:
      return "attention";
    case OpClass::kElementwise:
      return "elementwise";
    case OpClass::kOptimizer:
      return "optimizer";
    case OpClass::kHostAdam:
      return "host adamw";
    case OpClass::kStridedCopy:
      return "strided copy";
    case OpClass::kPageableH2D:
      return "pageable H2D";
    case OpClass::kPageableD2H:
      return "pageable D2H";
    case OpClass::kOther:
      break;
  }
  return "other";
}

std::string OpLabelKey(absl::string_view label) {
  std::string key;
  for (size_t i = 0; i < label.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(label[i]))) {
      if (key.empty() || key.back() != '#') key.push_back('#');
    } else {
      key.push_back(label[i]);
    }
  }
  return key;
}

}  // namespace calibrate
}  // namespace zero3
