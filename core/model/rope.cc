// Copyright 2026 The zero3 Authors.

#include "core/model/rope.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace zero3 {
namespace model {
namespace {

using Type = RopeScaling::Type;

constexpr double kPi = 3.14159265358979323846;

absl::Status Bad(absl::string_view key, double value, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("rope: ", key, " is ", value, ": ", why));
}

// transformers: int(head_dim * partial_rotary_factor).
int64_t RotaryDim(const ModelSpec& spec) {
  return static_cast<int64_t>(static_cast<double>(spec.head_dim()) *
                              spec.partial_rotary_factor());
}

// The context a scaled type was pretrained with.
double OriginalContext(const ModelSpec& spec) {
  const RopeScaling& r = spec.rope_scaling();
  return static_cast<double>(r.original_max_position_embeddings() > 0
                                 ? r.original_max_position_embeddings()
                                 : spec.max_position_embeddings());
}

// yarn and longrope without a factor: the configured over the pretrained
// context.
double Factor(const ModelSpec& spec) {
  const RopeScaling& r = spec.rope_scaling();
  if (r.has_factor()) return r.factor();
  return static_cast<double>(spec.max_position_embeddings()) /
         OriginalContext(spec);
}

double YarnMscale(double scale, double mscale) {
  return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

std::vector<double> DefaultInvFreq(double base, int64_t dim) {
  std::vector<double> inv(dim / 2);
  for (int64_t i = 0; i < dim / 2; ++i) {
    inv[i] = 1.0 / std::pow(base, static_cast<double>(2 * i) /
                                      static_cast<double>(dim));
  }
  return inv;
}

void Llama3(const RopeScaling& r, std::vector<double>* inv) {
  const double factor = r.factor();
  const double old_context =
      static_cast<double>(r.original_max_position_embeddings());
  const double low_wavelen = old_context / r.low_freq_factor();
  const double high_wavelen = old_context / r.high_freq_factor();
  for (double& f : *inv) {
    const double wavelen = 2 * kPi / f;
    if (wavelen < high_wavelen) continue;
    if (wavelen > low_wavelen) {
      f /= factor;
      continue;
    }
    const double smooth = (old_context / wavelen - r.low_freq_factor()) /
                          (r.high_freq_factor() - r.low_freq_factor());
    f = (1 - smooth) * f / factor + smooth * f;
  }
}

// YaRN: each pair blends interpolation (divided by the factor) and
// extrapolation along a linear ramp between the correction dimensions.
double Yarn(const ModelSpec& spec, int64_t dim, std::vector<double>* inv) {
  const RopeScaling& r = spec.rope_scaling();
  const double base = spec.rope_theta();
  const double factor = Factor(spec);
  const double context = OriginalContext(spec);
  double attention = 0;
  if (r.has_attention_factor()) {
    attention = r.attention_factor();
  } else if (r.mscale() != 0 && r.mscale_all_dim() != 0) {
    attention =
        YarnMscale(factor, r.mscale()) / YarnMscale(factor, r.mscale_all_dim());
  } else {
    attention = YarnMscale(factor, 1.0);
  }
  const double beta_fast = r.beta_fast() != 0 ? r.beta_fast() : 32;
  const double beta_slow = r.beta_slow() != 0 ? r.beta_slow() : 1;
  auto correction_dim = [&](double rotations) {
    return static_cast<double>(dim) *
           std::log(context / (rotations * 2 * kPi)) / (2 * std::log(base));
  };
  double low = correction_dim(beta_fast);
  double high = correction_dim(beta_slow);
  if (r.truncate()) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dim - 1));
  if (low == high) high += 0.001;
  for (int64_t i = 0; i < dim / 2; ++i) {
    const double ramp =
        std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    const double extrapolation = 1 - ramp;
    const double pos_freq = 1.0 / (*inv)[i];
    (*inv)[i] = 1.0 / (factor * pos_freq) * (1 - extrapolation) +
                1.0 / pos_freq * extrapolation;
  }
  return attention;
}

double LongRope(const ModelSpec& spec, int64_t seq, std::vector<double>* inv) {
  const RopeScaling& r = spec.rope_scaling();
  const double factor = Factor(spec);
  const double context = OriginalContext(spec);
  const auto& ext =
      static_cast<double>(seq) > context ? r.long_factor() : r.short_factor();
  for (size_t i = 0; i < inv->size(); ++i) (*inv)[i] /= ext[i];
  if (r.has_attention_factor()) return r.attention_factor();
  if (factor <= 1.0) return 1.0;
  return std::sqrt(1 + std::log(factor) / std::log(context));
}

}  // namespace

absl::Status ValidateRope(const ModelSpec& spec) {
  const double partial = spec.partial_rotary_factor();
  if (!(partial > 0 && partial <= 1)) {
    return Bad("partial_rotary_factor", partial, "expected (0, 1]");
  }
  const int64_t dim = RotaryDim(spec);
  if (dim < 2 || dim % 2 != 0) {
    return Bad("partial_rotary_factor", partial,
               absl::StrCat("head_dim ", spec.head_dim(),
                            " times it must be "
                            "an even number of dimensions, got ",
                            dim));
  }
  if (!spec.has_rope_scaling()) return absl::OkStatus();
  const RopeScaling& r = spec.rope_scaling();
  const Type type = r.type();
  if (type == RopeScaling::DEFAULT) return absl::OkStatus();
  if (dim / 2 > kernels::kMaxRotaryPairs) {
    return Bad("head_dim", static_cast<double>(spec.head_dim()),
               absl::StrCat("a scaled RoPE has at most ",
                            kernels::kMaxRotaryPairs, " rotary pairs"));
  }
  if (r.has_factor() && !(r.factor() > 0 && std::isfinite(r.factor()))) {
    return Bad("factor", r.factor(), "expected a positive number");
  }
  const bool needs_context =
      type == RopeScaling::YARN || type == RopeScaling::LONGROPE ||
      type == RopeScaling::LLAMA3 || type == RopeScaling::DYNAMIC;
  if (needs_context && !(OriginalContext(spec) > 0)) {
    return absl::InvalidArgumentError(
        "rope: original_max_position_embeddings (or max_position_embeddings) "
        "is required by this rope_type");
  }
  if ((type == RopeScaling::LINEAR || type == RopeScaling::DYNAMIC ||
       type == RopeScaling::LLAMA3) &&
      !r.has_factor()) {
    return absl::InvalidArgumentError(
        "rope: factor is required by this rope_type");
  }
  if (type == RopeScaling::LLAMA3) {
    if (!(r.low_freq_factor() > 0) || !(r.high_freq_factor() > 0) ||
        r.high_freq_factor() == r.low_freq_factor()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "rope: llama3 needs positive, different low_freq_factor and "
          "high_freq_factor, got ",
          r.low_freq_factor(), " and ", r.high_freq_factor()));
    }
  }
  if (type == RopeScaling::YARN || type == RopeScaling::LONGROPE) {
    if (!(Factor(spec) > 0)) {
      return absl::InvalidArgumentError(
          "rope: factor (or max_position_embeddings over "
          "original_max_position_embeddings) must be positive");
    }
    if (r.has_attention_factor() && !(r.attention_factor() > 0)) {
      return Bad("attention_factor", r.attention_factor(),
                 "expected a positive number");
    }
  }
  if (type == RopeScaling::LONGROPE) {
    for (const auto* factors : {&r.short_factor(), &r.long_factor()}) {
      if (factors->size() != dim / 2) {
        return absl::InvalidArgumentError(absl::StrCat(
            "rope: longrope's short_factor and long_factor need one value per "
            "rotary pair (",
            dim / 2, "), got ", r.short_factor_size(), " and ",
            r.long_factor_size()));
      }
      for (double f : *factors) {
        if (!(f > 0 && std::isfinite(f))) {
          return Bad("short_factor/long_factor", f,
                     "expected positive numbers");
        }
      }
    }
  }
  return absl::OkStatus();
}

RopeFrequencies ComputeRope(const ModelSpec& spec, int64_t seq) {
  RopeFrequencies out;
  out.rotary_dim = RotaryDim(spec);
  const Type type = spec.rope_scaling().type();
  out.is_default =
      type == RopeScaling::DEFAULT && out.rotary_dim == spec.head_dim();
  const RopeScaling& r = spec.rope_scaling();
  double base = spec.rope_theta();
  const int64_t dim = out.rotary_dim;
  if (type == RopeScaling::DYNAMIC) {
    const double max_pos = static_cast<double>(spec.max_position_embeddings());
    const double len = std::max(static_cast<double>(seq), max_pos);
    base *= std::pow(r.factor() * len / max_pos - (r.factor() - 1),
                     static_cast<double>(dim) / static_cast<double>(dim - 2));
  }
  out.inv_freq = DefaultInvFreq(base, dim);
  switch (type) {
    case RopeScaling::DEFAULT:
    case RopeScaling::DYNAMIC:
      break;
    case RopeScaling::LINEAR:
      for (double& f : out.inv_freq) f /= r.factor();
      break;
    case RopeScaling::LLAMA3:
      Llama3(r, &out.inv_freq);
      break;
    case RopeScaling::YARN:
      out.attention_scaling = Yarn(spec, dim, &out.inv_freq);
      break;
    case RopeScaling::LONGROPE:
      out.attention_scaling = LongRope(spec, seq, &out.inv_freq);
      break;
  }
  return out;
}

void SetRotaryFrequencies(const ModelSpec& spec, const RopeFrequencies& rope,
                          kernels::RotaryArgs* args) {
  args->theta = static_cast<float>(spec.rope_theta());
  args->rotary_dim = rope.rotary_dim == spec.head_dim() ? 0 : rope.rotary_dim;
  args->attention_scaling = static_cast<float>(rope.attention_scaling);
  args->has_inv_freq = !rope.is_default;
  if (rope.is_default) return;
  for (size_t i = 0; i < rope.inv_freq.size(); ++i) {
    args->inv_freq[i] = static_cast<float>(rope.inv_freq[i]);
  }
}

}  // namespace model
}  // namespace zero3
