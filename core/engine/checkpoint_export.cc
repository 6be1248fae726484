// Copyright 2026 The zero3 Authors.

#include "core/engine/checkpoint_export.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "core/io/atomic_file.h"
#include "core/io/safetensors.h"
#include "core/io/staged_directory.h"
#include "core/model/hf_checkpoint.h"
#include "core/model/hf_config.h"
#include "core/model/transformer.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace engine {
namespace {

// Every element of `param` (manifest entry `saved`) from the ranks' master
// tensors: rank q holds [q * partition, (q + 1) * partition).
absl::Status GatherParam(
    const std::vector<std::unique_ptr<io::SafetensorsFile>>& files,
    const CheckpointParam& saved, std::vector<float>* out) {
  out->resize(saved.numel);
  for (int64_t g = 0; g < saved.numel;) {
    const int q = static_cast<int>(g / saved.partition);
    const int64_t local = g % saved.partition;
    const int64_t n = std::min(saved.numel - g, saved.partition - local);
    // F32, or BF16 (bf16 master weights, saved as they are; widened exactly).
    const io::TensorEntry* t = files[q]->Find("master");
    const int64_t size = t == nullptr                        ? 0
                         : t->dtype == io::TensorDType::kF32 ? 4
                                                             : 2;
    if (t == nullptr ||
        (t->dtype != io::TensorDType::kF32 &&
         t->dtype != io::TensorDType::kBF16) ||
        (saved.offset + local + n) * size > t->bytes()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoint file ", files[q]->path(),
          ": no F32 or BF16 tensor 'master' holding ", saved.name));
    }
    if (size == 4) {
      ZR_RETURN_IF_ERROR(
          files[q]->Read(*t, (saved.offset + local) * 4, n * 4, &(*out)[g]));
    } else {
      std::vector<uint16_t> bf16(n);
      ZR_RETURN_IF_ERROR(
          files[q]->Read(*t, (saved.offset + local) * 2, n * 2, bf16.data()));
      kernels::BF16ToFloat(bf16, absl::MakeSpan(out->data() + g, n));
    }
    g += n;
  }
  return absl::OkStatus();
}

std::string Encode(const std::vector<float>& values, kernels::DType dtype) {
  if (dtype == kernels::DType::kF32) {
    return std::string(reinterpret_cast<const char*>(values.data()),
                       values.size() * 4);
  }
  std::string out(values.size() * 2, '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t h = kernels::FloatToBF16(values[i]);
    std::memcpy(&out[i * 2], &h, 2);
  }
  return out;
}

// Tensors in order, a new shard whenever the next would take the current
// one past `max_bytes` (as transformers' save_pretrained splits).
std::vector<std::vector<int>> PlanShards(
    const std::vector<model::HfTensor>& tensors, int64_t element_size,
    int64_t max_bytes) {
  std::vector<std::vector<int>> shards(1);
  int64_t bytes = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const int64_t b = tensors[i].numel() * element_size;
    if (!shards.back().empty() && bytes + b > max_bytes) {
      shards.emplace_back();
      bytes = 0;
    }
    shards.back().push_back(static_cast<int>(i));
    bytes += b;
  }
  return shards;
}

// One output file: the tensors `which`, each of its parameters gathered in
// order and encoded.
absl::Status WriteShard(
    const std::vector<std::unique_ptr<io::SafetensorsFile>>& files,
    const CheckpointManifest& m, const std::vector<model::HfTensor>& all,
    const std::vector<int>& which, kernels::DType dtype,
    const std::string& path) {
  std::vector<std::string> bytes;
  bytes.reserve(which.size());
  std::vector<io::TensorToWrite> tensors;
  for (int i : which) {
    const model::HfTensor& t = all[i];
    std::vector<float> values;
    for (int p : t.params) {
      std::vector<float> part;
      ZR_RETURN_IF_ERROR(GatherParam(files, m.params[p], &part));
      values.insert(values.end(), part.begin(), part.end());
    }
    bytes.push_back(Encode(values, dtype));
    tensors.push_back({t.name,
                       dtype == kernels::DType::kF32 ? io::TensorDType::kF32
                                                     : io::TensorDType::kBF16,
                       t.shape, bytes.back()});
  }
  return io::WriteSafetensors(path, tensors, {{"format", "pt"}});
}

absl::Status WriteText(const std::string& path, const config::JsonValue& json) {
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<io::AtomicFile> f,
                      io::AtomicFile::Create(path));
  ZR_RETURN_IF_ERROR(f->Write(config::WriteJson(json) + "\n"));
  return f->Commit();
}

}  // namespace

bool IsExportedModelFile(const std::string& name) {
  return name == "config.json" || name == "model.safetensors" ||
         name == "model.safetensors.index.json" ||
         (absl::StartsWith(name, "model-") && absl::StrContains(name, "-of-") &&
          absl::EndsWith(name, ".safetensors"));
}

absl::Status ExportHfDirectory(const std::string& step_dir,
                               const CheckpointManifest& m,
                               const std::string& final_dir,
                               kernels::DType dtype, bool overwrite,
                               int64_t max_shard_bytes) {
  if (dtype != kernels::DType::kF32 && dtype != kernels::DType::kBF16) {
    return absl::InvalidArgumentError(
        "the export's dtype must be fp32 or bf16");
  }
  ZR_ASSIGN_OR_RETURN(std::unique_ptr<io::StagedDirectory> staged,
                      io::StagedDirectory::Create(final_dir, overwrite));
  const std::string& out_dir = staged->staging();
  const std::vector<model::ParamInfo> params = model::ModelParams(m.spec);
  if (params.size() != m.params.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint ", step_dir, " lists ", m.params.size(),
                     " parameters; its model has ", params.size()));
  }
  for (size_t p = 0; p < params.size(); ++p) {
    if (m.params[p].name != params[p].name ||
        m.params[p].numel != params[p].numel()) {
      return absl::InvalidArgumentError(
          absl::StrCat("checkpoint ", step_dir, ": parameter ", p, " is ",
                       m.params[p].name, "; its model's is ", params[p].name));
    }
  }
  ZR_RETURN_IF_ERROR(VerifyCheckpointFiles(step_dir, m));
  std::vector<std::unique_ptr<io::SafetensorsFile>> files;
  for (const CheckpointFile& f : m.files) {
    ZR_ASSIGN_OR_RETURN(
        std::unique_ptr<io::SafetensorsFile> file,
        io::SafetensorsFile::Open(absl::StrCat(step_dir, "/", f.name)));
    files.push_back(std::move(file));
  }
  const std::vector<model::HfTensor> hf = model::HfTensorsOf(m.spec, params);
  const std::vector<std::vector<int>> shards =
      PlanShards(hf, kernels::DTypeSize(dtype), max_shard_bytes);
  config::JsonValue weight_map = config::JsonValue::Object();
  int64_t total = 0;
  for (size_t k = 0; k < shards.size(); ++k) {
    const std::string name =
        shards.size() == 1 ? std::string("model.safetensors")
                           : absl::StrFormat("model-%05d-of-%05d.safetensors",
                                             k + 1, shards.size());
    ZR_RETURN_IF_ERROR(WriteShard(files, m, hf, shards[k], dtype,
                                  absl::StrCat(out_dir, "/", name)));
    for (int i : shards[k]) {
      weight_map.Set(hf[i].name, config::JsonValue::String(name));
      total += hf[i].numel() * kernels::DTypeSize(dtype);
    }
  }
  if (shards.size() > 1) {
    config::JsonValue index = config::JsonValue::Object();
    config::JsonValue metadata = config::JsonValue::Object();
    metadata.Set("total_size", config::JsonValue::Int(total));
    index.Set("metadata", std::move(metadata));
    index.Set("weight_map", std::move(weight_map));
    ZR_RETURN_IF_ERROR(
        WriteText(out_dir + "/model.safetensors.index.json", index));
  }
  ZR_RETURN_IF_ERROR(WriteText(
      out_dir + "/config.json",
      model::HfConfigFromModelSpec(
          m.spec, dtype == kernels::DType::kF32 ? "float32" : "bfloat16")));
  return staged->Publish(IsExportedModelFile);
}

}  // namespace engine
}  // namespace zero3
