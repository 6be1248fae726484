// Copyright 2026 The zero3 Authors.

#include "core/model/hf_checkpoint.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "core/config/json.h"
#include "core/kernels/dtype.h"
#include "core/model/hf_config.h"
#include "core/util/check.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace model {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors data is little-endian; so must the host be");

constexpr char kSingleFile[] = "model.safetensors";
constexpr char kIndexFile[] = "model.safetensors.index.json";

bool IsFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string BaseName(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const size_t slash = dir.rfind('/');
  return slash == std::string::npos ? dir : dir.substr(slash + 1);
}

// The HF shape of a parameter: vectors (norm weights, biases) are 1-D.
std::vector<int64_t> HfShape(const ParamInfo& p) {
  if (p.rows == 1 && p.init != Init::kNormal) return {p.cols};
  return {p.rows, p.cols};
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  io::TensorEntry e;
  e.shape = shape;
  return e.ShapeString();
}

// The index's weight_map, in file order.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ReadIndex(
    const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<config::JsonValue> root = config::ParseJson(text.str());
  if (!root.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", root.status().message()));
  }
  const config::JsonValue* map =
      root->is_object() ? root->Find("weight_map") : nullptr;
  if (map == nullptr || !map->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": expected an object with a \"weight_map\" object"));
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (const config::JsonValue::Member& m : map->members()) {
    if (!m.value.is_string() || m.value.string_value().empty() ||
        absl::StrContains(m.value.string_value(), '/')) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": weight_map[\"", m.key,
          "\"] must name a .safetensors file in the same directory"));
    }
    out.emplace_back(m.key, m.value.string_value());
  }
  return out;
}

}  // namespace

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string HfTensorName(const std::string& name) {
  if (name == "embed_tokens") return "model.embed_tokens.weight";
  if (name == "norm") return "model.norm.weight";
  if (name == "lm_head") return "lm_head.weight";
  // layers.N.rest
  std::vector<std::string> parts =
      absl::StrSplit(name, absl::MaxSplits('.', 2));
  ZR_CHECK(parts.size() == 3 && parts[0] == "layers") << name;
  const std::string prefix = absl::StrCat("model.layers.", parts[1], ".");
  const std::string& rest = parts[2];
  if (rest == "input_layernorm" || rest == "post_attention_layernorm" ||
      rest == "pre_feedforward_layernorm" ||
      rest == "post_feedforward_layernorm") {
    return absl::StrCat(prefix, rest, ".weight");
  }
  if (absl::StartsWith(rest, "gate_proj") ||
      absl::StartsWith(rest, "up_proj") ||
      absl::StartsWith(rest, "down_proj")) {
    return absl::StrCat(prefix, "mlp.", rest);
  }
  return absl::StrCat(prefix, "self_attn.", rest);
}

std::vector<HfTensor> HfTensorsOf(const ModelSpec& spec,
                                  const std::vector<ParamInfo>& params) {
  std::vector<HfTensor> tensors;
  for (const ParamInfo& p : params) {
    std::string name = HfTensorName(p.name);
    if (spec.fused_projections()) {
      // q, k and v (gate and up) are consecutive parameters: they join one
      // tensor in that order.
      name = absl::StrReplaceAll(name, {{".q_proj.", ".qkv_proj."},
                                        {".k_proj.", ".qkv_proj."},
                                        {".v_proj.", ".qkv_proj."},
                                        {".gate_proj.", ".gate_up_proj."},
                                        {".up_proj.", ".gate_up_proj."}});
    }
    if (!tensors.empty() && tensors.back().name == name) {
      tensors.back().shape[0] += p.rows;
      tensors.back().params.push_back(p.id);
      continue;
    }
    HfTensor t;
    t.name = std::move(name);
    t.shape = HfShape(p);
    t.params = {p.id};
    tensors.push_back(std::move(t));
  }
  return tensors;
}

absl::StatusOr<std::unique_ptr<HfCheckpoint>> HfCheckpoint::Open(
    const std::string& dir) {
  if (!IsDirectory(dir)) {
    return absl::NotFoundError(absl::StrCat(dir, " is not a directory"));
  }
  std::unique_ptr<HfCheckpoint> c(new HfCheckpoint(dir));
  ZR_ASSIGN_OR_RETURN(
      c->spec_, LoadHfConfig(absl::StrCat(dir, "/config.json"), BaseName(dir)));
  ZR_RETURN_IF_ERROR(c->OpenFiles());
  ZR_RETURN_IF_ERROR(c->MapTensors());
  return c;
}

absl::Status HfCheckpoint::OpenFiles() {
  const std::string single = absl::StrCat(dir_, "/", kSingleFile);
  const std::string index = absl::StrCat(dir_, "/", kIndexFile);
  std::vector<std::string> names;
  if (IsFile(single)) {
    names.push_back(kSingleFile);
  } else if (IsFile(index)) {
    ZR_ASSIGN_OR_RETURN(weight_map_, ReadIndex(index));
    for (const auto& kv : weight_map_) {
      if (std::find(names.begin(), names.end(), kv.second) == names.end()) {
        names.push_back(kv.second);
      }
    }
  } else {
    return absl::NotFoundError(
        absl::StrCat(dir_, " holds neither ", kSingleFile, " nor ", kIndexFile,
                     " (zero3 reads safetensors; save the model with "
                     "save_pretrained(..., safe_serialization=True))"));
  }
  for (const std::string& name : names) {
    ZR_ASSIGN_OR_RETURN(
        std::unique_ptr<io::SafetensorsFile> f,
        io::SafetensorsFile::Open(absl::StrCat(dir_, "/", name)));
    files_.push_back(std::move(f));
  }
  return absl::OkStatus();
}

absl::Status HfCheckpoint::MapTensors() {
  const std::vector<ParamInfo> params = ModelParams(spec_);
  const std::vector<HfTensor> tensors = HfTensorsOf(spec_, params);
  absl::flat_hash_map<std::string, const HfTensor*> wanted;
  for (const HfTensor& t : tensors) wanted[t.name] = &t;
  absl::flat_hash_map<std::string, std::string> index(weight_map_.begin(),
                                                      weight_map_.end());
  params_.assign(params.size(), Tensor{});
  for (const std::unique_ptr<io::SafetensorsFile>& f : files_) {
    const std::string file_name = BaseName(f->path());
    for (const io::TensorEntry& t : f->tensors()) {
      // Old Llama checkpoints keep RoPE's frequencies, which are computed.
      if (absl::EndsWith(t.name, ".rotary_emb.inv_freq")) continue;
      auto listed = index.find(t.name);
      if (!index.empty() &&
          (listed == index.end() || listed->second != file_name)) {
        return absl::InvalidArgumentError(
            absl::StrCat(f->path(), ": tensor '", t.name,
                         "' is not listed for this file in ", kIndexFile));
      }
      auto it = wanted.find(t.name);
      if (it == wanted.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            f->path(), ": extra tensor '", t.name, "': not a parameter of ",
            spec_.name(), " as config.json describes it",
            t.name == "lm_head.weight"
                ? " (tie_word_embeddings is true: set it to false to train "
                  "a separate LM head)"
                : ""));
      }
      const HfTensor& want = *it->second;
      if (t.shape != want.shape) {
        return absl::InvalidArgumentError(absl::StrCat(
            f->path(), ": tensor '", t.name, "' has shape ", t.ShapeString(),
            "; config.json gives ", ShapeString(want.shape)));
      }
      if (t.dtype != io::TensorDType::kF32 &&
          t.dtype != io::TensorDType::kBF16 &&
          t.dtype != io::TensorDType::kF16) {
        return absl::InvalidArgumentError(
            absl::StrCat(f->path(), ": tensor '", t.name, "' is ",
                         io::TensorDTypeName(t.dtype),
                         "; zero3 reads F32, BF16 and F16 weights"));
      }
      int64_t first = 0;
      for (int id : want.params) {
        if (params_[id].entry != nullptr) {
          return absl::InvalidArgumentError(
              absl::StrCat(f->path(), ": tensor '", t.name, "' is also in ",
                           params_[id].file->path()));
        }
        params_[id] = Tensor{f.get(), &t, first};
        first += params[id].numel();
      }
    }
  }
  for (const ParamInfo& p : params) {
    if (params_[p.id].entry != nullptr) continue;
    const HfTensor& want =
        *std::find_if(tensors.begin(), tensors.end(), [&](const HfTensor& t) {
          return std::find(t.params.begin(), t.params.end(), p.id) !=
                 t.params.end();
        });
    return absl::InvalidArgumentError(absl::StrCat(
        dir_, ": missing tensor '", want.name, "' (shape ",
        ShapeString(want.shape), ") in ",
        weight_map_.empty() ? kSingleFile
                            : "the files of " + std::string(kIndexFile),
        p.name == "lm_head" ? "; if the model shares the embedding, set "
                              "tie_word_embeddings to true in config.json"
                            : ""));
  }
  return absl::OkStatus();
}

std::string HfCheckpoint::description() const {
  return absl::StrCat("Hugging Face checkpoint ", dir_);
}

absl::Status HfCheckpoint::Fill(const ParamInfo& param, int64_t offset,
                                int64_t n, float* out) const {
  ZR_CHECK(param.id >= 0 && param.id < static_cast<int>(params_.size()));
  const Tensor& t = params_[param.id];
  ZR_CHECK(offset >= 0 && n >= 0 && offset + n <= param.numel() &&
           t.first + param.numel() <= t.entry->numel())
      << param.name << " [" << offset << ", " << offset + n << ")";
  offset += t.first;
  if (n == 0) return absl::OkStatus();
  const int64_t size = io::TensorDTypeSize(t.entry->dtype);
  bytes_read_ += n * size;
  if (t.entry->dtype == io::TensorDType::kF32) {
    return t.file->Read(*t.entry, offset * 4, n * 4, out);
  }
  std::vector<uint16_t> raw(static_cast<size_t>(n));
  int64_t largest = largest_buffer_.load();
  while (n * 2 > largest &&
         !largest_buffer_.compare_exchange_weak(largest, n * 2)) {
  }
  ZR_RETURN_IF_ERROR(t.file->Read(*t.entry, offset * 2, n * 2, raw.data()));
  if (t.entry->dtype == io::TensorDType::kBF16) {
    kernels::BF16ToFloat(raw, absl::MakeSpan(out, n));
  } else {
    kernels::F16ToFloat(raw, absl::MakeSpan(out, n));
  }
  return absl::OkStatus();
}

HfCheckpoint::ReadStats HfCheckpoint::read_stats() const {
  ReadStats s;
  s.bytes_read = bytes_read_.load();
  s.largest_buffer = largest_buffer_.load();
  return s;
}

}  // namespace model
}  // namespace zero3
