// Copyright 2026 The zero3 Authors.

#include "tools/cli/export_command.h"

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/engine/checkpoint_export.h"
#include "core/engine/checkpoint_manifest.h"
#include "core/kernels/dtype.h"
#include "core/util/status_macros.h"
#include "tools/cli/internal/path_clash.h"

namespace zero3 {
namespace cli {
namespace {

class ExportCommand : public Command {
 public:
  absl::string_view name() const override { return "export"; }

  absl::string_view summary() const override {
    return "write a checkpoint (train --save) as a Hugging Face model "
           "directory";
  }

  absl::string_view description() const override {
    return "Gathers every parameter's fp32 master values from the shards of "
           "a checkpoint and writes a Hugging Face directory: config.json "
           "(the model's family: Qwen2, Qwen3, Llama, Mistral, Phi-3, OLMo 2, "
           "Gemma 2, Gemma 3) "
           "and model.safetensors "
           "under transformers' tensor names, in fp32 or bf16, which zero3 "
           "train --model and transformers load (docs/checkpoints.md).";
  }

  void DefineFlags(FlagSet& flags) override {
    flags.AddString("checkpoint", &checkpoint_, "DIR",
                    "required: a --save directory (its latest) or one of its "
                    "step_<N> "
                    "directories");
    flags.AddString("out", &out_, "HFDIR",
                    "required: the directory to write, new or empty (created "
                    "if missing; its parent must exist)");
    flags.AddString("dtype", &dtype_, "fp32|bf16", "the weights' dtype");
    flags.AddBool("overwrite", &overwrite_,
                  "--out may hold files: its model files (config.json, "
                  "model*.safetensors and the index) are replaced and an "
                  "earlier export's extra shards removed; other files (a "
                  "tokenizer) stay");
  }

  int Run(const std::vector<std::string>& positional, std::ostream& out,
          std::ostream& err) override {
    const absl::Status status = Export(out);
    if (status.ok()) return kExitOk;
    err << "error: " << status.message() << "\n";
    return status.code() == absl::StatusCode::kInvalidArgument ||
                   status.code() == absl::StatusCode::kNotFound
               ? kExitUsage
               : kExitFailure;
  }

 private:
  absl::Status Export(std::ostream& out) const {
    if (checkpoint_.empty() || out_.empty()) {
      return absl::InvalidArgumentError("--checkpoint and --out are required");
    }
    if (dtype_ != "fp32" && dtype_ != "bf16") {
      return absl::InvalidArgumentError(
          absl::StrCat("--dtype must be fp32 or bf16, got '", dtype_, "'"));
    }
    ZR_ASSIGN_OR_RETURN(
        const std::string step_dir,
        engine::ResolveCheckpoint(ResolveUserPath(checkpoint_)));
    ZR_ASSIGN_OR_RETURN(const engine::CheckpointManifest m,
                        engine::ReadManifest(step_dir));
    const std::string dir = ResolveUserPath(out_);
    ZR_RETURN_IF_ERROR(
        internal::CheckNoClash({{"--checkpoint", step_dir},
                                {"--checkpoint", ResolveUserPath(checkpoint_)}},
                               {{"--out", dir}}));
    ZR_RETURN_IF_ERROR(engine::ExportHfDirectory(
        step_dir, m, dir,
        dtype_ == "fp32" ? kernels::DType::kF32 : kernels::DType::kBF16,
        overwrite_));
    out << "exported " << step_dir << " (step " << m.step << ", "
        << m.params.size() << " tensors, " << dtype_ << ") to " << dir << "\n";
    return absl::OkStatus();
  }

  std::string checkpoint_;
  std::string out_;
  bool overwrite_ = false;
  std::string dtype_ = "fp32";
};

}  // namespace

std::unique_ptr<Command> NewExportCommand() {
  return std::make_unique<ExportCommand>();
}

}  // namespace cli
}  // namespace zero3
