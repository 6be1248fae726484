// Copyright 2026 The zero3 Authors.
//
// transformer.h: a decoder-only transformer (Qwen2/Llama family) written
// against the runtime interface, forward and backward.
//
// The model is a list of parameters and a list of modules (token embedding,
// one module per decoder layer, the head: final norm and LM head). It does not
// own its parameters: a ParamProvider hands it each module's parameters
// before the module runs and takes each parameter's gradient when it is
// complete. ZeRO-3 implements the provider by gathering and releasing shards
// (core/zero); the reference trainer (testing/) by keeping every parameter
// resident. Both therefore run exactly the same kernels in the same order.
//
// The model owns its activations: one arena allocated at Create for the
// micro-batch shape, holding what backward needs plus scratch, reused every
// micro-step (no device allocation inside a step). With activation
// checkpointing, a recomputed layer keeps only its input (the residual
// stream) from forward; backward runs its forward again (Pass::kRecompute,
// the same kernels on the same input, so the same bits) into slots all
// recomputed layers share, then its backward. Destroy the model only
// when the device is done with its work (its owner synchronizes first).
//
// Everything is enqueued on one compute stream, in order, so the model needs
// no synchronization of its own, except with checkpointing.to_host, whose
// copies run on a stream of the model's (see HostCopies in transformer.cc).
// Parameters, activations and gradients use one dtype (fp32, bf16 or fp16);
// saved statistics (RMSNorm rstd, attention and loss log-sum-exp) and the loss
// are fp32.
//
// Tensor parallelism (Megatron-style, for timing studies): with degree tp,
// each rank holds 1/tp of every block - q, k and v heads and the MLP's inner
// width split by columns, o_proj and down_proj by rows - and the partial
// outputs of o_proj and down_proj are all-reduced over the tensor-parallel
// group in forward, as are the input gradients of the q/k/v and gate/up
// projections in backward: two all-reduces per block each way. Norms, the
// embedding and the LM head are replicated.
//
// Not thread-safe; one rank's host thread drives it.

#ifndef ZERO3_CORE_MODEL_TRANSFORMER_H_
#define ZERO3_CORE_MODEL_TRANSFORMER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/kernels/op_args.h"
#include "core/model/model_spec.pb.h"
#include "core/runtime/owned_buffer.h"
#include "core/runtime/runtime.h"

namespace zero3 {
namespace model {

using runtime::DType;
using runtime::TensorRef;

enum class Init { kNormal, kOnes, kZeros };

struct ParamInfo {
  int id = 0;  // index in params(); construction order = forward order
  std::string name;
  int64_t rows = 0;  // [rows, cols]; vectors have rows == 1
  int64_t cols = 0;
  int64_t numel() const { return rows * cols; }
  Init init = Init::kNormal;
  int module = 0;  // the module that owns it (the first that uses it)
};

struct ModuleInfo {
  std::string name;
  // Parameters the module reads, ascending ids. The head of a model with
  // tied embeddings also lists the embedding (owned by module 0).
  std::vector<int> params;
};

// kRecompute: a checkpointed layer's forward run again in backward, just
// before its kBackward visit (the same kernels as its kForward visit).
enum class Pass { kForward, kBackward, kRecompute };

// Activation checkpointing: which decoder layers keep only their input in
// forward and recompute the rest just before their backward.
struct Checkpointing {
  // 0: every layer keeps its activations; k >= 1: layers 0, k, 2k, ... are
  // recomputed (k == 1: every layer).
  int every = 0;
  // Selective: recomputed layers keep attention's activations (cheap to
  // store, costly to recompute at long sequences) and recompute the MLP only.
  bool mlp_only = false;
  // DeepSpeed's cpu_checkpointing, with every >= 1: the recomputed layers'
  // inputs are copied to pinned host memory in forward (on a copy stream)
  // and back ahead of each recompute, so the device holds two of them at a
  // time instead of all. Changes no value.
  bool to_host = false;
  // The orderings the host copies rely on (named in core/zero/sync_points.h;
  // false drops one, for the race detector's tests).
  struct HostCopySyncs {
    bool offload_after_write = true;  // D2H waits for the input's producer
    bool slot_reuse = true;           // forward overwrites a slot after its D2H
    bool restore_slot_free = true;    // H2D waits for the slot's last reads
    bool restore_before_recompute = true;  // recompute waits for its H2D
  } syncs;
  // The LM head in chunks of this many token rows (0, or at least the
  // micro-batch's tokens: all at once, keeping the [tokens, vocab] logits
  // from forward to backward). Forward computes
  // each chunk's logits into one [chunk, vocab] buffer, keeping only each
  // row's log-sum-exp and loss term; backward computes them again, chunk by
  // chunk (one more head GEMM), and sums the LM head's gradient over the
  // chunks in fp32. The loss is the same bits; the head's weight gradient
  // differs by the order of its fp32 sums.
  int64_t lm_head_chunk_tokens = 0;
  bool Recomputes(int64_t layer) const {
    return every > 0 && layer % every == 0;
  }
};

// The initial value of element `index` (row-major) of parameter `param`:
// N(0, init_std) for matrices, 1 for norm weights, 0 for biases. A pure
// function of its arguments, so every rank initializes its own shard and
// agrees with every other rank and with the reference trainer.
float InitialValue(const ModelSpec& spec, const ParamInfo& param, uint64_t seed,
                   int64_t index);

// The parameters and modules of `spec` with tensor-parallel degree `tp`
// (which divides the heads and the MLP width), in the order Create builds
// them: what Transformer::params() and modules() hold.
void BuildModelParams(const ModelSpec& spec, int tp,
                      std::vector<ParamInfo>* params,
                      std::vector<ModuleInfo>* modules);

// The parameters of the whole model (tp = 1), without creating it.
std::vector<ParamInfo> ModelParams(const ModelSpec& spec);

// What the model needs from whoever holds the parameters.
class ParamProvider {
 public:
  virtual ~ParamProvider() = default;

  // Before `module` computes in `pass`: afterwards Param(p) is readable on
  // the compute stream for every p of the module.
  virtual absl::Status BeginModule(int module, Pass pass) = 0;
  // The full parameter, [rows, cols] of the model's dtype.
  virtual TensorRef Param(int param) = 0;
  // After `module`'s kernels are enqueued: its parameters may be released.
  virtual absl::Status EndModule(int module, Pass pass) = 0;

  // Backward only: where the gradient of `param` goes, same shape as the
  // parameter. Its contents are unspecified until the model first writes it
  // in this backward pass; the model overwrites it, or zero-fills before
  // accumulating.
  virtual absl::StatusOr<TensorRef> Grad(int param) = 0;
  // The gradients of `params` are complete (their kernels are enqueued).
  virtual absl::Status GradsReady(absl::Span<const int> params) = 0;
};

struct TensorParallel {
  int size = 1;
  // The tensor-parallel group; needed when size > 1.
  runtime::Communicator* comm = nullptr;
};

class Transformer {
 public:
  // Allocates the activation arena for micro-batches of `batch` sequences of
  // `seq` tokens on rt's device. Layers `checkpointing` recomputes share one
  // set of activation slots (with mlp_only, of MLP slots), so the arena
  // shrinks by theirs.
  static absl::StatusOr<std::unique_ptr<Transformer>> Create(
      const ModelSpec& spec, DType dtype, int64_t batch, int64_t seq,
      runtime::Runtime& rt, TensorParallel tp = {},
      Checkpointing checkpointing = {});
  ~Transformer();

  // The activation arena's bytes of the model Create would make with these
  // settings (its activation_bytes()), without a device.
  static absl::StatusOr<int64_t> ActivationBytes(const ModelSpec& spec,
                                                 DType dtype, int64_t batch,
                                                 int64_t seq, int tp_size,
                                                 Checkpointing checkpointing);

  const ModelSpec& spec() const { return spec_; }
  DType dtype() const { return dtype_; }
  int64_t batch() const { return batch_; }
  int64_t seq() const { return seq_; }
  int64_t tokens() const { return batch_ * seq_; }
  const std::vector<ParamInfo>& params() const { return params_; }
  const std::vector<ModuleInfo>& modules() const { return modules_; }
  const Checkpointing& checkpointing() const { return checkpointing_; }
  int64_t activation_bytes() const { return arena_bytes_; }
  // The last Forward's logits, [tokens, vocab] of dtype(): valid once the
  // forward's kernels have run, until Backward overwrites them in place.
  // With checkpointing.lm_head_chunk_tokens, the chunk buffer instead: the
  // last chunk's logits at its start.
  TensorRef logits() const;

  // Enqueues the forward pass on `stream`. tokens and targets: int32 [B*S]
  // device slices (a target of -1 is ignored). Writes the loss to `loss`
  // (one fp32 value on the device): the counted targets' terms summed over
  // loss_divisor where it is positive, else their mean. grad_scale
  // multiplies the loss gradient in Backward (loss scale and 1/accumulation).
  // `positions`, where not empty: int32 [B*S], each token's place in its
  // document (packed samples: attention stays within each document and the
  // rotation starts again at each); Backward uses the same.
  absl::Status Forward(runtime::Stream& stream, ParamProvider& params,
                       const runtime::BufferSlice& tokens,
                       const runtime::BufferSlice& targets,
                       const TensorRef& loss, float grad_scale,
                       double loss_divisor = 0.0,
                       const runtime::BufferSlice& positions = {});

  // Enqueues the backward pass of the last Forward on `stream`.
  absl::Status Backward(runtime::Stream& stream, ParamProvider& params);

  // Floating-point operations of one forward and one backward pass.
  double ForwardFlops() const;
  double BackwardFlops() const;

 private:
  struct OpArgs;
  class Steps;  // the modules' forward and backward steps
  // rt null: lays the arena out without allocating it (ActivationBytes).
  Transformer(const ModelSpec& spec, DType dtype, int64_t batch, int64_t seq,
              runtime::Runtime* rt, TensorParallel tp,
              Checkpointing checkpointing);
  // Per-rank widths under tensor parallelism.
  int64_t heads() const { return spec_.num_heads() / tp_.size; }
  int64_t kv_heads() const { return spec_.num_kv_heads() / tp_.size; }
  int64_t ffn() const { return spec_.intermediate_size() / tp_.size; }
  // Rows per LM head chunk; 0 when the head is whole (a chunk of every
  // token would only add the recompute).
  int64_t HeadChunkRows() const {
    const int64_t rows = checkpointing_.lm_head_chunk_tokens;
    return rows < tokens() ? rows : 0;
  }
  absl::Status AllReduceTp(runtime::Stream& stream, const TensorRef& x,
                           absl::string_view label);
  // Whether layer `layer` is a windowed one (spec().sliding_window, on the
  // layers spec().sliding_layers() names, or all), whether or not the
  // window is shorter than the sequence.
  bool SlidingLayer(int64_t layer) const;
  // Layer `layer`'s attention: the model's, without the window on the
  // layers that have none.
  kernels::AttentionArgs LayerAttention(int64_t layer) const;
  absl::Status Allocate();
  void BuildParams();
  void BuildOpArgs();

  ModelSpec spec_;
  DType dtype_;
  int64_t batch_, seq_;
  runtime::Runtime* rt_;
  TensorParallel tp_;
  Checkpointing checkpointing_;
  std::vector<ParamInfo> params_;
  std::vector<ModuleInfo> modules_;
  std::unique_ptr<const OpArgs> args_;

  // Activation arena (see transformer.cc for the layout).
  runtime::OwnedBuffer arena_;
  int64_t arena_bytes_ = 0;
  struct Saved;
  std::unique_ptr<Saved> saved_;
  class HostCopies;  // checkpointing.to_host: the copies and their events
  std::unique_ptr<HostCopies> host_;
  // The last forward's inputs and loss-gradient scale, for Backward.
  runtime::BufferSlice tokens_, targets_;
  float grad_scale_ = 1.0f;
  double loss_divisor_ = 0.0;
  runtime::BufferSlice positions_;
  bool forward_done_ = false;
};

}  // namespace model
}  // namespace zero3

#endif  // ZERO3_CORE_MODEL_TRANSFORMER_H_
