// Copyright 2026 The zero3 Authors.

#include "core/model/transformer.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/kernels/op_args.h"
#include "core/model/rope.h"
#include "core/util/check.h"
#include "core/util/random.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace model {
namespace {

namespace k = kernels;
namespace ops = runtime::ops;
using runtime::BufferSlice;
using runtime::KernelCall;
using runtime::Stream;

// Bump allocation of tensors inside one arena buffer, 256-byte aligned so
// every tensor starts on a boundary kernels can vectorize on.
class ArenaLayout {
 public:
  int64_t Reserve(int64_t bytes) {
    const int64_t offset = size_;
    size_ += (bytes + 255) / 256 * 256;
    return offset;
  }
  int64_t size() const { return size_; }
  // Moves the end to `offset`: reserving from an earlier offset again
  // overlays what was reserved there.
  void Seek(int64_t offset) { size_ = offset; }

 private:
  int64_t size_ = 0;
};

}  // namespace

// Where each activation lives in the arena.
struct Transformer::Saved {
  struct LayerSlots {
    // With NORM_POST, h1 and h2 hold the outputs of o_proj and down_proj
    // (the inputs of the norms after them). With q/k norms, q_raw and k_raw
    // are the projections before them. With NORM_SANDWICH, attn_out and
    // mlp_out hold the outputs of o_proj and down_proj, the inputs of the
    // norms after them.
    TensorRef h1, rstd1, q, k, v, att, lse, mid, h2, rstd2, gate, up, m;
    TensorRef q_raw, k_raw, rstd_q, rstd_k;
    TensorRef attn_out, rstd_attn_out, mlp_out, rstd_mlp_out;
  };
  std::vector<TensorRef> res;  // [L+1] residual stream, res[0] = embeddings
  std::vector<LayerSlots> layers;
  TensorRef hf, rstdf, logits, lse_ce;
  // Scratch, not kept between ops of different layers.
  TensorRef tmp, dres_a, dres_b, dmid, dh, datt, dq, dk, dv, dm, dgate, dup;
  // With q/k norms: the gradients of q and k before them.
  TensorRef dq_raw, dk_raw;
  // Chunked LM head only, over the layers' backward scratch from datt on
  // (free while the head runs): logits holds one chunk; the rows' loss terms
  // (double; fp32 pairs here) and, for a gradient not in fp32, the fp32 sum
  // of the head's weight gradient over the chunks.
  TensorRef row_loss, head_grad;
};

// checkpointing.to_host: the inputs of the recomputed layers ("kept" layers,
// ordinal i in forward order) live in pinned host memory between forward
// and backward; on the device they alternate between two slots, kept
// input i in slot i % 2. Every copy runs on the model's copy stream, in
// order, so a D2H into host input i follows the previous backward's H2D
// from it, and an H2D into a slot follows the forward's D2H from it.
class Transformer::HostCopies {
 public:
  static absl::StatusOr<std::unique_ptr<HostCopies>> Create(
      Transformer& m, const std::vector<int64_t>& kept) {
    auto h = std::unique_ptr<HostCopies>(new HostCopies(m, kept));
    runtime::Device& dev = m.rt_->device();
    ZR_ASSIGN_OR_RETURN(h->copy_, dev.CreateStream("checkpoint copy"));
    for (int s = 0; s < 2; ++s) {
      for (auto* e : {&h->written_[s], &h->offloaded_[s], &h->read_[s],
                      &h->restored_[s]}) {
        ZR_ASSIGN_OR_RETURN(*e, dev.CreateEvent());
      }
    }
    const int64_t each = m.tokens() * m.spec_.hidden_size();
    ZR_ASSIGN_OR_RETURN(h->host_, runtime::AllocateHost(
                                      *m.rt_,
                                      each * static_cast<int64_t>(kept.size()) *
                                          k::DTypeSize(m.dtype_),
                                      runtime::HostMemoryKind::kPinned,
                                      "checkpointed layer inputs (host)"));
    for (size_t i = 0; i < kept.size(); ++i) {
      h->inputs_.push_back(TensorRef::Of(h->host_, m.dtype_,
                                         static_cast<int64_t>(i) * each, each));
    }
    return h;
  }

  // Kept input i of layer `layer`, or -1 if its input stays on the device.
  int Ordinal(int64_t layer) const {
    auto it = std::find(kept_.begin(), kept_.end(), layer);
    return it == kept_.end() ? -1 : static_cast<int>(it - kept_.begin());
  }

  // Before `compute` writes kept input i: its slot's D2H of input i - 2 is
  // done (sync checkpoint-slot-reuse).
  absl::Status BeforeWrite(Stream& compute, int i) {
    if (i < 2 || !m_.checkpointing_.syncs.slot_reuse) {
      return absl::OkStatus();
    }
    return compute.Wait(*offloaded_[i % 2]);
  }

  // After `compute` enqueued the write of kept input i: copies it to the
  // host once written (sync checkpoint-offload-after-write).
  absl::Status Offload(Stream& compute, int i) {
    const int s = i % 2;
    ZR_RETURN_IF_ERROR(compute.Record(*written_[s]));
    if (m_.checkpointing_.syncs.offload_after_write) {
      ZR_RETURN_IF_ERROR(copy_->Wait(*written_[s]));
    }
    ZR_RETURN_IF_ERROR(copy_->Copy(inputs_[i].slice, Slot(i).slice,
                                   absl::StrCat("L", kept_[i], " input D2H")));
    return copy_->Record(*offloaded_[s]);
  }

  // Copies kept input i back into its slot once `compute` is done with
  // what it read there (sync checkpoint-restore-slot-free).
  absl::Status Restore(Stream& compute, int i) {
    if (i < 0) return absl::OkStatus();
    const int s = i % 2;
    ZR_RETURN_IF_ERROR(compute.Record(*read_[s]));
    if (m_.checkpointing_.syncs.restore_slot_free) {
      ZR_RETURN_IF_ERROR(copy_->Wait(*read_[s]));
    }
    ZR_RETURN_IF_ERROR(copy_->Copy(Slot(i).slice, inputs_[i].slice,
                                   absl::StrCat("L", kept_[i], " input H2D")));
    return copy_->Record(*restored_[s]);
  }

  // Before `compute` reads kept input i in backward: its H2D is done (sync
  // checkpoint-restore-before-recompute).
  absl::Status BeforeRead(Stream& compute, int i) {
    if (!m_.checkpointing_.syncs.restore_before_recompute) {
      return absl::OkStatus();
    }
    return compute.Wait(*restored_[i % 2]);
  }

  int count() const { return static_cast<int>(kept_.size()); }

 private:
  HostCopies(Transformer& m, std::vector<int64_t> kept)
      : m_(m), kept_(std::move(kept)) {}
  const TensorRef& Slot(int i) const { return m_.saved_->res[kept_[i]]; }

  Transformer& m_;
  std::vector<int64_t> kept_;  // the layers whose inputs go to the host
  std::unique_ptr<Stream> copy_;
  runtime::OwnedBuffer host_;
  std::vector<TensorRef> inputs_;  // on the host, one per kept layer
  // Per slot: input written (compute), copied out (copy), last read
  // (compute), copied back (copy).
  std::unique_ptr<runtime::Event> written_[2], offloaded_[2], read_[2],
      restored_[2];
};

namespace {

// Parameter ids of layer l, recomputed from the construction order below.
// With norm_placement NORM_POST, ln1 and ln2 are the norms after attention
// and after the MLP; with NORM_SANDWICH, ln1p and ln2p are those and ln1 and
// ln2 the norms before (-1 otherwise); qn and kn are the q/k norms (-1
// without).
struct LayerIds {
  int ln1, wq, bq, wk, bk, wv, bv, qn, kn, wo, ln1p, ln2, wg, wu, wd, ln2p;
};

bool HasQkNorm(const ModelSpec& s) {
  return s.qk_norm() != ModelSpec::QK_NORM_NONE;
}

bool PostNorm(const ModelSpec& s) {
  return s.norm_placement() == ModelSpec::NORM_POST;
}

bool Sandwich(const ModelSpec& s) {
  return s.norm_placement() == ModelSpec::NORM_SANDWICH;
}

// sqrt(hidden_size) as transformers multiplies Gemma's embeddings by it: in
// float, then rounded to the model's dtype.
float EmbeddingScaleOf(const ModelSpec& s, DType dtype) {
  const float scale =
      static_cast<float>(std::sqrt(static_cast<double>(s.hidden_size())));
  switch (dtype) {
    case DType::kBF16:
      return k::BF16ToFloat(k::FloatToBF16(scale));
    case DType::kF16:
      return k::F16ToFloat(k::FloatToF16(scale));
    case DType::kF32:
      break;
  }
  return scale;
}

LayerIds IdsOf(const ModelSpec& s, int64_t l) {
  const int per_layer = 9 + (s.qkv_bias() ? 3 : 0) + (HasQkNorm(s) ? 2 : 0) +
                        (Sandwich(s) ? 2 : 0);
  int id = 1 + static_cast<int>(l) * per_layer;
  LayerIds ids;
  ids.ln1 = id++;
  ids.wq = id++;
  ids.bq = s.qkv_bias() ? id++ : -1;
  ids.wk = id++;
  ids.bk = s.qkv_bias() ? id++ : -1;
  ids.wv = id++;
  ids.bv = s.qkv_bias() ? id++ : -1;
  ids.qn = HasQkNorm(s) ? id++ : -1;
  ids.kn = HasQkNorm(s) ? id++ : -1;
  ids.wo = id++;
  ids.ln1p = Sandwich(s) ? id++ : -1;
  ids.ln2 = id++;
  ids.wg = id++;
  ids.wu = id++;
  ids.wd = id++;
  ids.ln2p = Sandwich(s) ? id++ : -1;
  return ids;
}

}  // namespace

float InitialValue(const ModelSpec& spec, const ParamInfo& param, uint64_t seed,
                   int64_t index) {
  switch (param.init) {
    case Init::kOnes:
      return 1.0f;
    case Init::kZeros:
      return 0.0f;
    case Init::kNormal:
      break;
  }
  return static_cast<float>(
      spec.init_std() * NormalOf(seed, static_cast<uint64_t>(param.id), index));
}

Transformer::Transformer(const ModelSpec& spec, DType dtype, int64_t batch,
                         int64_t seq, runtime::Runtime* rt, TensorParallel tp,
                         Checkpointing checkpointing)
    : spec_(spec),
      dtype_(dtype),
      batch_(batch),
      seq_(seq),
      rt_(rt),
      tp_(tp),
      checkpointing_(checkpointing) {}

Transformer::~Transformer() = default;

TensorRef Transformer::logits() const { return saved_->logits; }

namespace {

// What Create refuses, bar the tensor-parallel group.
absl::Status CheckShape(const ModelSpec& spec, int64_t batch, int64_t seq,
                        int tp_size, const Checkpointing& checkpointing) {
  if (checkpointing.lm_head_chunk_tokens < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LM head chunk must be 0 (whole logits) or at least 1 token, got ",
        checkpointing.lm_head_chunk_tokens));
  }
  if (checkpointing.every < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "activation checkpointing interval must be 0 (off) or at least 1, got ",
        checkpointing.every));
  }
  if (tp_size < 1) {
    return absl::InvalidArgumentError(
        "tensor parallelism needs a degree of at least 1 and its group");
  }
  if (spec.num_heads() % tp_size != 0 || spec.num_kv_heads() % tp_size != 0 ||
      spec.intermediate_size() % tp_size != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor-parallel degree ", tp_size, " must divide the heads (",
        spec.num_heads(), "), the kv heads (", spec.num_kv_heads(),
        ") and the MLP width (", spec.intermediate_size(), ") of ",
        spec.name()));
  }
  if (batch <= 0 || seq <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("micro-batch must be at least 1 sequence of 1 token, got ",
                     batch, " x ", seq));
  }
  if (tp_size > 1 && HasQkNorm(spec)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor parallelism is not supported for ", spec.name(),
        ": its q/k norms would need their statistics and gradients reduced "
        "over the tensor-parallel group; use a degree of 1"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int64_t> Transformer::ActivationBytes(
    const ModelSpec& spec, DType dtype, int64_t batch, int64_t seq, int tp_size,
    Checkpointing checkpointing) {
  ZR_RETURN_IF_ERROR(CheckShape(spec, batch, seq, tp_size, checkpointing));
  TensorParallel tp;
  tp.size = tp_size;
  Transformer t(spec, dtype, batch, seq, nullptr, tp, checkpointing);
  t.BuildParams();
  t.BuildOpArgs();
  ZR_RETURN_IF_ERROR(t.Allocate());  // lays the arena out only
  return t.arena_bytes_;
}

absl::StatusOr<std::unique_ptr<Transformer>> Transformer::Create(
    const ModelSpec& spec, DType dtype, int64_t batch, int64_t seq,
    runtime::Runtime& rt, TensorParallel tp, Checkpointing checkpointing) {
  ZR_RETURN_IF_ERROR(CheckShape(spec, batch, seq, tp.size, checkpointing));
  if (tp.size > 1 && tp.comm == nullptr) {
    return absl::InvalidArgumentError(
        "tensor parallelism needs a degree of at least 1 and its group");
  }
  std::unique_ptr<Transformer> t(
      new Transformer(spec, dtype, batch, seq, &rt, tp, checkpointing));
  t->BuildParams();
  t->BuildOpArgs();
  ZR_RETURN_IF_ERROR(t->Allocate());
  return t;
}

void BuildModelParams(const ModelSpec& s, int tp,
                      std::vector<ParamInfo>* params,
                      std::vector<ModuleInfo>* modules) {
  const int64_t h = s.hidden_size(), f = s.intermediate_size() / tp;
  const int64_t q = s.num_heads() / tp * s.head_dim();
  const int64_t kv = s.num_kv_heads() / tp * s.head_dim();
  const bool post = PostNorm(s);
  const bool sandwich = Sandwich(s);
  // Gemma's norms scale by (1 + weight) from a zero weight.
  const Init norm_init = s.norm_unit_offset() ? Init::kZeros : Init::kOnes;
  params->clear();
  modules->clear();
  auto add = [&](std::string name, int64_t rows, int64_t cols, Init init,
                 int module) {
    ParamInfo p;
    p.id = static_cast<int>(params->size());
    p.name = std::move(name);
    p.rows = rows;
    p.cols = cols;
    p.init = init;
    p.module = module;
    params->push_back(p);
    (*modules)[module].params.push_back(p.id);
    return p.id;
  };
  modules->resize(s.num_layers() + 2);
  (*modules)[0].name = "embedding";
  add("embed_tokens", s.vocab_size(), h, Init::kNormal, 0);
  for (int64_t l = 0; l < s.num_layers(); ++l) {
    const int m = static_cast<int>(l) + 1;
    (*modules)[m].name = absl::StrCat("layers.", l);
    const std::string p = absl::StrCat("layers.", l, ".");
    add(p + (post ? "post_attention_layernorm" : "input_layernorm"), 1, h,
        norm_init, m);
    add(p + "q_proj.weight", q, h, Init::kNormal, m);
    if (s.qkv_bias()) add(p + "q_proj.bias", 1, q, Init::kZeros, m);
    add(p + "k_proj.weight", kv, h, Init::kNormal, m);
    if (s.qkv_bias()) add(p + "k_proj.bias", 1, kv, Init::kZeros, m);
    add(p + "v_proj.weight", kv, h, Init::kNormal, m);
    if (s.qkv_bias()) add(p + "v_proj.bias", 1, kv, Init::kZeros, m);
    if (HasQkNorm(s)) {
      const bool whole = s.qk_norm() == ModelSpec::QK_NORM_WHOLE;
      add(p + "q_norm.weight", 1, whole ? q : s.head_dim(), norm_init, m);
      add(p + "k_norm.weight", 1, whole ? kv : s.head_dim(), norm_init, m);
    }
    add(p + "o_proj.weight", h, q, Init::kNormal, m);
    if (sandwich) add(p + "post_attention_layernorm", 1, h, norm_init, m);
    add(p + (post       ? "post_feedforward_layernorm"
             : sandwich ? "pre_feedforward_layernorm"
                        : "post_attention_layernorm"),
        1, h, norm_init, m);
    add(p + "gate_proj.weight", f, h, Init::kNormal, m);
    add(p + "up_proj.weight", f, h, Init::kNormal, m);
    add(p + "down_proj.weight", h, f, Init::kNormal, m);
    if (sandwich) add(p + "post_feedforward_layernorm", 1, h, norm_init, m);
  }
  const int head = static_cast<int>(s.num_layers()) + 1;
  (*modules)[head].name = "head";
  if (s.tie_word_embeddings()) (*modules)[head].params.push_back(0);
  add("norm", 1, h, norm_init, head);
  if (!s.tie_word_embeddings()) {
    add("lm_head", s.vocab_size(), h, Init::kNormal, head);
  }
}

std::vector<ParamInfo> ModelParams(const ModelSpec& spec) {
  std::vector<ParamInfo> params;
  std::vector<ModuleInfo> modules;
  BuildModelParams(spec, 1, &params, &modules);
  return params;
}

void Transformer::BuildParams() {
  BuildModelParams(spec_, tp_.size, &params_, &modules_);
}

absl::Status Transformer::Allocate() {
  const ModelSpec& s = spec_;
  const int64_t t = tokens(), h = s.hidden_size(), f = ffn();
  const int64_t q = heads() * s.head_dim();
  const int64_t kv = kv_heads() * s.head_dim();
  const int64_t lse = batch_ * heads() * seq_;

  // First pass: offsets; second pass: TensorRefs on the allocated buffer.
  struct Pending {
    TensorRef* ref;
    int64_t offset;
    int64_t elements;
    DType dtype;
  };
  std::vector<Pending> pending;
  ArenaLayout layout;
  auto reserve = [&](TensorRef* ref, int64_t elements, DType dtype) {
    pending.push_back(
        {ref, layout.Reserve(elements * k::DTypeSize(dtype)), elements, dtype});
  };
  auto act = [&](TensorRef* ref, int64_t elements) {
    reserve(ref, elements, dtype_);
  };
  auto f32 = [&](TensorRef* ref, int64_t elements) {
    reserve(ref, elements, DType::kF32);
  };
  saved_ = std::make_unique<Saved>();
  Saved& sv = *saved_;
  sv.res.resize(s.num_layers() + 1);
  sv.layers.resize(s.num_layers());
  // With to_host, the kept layers' inputs share two slots (see HostCopies).
  std::vector<int64_t> host_kept;
  for (int64_t l = 0; l < s.num_layers(); ++l) {
    if (checkpointing_.to_host && checkpointing_.Recomputes(l)) {
      host_kept.push_back(l);
    }
  }
  TensorRef slots[2];
  for (int i = 0; i < std::min<int>(2, host_kept.size()); ++i) {
    act(&slots[i], t * h);
  }
  for (int64_t l = 0; l <= s.num_layers(); ++l) {
    if (std::find(host_kept.begin(), host_kept.end(), l) == host_kept.end()) {
      act(&sv.res[l], t * h);
    }
  }
  // Recomputed layers alias the first one's slots (reserved once, copied
  // after): all of them, or with mlp_only the MLP's (attention's, up to mid,
  // the MLP's input, stay per layer).
  const bool per_head = s.qk_norm() == ModelSpec::QK_NORM_PER_HEAD;
  auto attention = [&](Saved::LayerSlots& l) {
    act(&l.h1, t * h);
    f32(&l.rstd1, t);
    act(&l.q, t * q);
    act(&l.k, t * kv);
    if (HasQkNorm(s)) {
      act(&l.q_raw, t * q);
      act(&l.k_raw, t * kv);
      f32(&l.rstd_q, per_head ? t * heads() : t);
      f32(&l.rstd_k, per_head ? t * kv_heads() : t);
    }
    act(&l.v, t * kv);
    act(&l.att, t * q);
    f32(&l.lse, lse);
    if (Sandwich(s)) {
      act(&l.attn_out, t * h);
      f32(&l.rstd_attn_out, t);
    }
    act(&l.mid, t * h);
  };
  auto mlp = [&](Saved::LayerSlots& l) {
    act(&l.h2, t * h);
    f32(&l.rstd2, t);
    act(&l.gate, t * f);
    act(&l.up, t * f);
    act(&l.m, t * f);
    if (Sandwich(s)) {
      act(&l.mlp_out, t * h);
      f32(&l.rstd_mlp_out, t);
    }
  };
  const bool mlp_only = checkpointing_.mlp_only;
  Saved::LayerSlots* shared = nullptr;
  std::vector<Saved::LayerSlots*> aliases;
  for (int64_t i = 0; i < s.num_layers(); ++i) {
    Saved::LayerSlots& l = sv.layers[i];
    const bool alias = checkpointing_.Recomputes(i) && shared != nullptr;
    if (checkpointing_.Recomputes(i) && shared == nullptr) shared = &l;
    if (alias) aliases.push_back(&l);
    if (!alias || mlp_only) attention(l);
    if (!alias) mlp(l);
  }
  const int64_t chunk = HeadChunkRows();
  act(&sv.hf, t * h);
  f32(&sv.rstdf, t);
  if (chunk == 0) act(&sv.logits, t * s.vocab_size());
  f32(&sv.lse_ce, t);
  for (TensorRef* r : {&sv.tmp, &sv.dres_a, &sv.dres_b, &sv.dmid, &sv.dh}) {
    act(r, t * h);
  }
  const int64_t overlay = layout.size();
  act(&sv.datt, t * q);
  act(&sv.dq, t * q);
  act(&sv.dk, t * kv);
  if (HasQkNorm(s)) {
    act(&sv.dq_raw, t * q);
    act(&sv.dk_raw, t * kv);
  }
  act(&sv.dv, t * kv);
  for (TensorRef* r : {&sv.dm, &sv.dgate, &sv.dup}) act(r, t * f);
  if (chunk > 0) {
    const int64_t end = layout.size();
    layout.Seek(overlay);
    act(&sv.logits, chunk * s.vocab_size());
    f32(&sv.row_loss, 2 * t);
    if (dtype_ != DType::kF32) f32(&sv.head_grad, s.vocab_size() * h);
    layout.Seek(std::max(end, layout.size()));
  }

  arena_bytes_ = layout.size();
  if (rt_ == nullptr) return absl::OkStatus();  // ActivationBytes
  ZR_ASSIGN_OR_RETURN(arena_, runtime::AllocateDevice(
                                  rt_->device(), arena_bytes_, "activations"));
  for (const Pending& p : pending) {
    // Arena offsets are 256-byte aligned, so a whole number of elements.
    *p.ref = TensorRef::Of(arena_, p.dtype, p.offset / k::DTypeSize(p.dtype),
                           p.elements);
  }
  for (Saved::LayerSlots* l : aliases) {
    if (!mlp_only) *l = *shared;
    l->h2 = shared->h2;
    l->rstd2 = shared->rstd2;
    l->gate = shared->gate;
    l->up = shared->up;
    l->m = shared->m;
    l->mlp_out = shared->mlp_out;
    l->rstd_mlp_out = shared->rstd_mlp_out;
  }
  for (size_t i = 0; i < host_kept.size(); ++i) {
    sv.res[host_kept[i]] = slots[i % 2];
  }
  if (!host_kept.empty()) {
    ZR_ASSIGN_OR_RETURN(host_, HostCopies::Create(*this, host_kept));
  }
  return absl::OkStatus();
}

namespace {

// Launch helpers: each op as one line at the call site.
class Ops {
 public:
  Ops(Stream& s, std::string prefix) : s_(s), prefix_(std::move(prefix)) {}

  absl::Status Run(runtime::Op op, absl::string_view what) {
    return s_.Launch(KernelCall(std::move(op), absl::StrCat(prefix_, what)));
  }
  absl::Status Matmul(const k::MatmulArgs& args, const TensorRef& a,
                      const TensorRef& b, const TensorRef& c,
                      absl::string_view what) {
    ops::Matmul op;
    op.args = args;
    op.a = a;
    op.b = b;
    op.c = c;
    return Run(op, what);
  }
  absl::Status Zero(const TensorRef& x, absl::string_view what) {
    ops::Fill op;
    op.args.n = x.elements();
    op.args.value = 0.0f;
    op.x = x;
    return Run(op, what);
  }
  absl::Status Add(const TensorRef& a, const TensorRef& b, const TensorRef& out,
                   absl::string_view what) {
    ops::Add op;
    op.args.n = out.elements();
    op.a = a;
    op.b = b;
    op.out = out;
    return Run(op, what);
  }
  absl::Status BiasAdd(int64_t rows, const TensorRef& bias, const TensorRef& x,
                       absl::string_view what) {
    ops::BiasAdd op;
    op.args.rows = rows;
    op.args.cols = bias.elements();
    op.bias = bias;
    op.x = x;
    return Run(op, what);
  }
  absl::Status BiasBackward(int64_t rows, const TensorRef& dy,
                            const TensorRef& d_bias, absl::string_view what) {
    ZR_RETURN_IF_ERROR(Zero(d_bias, absl::StrCat(what, " zero")));
    ops::BiasBackward op;
    op.args.rows = rows;
    op.args.cols = d_bias.elements();
    op.dy = dy;
    op.d_bias = d_bias;
    return Run(op, what);
  }

 private:
  Stream& s_;
  std::string prefix_;
};

}  // namespace

// Each op's Args for this model and micro-batch shape, built once and shared
// by the forward and backward ops.
struct Transformer::OpArgs {
  k::EmbeddingArgs embedding;
  k::RmsNormArgs norm;
  k::RmsNormArgs q_norm, k_norm;  // with q/k norms
  k::RotaryArgs rotary_q, rotary_k;
  // The sliding-window layers' rotation where it differs (local_rope_theta).
  k::RotaryArgs local_rotary_q, local_rotary_k;
  k::AttentionArgs attention;
  k::SwigluArgs swiglu;
  k::CrossEntropyArgs cross_entropy;  // grad_scale, loss_divisor: per pass
};

void Transformer::BuildOpArgs() {
  const ModelSpec& s = spec_;
  auto a = std::make_unique<OpArgs>();
  a->embedding.num_tokens = tokens();
  a->embedding.vocab_size = s.vocab_size();
  a->embedding.dim = s.hidden_size();
  a->norm.rows = tokens();
  a->norm.dim = s.hidden_size();
  a->norm.eps = static_cast<float>(s.rms_norm_eps());
  a->norm.weight_offset = s.norm_unit_offset() ? 1.0f : 0.0f;
  a->rotary_q.batch = batch_;
  a->rotary_q.seq = seq_;
  a->rotary_q.heads = heads();
  a->rotary_q.head_dim = s.head_dim();
  a->local_rotary_q = a->rotary_q;
  SetRotaryFrequencies(s, ComputeRope(s, seq_), &a->rotary_q);
  a->rotary_k = a->rotary_q;
  a->rotary_k.heads = kv_heads();
  if (s.local_rope_theta() > 0) {
    ModelSpec local = s;
    local.set_rope_theta(s.local_rope_theta());
    local.clear_rope_scaling();
    SetRotaryFrequencies(local, ComputeRope(local, seq_), &a->local_rotary_q);
  } else {
    a->local_rotary_q = a->rotary_q;
  }
  a->local_rotary_k = a->local_rotary_q;
  a->local_rotary_k.heads = kv_heads();
  a->q_norm = a->norm;
  a->k_norm = a->norm;
  if (s.qk_norm() == ModelSpec::QK_NORM_PER_HEAD) {
    a->q_norm.rows = tokens() * heads();
    a->q_norm.dim = s.head_dim();
    a->k_norm.rows = tokens() * kv_heads();
    a->k_norm.dim = s.head_dim();
  } else {
    a->q_norm.dim = heads() * s.head_dim();
    a->k_norm.dim = kv_heads() * s.head_dim();
  }
  a->attention.batch = batch_;
  a->attention.seq = seq_;
  a->attention.num_heads = heads();
  a->attention.num_kv_heads = kv_heads();
  a->attention.head_dim = s.head_dim();
  // A window no shorter than the sequence is full causal attention.
  a->attention.window = s.sliding_window() > 0 && s.sliding_window() < seq_
                            ? s.sliding_window()
                            : 0;
  if (s.query_pre_attn_scalar() > 0) {
    a->attention.scale =
        static_cast<float>(std::pow(s.query_pre_attn_scalar(), -0.5));
  }
  a->attention.softcap = static_cast<float>(s.attn_logit_softcapping());
  a->swiglu.n = tokens() * ffn();
  a->swiglu.activation = s.mlp_activation() == ModelSpec::GELU_TANH
                             ? k::GluActivation::kGeluTanh
                             : k::GluActivation::kSilu;
  a->cross_entropy.num_tokens = tokens();
  a->cross_entropy.vocab_size = s.vocab_size();
  a->cross_entropy.logit_softcap =
      static_cast<float>(s.final_logit_softcapping());
  args_ = std::move(a);
}

// One pass over the modules: each step enqueues one module's kernels on
// `stream`, with the parameters (and gradient buffers) `pp` hands out, in
// the order both trainers rely on.
class Transformer::Steps {
 public:
  Steps(Transformer& m, Stream& stream, ParamProvider& pp)
      : m_(m),
        s_(m.spec_),
        args_(*m.args_),
        sv_(*m.saved_),
        stream_(stream),
        pp_(pp),
        t_(m.tokens()),
        h_(s_.hidden_size()),
        f_(m.ffn()),
        q_(m.heads() * s_.head_dim()),
        kv_(m.kv_heads() * s_.head_dim()),
        head_(static_cast<int>(s_.num_layers()) + 1),
        norm_(static_cast<int>(m.params_.size()) -
              (s_.tie_word_embeddings() ? 1 : 2)),
        lm_(s_.tie_word_embeddings() ? 0 : norm_ + 1) {}

  absl::Status EmbeddingForward(const BufferSlice& tokens);
  // pass: kForward, or kRecompute (in backward, for a checkpointed layer).
  absl::Status LayerForward(int64_t l, Pass pass);
  absl::Status HeadForward(const BufferSlice& targets, const TensorRef& loss);

  // Writes `dres`, the gradient of the last residual stream.
  absl::Status HeadBackward(const TensorRef& dres);
  // From `dres`, the gradient of res[l+1], to `dnext`, that of res[l].
  absl::Status LayerBackward(int64_t l, const TensorRef& dres,
                             const TensorRef& dnext);
  absl::Status EmbeddingBackward(const TensorRef& dres);

 private:
  // The chunked LM head (checkpointing.lm_head_chunk_tokens): rows
  // [first, first + rows) of the tokens.
  struct Chunk {
    int64_t first, rows;
  };
  std::vector<Chunk> Chunks() const;
  // The model's cross-entropy args with this pass's scale and divisor.
  k::CrossEntropyArgs LossArgs() const;
  k::CrossEntropyArgs ChunkArgs(const Chunk& c) const;
  // The chunk's logits, into the start of sv_.logits; returns them.
  absl::StatusOr<TensorRef> ChunkLogits(Ops& o, const Chunk& c,
                                        absl::string_view what);
  absl::Status ChunkedLoss(Ops& o, const BufferSlice& targets,
                           const TensorRef& loss);
  absl::Status ChunkedHeadBackward(Ops& o, const TensorRef& g_lm);
  absl::Status HeadBackwardTail(Ops& o, const TensorRef& dres);

  absl::Status AttentionForward(int64_t l, Ops& o);
  // write_output false: stops short of res[l+1].
  absl::Status MlpForward(int64_t l, Ops& o, bool write_output);
  // Leave the gradient of mid (the residual between attention and MLP) in
  // sv_.dmid.
  absl::Status MlpBackward(int64_t l, Ops& o, const TensorRef& dres);
  absl::Status AttentionBackward(int64_t l, Ops& o);
  absl::Status QkvBackward(int64_t l, Ops& o, const TensorRef& dnext);

  ops::RmsNormForward NormForward(const TensorRef& x, const TensorRef& weight,
                                  const TensorRef& y,
                                  const TensorRef& rstd) const {
    return NormForward(args_.norm, x, weight, y, rstd);
  }
  static ops::RmsNormForward NormForward(const k::RmsNormArgs& args,
                                         const TensorRef& x,
                                         const TensorRef& weight,
                                         const TensorRef& y,
                                         const TensorRef& rstd) {
    ops::RmsNormForward n;
    n.args = args;
    n.x = x;
    n.weight = weight;
    n.y = y;
    n.rstd = rstd;
    return n;
  }
  // Zeroes the weight's gradient, then enqueues the norm's backward.
  absl::Status NormBackward(Ops& o, int param, const TensorRef& x,
                            const TensorRef& rstd, const TensorRef& dy,
                            const TensorRef& dx, absl::string_view what) {
    return NormBackward(o, args_.norm, param, x, rstd, dy, dx, what);
  }
  absl::Status NormBackward(Ops& o, const k::RmsNormArgs& args, int param,
                            const TensorRef& x, const TensorRef& rstd,
                            const TensorRef& dy, const TensorRef& dx,
                            absl::string_view what);
  // q and k, projected (into q_raw and k_raw with q/k norms), normalized
  // where the model does, before RoPE.
  absl::Status QkvForward(int64_t l, Ops& o, const TensorRef& in);
  // The gradients of q and k through their norms, where the model has them,
  // into dq_raw and dk_raw (DqProj and DkProj name where they are).
  absl::Status QkNormBackward(int64_t l, Ops& o);
  // The gradients of q and k at the projections' outputs.
  const TensorRef& DqProj() const {
    return HasQkNorm(s_) ? sv_.dq_raw : sv_.dq;
  }
  const TensorRef& DkProj() const {
    return HasQkNorm(s_) ? sv_.dk_raw : sv_.dk;
  }
  // The label of the norm before the MLP: transformers' name for it.
  std::string PreMlpNormName(absl::string_view pass) const {
    return absl::StrCat(
        Sandwich(s_) ? "pre_feedforward_layernorm" : "post_attention_layernorm",
        pass);
  }
  // x *= sqrt(hidden_size) rounded to the model's dtype, in place (Gemma's
  // embedding scale; its gradient is the same product).
  ops::Scale EmbeddingScale(const TensorRef& x) const {
    ops::Scale op;
    op.args.n = x.elements();
    op.args.alpha = EmbeddingScaleOf(s_, m_.dtype_);
    op.x = x;
    return op;
  }
  // Layer l's rotation of q and of k: local_rotary_* on windowed layers
  // (the same as rotary_* unless local_rope_theta).
  const k::RotaryArgs& RotaryQ(int64_t l) const {
    return m_.SlidingLayer(l) ? args_.local_rotary_q : args_.rotary_q;
  }
  const k::RotaryArgs& RotaryK(int64_t l) const {
    return m_.SlidingLayer(l) ? args_.local_rotary_k : args_.rotary_k;
  }

  Transformer& m_;
  const ModelSpec& s_;
  const OpArgs& args_;
  Saved& sv_;
  Stream& stream_;
  ParamProvider& pp_;
  const int64_t t_, h_, f_, q_, kv_;  // tokens and widths
  const int head_, norm_, lm_;        // the head module and its parameters
};

absl::Status Transformer::Steps::NormBackward(
    Ops& o, const k::RmsNormArgs& args, int param, const TensorRef& x,
    const TensorRef& rstd, const TensorRef& dy, const TensorRef& dx,
    absl::string_view what) {
  ZR_ASSIGN_OR_RETURN(TensorRef g, pp_.Grad(param));
  ZR_RETURN_IF_ERROR(o.Zero(g, absl::StrCat(what, " zero")));
  ops::RmsNormBackward n;
  n.args = args;
  n.x = x;
  n.weight = pp_.Param(param);
  n.rstd = rstd;
  n.dy = dy;
  n.dx = dx;
  n.d_weight = g;
  return o.Run(n, what);
}

// Forward -------------------------------------------------------------------

absl::Status Transformer::Steps::EmbeddingForward(const BufferSlice& tokens) {
  Ops o(stream_, "embedding fwd");
  ZR_RETURN_IF_ERROR(pp_.BeginModule(0, Pass::kForward));
  ops::EmbeddingForward op;
  op.args = args_.embedding;
  op.tokens = tokens;
  op.table = pp_.Param(0);
  op.out = sv_.res[0];
  ZR_RETURN_IF_ERROR(o.Run(op, ""));
  if (s_.scale_embeddings()) {
    ZR_RETURN_IF_ERROR(o.Run(EmbeddingScale(sv_.res[0]), " scale"));
  }
  return pp_.EndModule(0, Pass::kForward);
}

absl::Status Transformer::Steps::LayerForward(int64_t l, Pass pass) {
  const int module = static_cast<int>(l) + 1;
  Ops o(stream_,
        absl::StrCat("L", l, pass == Pass::kRecompute ? " recompute " : " "));
  ZR_RETURN_IF_ERROR(pp_.BeginModule(module, pass));
  // mlp_only recomputes from mid, kept with attention's activations.
  if (pass == Pass::kForward || !m_.checkpointing_.mlp_only) {
    ZR_RETURN_IF_ERROR(AttentionForward(l, o));
  }
  // A recompute's output, res[l+1], is read by no later step; where it is
  // another kept input's slot, not writing it keeps that input intact.
  const bool write_output = pass == Pass::kForward || m_.host_ == nullptr ||
                            m_.host_->Ordinal(l + 1) < 0;
  ZR_RETURN_IF_ERROR(MlpForward(l, o, write_output));
  return pp_.EndModule(module, pass);
}

// q, k and v from `in`: projections (+ bias), then the q/k norms where the
// model has them, whose outputs RoPE rotates in place.
absl::Status Transformer::Steps::QkvForward(int64_t l, Ops& o,
                                            const TensorRef& in) {
  const LayerIds id = IdsOf(s_, l);
  Saved::LayerSlots& a = sv_.layers[l];
  const bool qk_norm = HasQkNorm(s_);
  const TensorRef& q = qk_norm ? a.q_raw : a.q;
  const TensorRef& k = qk_norm ? a.k_raw : a.k;
  ZR_RETURN_IF_ERROR(o.Matmul(k::LinearForwardArgs(t_, h_, q_), in,
                              pp_.Param(id.wq), q, "q_proj fwd"));
  ZR_RETURN_IF_ERROR(o.Matmul(k::LinearForwardArgs(t_, h_, kv_), in,
                              pp_.Param(id.wk), k, "k_proj fwd"));
  ZR_RETURN_IF_ERROR(o.Matmul(k::LinearForwardArgs(t_, h_, kv_), in,
                              pp_.Param(id.wv), a.v, "v_proj fwd"));
  if (s_.qkv_bias()) {
    ZR_RETURN_IF_ERROR(o.BiasAdd(t_, pp_.Param(id.bq), q, "q bias fwd"));
    ZR_RETURN_IF_ERROR(o.BiasAdd(t_, pp_.Param(id.bk), k, "k bias fwd"));
    ZR_RETURN_IF_ERROR(o.BiasAdd(t_, pp_.Param(id.bv), a.v, "v bias fwd"));
  }
  if (!qk_norm) return absl::OkStatus();
  ZR_RETURN_IF_ERROR(
      o.Run(NormForward(args_.q_norm, a.q_raw, pp_.Param(id.qn), a.q, a.rstd_q),
            "q_norm fwd"));
  return o.Run(
      NormForward(args_.k_norm, a.k_raw, pp_.Param(id.kn), a.k, a.rstd_k),
      "k_norm fwd");
}

// mid = res[l] + o_proj(attn(rope(q), rope(k), v)), q/k/v = proj(h1)
// (+ bias), h1 = norm(res[l]); with NORM_POST, mid = res[l] +
// norm(o_proj(attn(...))) with q/k/v = proj(res[l]), o_proj's output in h1;
// with NORM_SANDWICH, mid = res[l] + norm(o_proj(attn(...))) with q/k/v =
// proj(h1), o_proj's output in attn_out.
absl::Status Transformer::Steps::AttentionForward(int64_t l, Ops& o) {
  const LayerIds id = IdsOf(s_, l);
  Saved::LayerSlots& a = sv_.layers[l];
  const bool post = PostNorm(s_);
  const bool sandwich = Sandwich(s_);
  if (!post) {
    ZR_RETURN_IF_ERROR(
        o.Run(NormForward(sv_.res[l], pp_.Param(id.ln1), a.h1, a.rstd1),
              "input_layernorm fwd"));
  }
  ZR_RETURN_IF_ERROR(QkvForward(l, o, post ? sv_.res[l] : a.h1));
  ops::RotaryForward rq;
  rq.args = RotaryQ(l);
  rq.x = rq.y = a.q;
  rq.positions = m_.positions_;
  ZR_RETURN_IF_ERROR(o.Run(rq, "rotary q fwd"));
  ops::RotaryForward rk;
  rk.args = RotaryK(l);
  rk.x = rk.y = a.k;
  rk.positions = m_.positions_;
  ZR_RETURN_IF_ERROR(o.Run(rk, "rotary k fwd"));
  ops::AttentionForward at;
  at.args = m_.LayerAttention(l);
  at.positions = m_.positions_;
  at.q = a.q;
  at.k = a.k;
  at.v = a.v;
  at.out = a.att;
  at.lse = a.lse;
  ZR_RETURN_IF_ERROR(o.Run(at, "attention fwd"));
  const TensorRef& out = post ? a.h1 : sandwich ? a.attn_out : sv_.tmp;
  ZR_RETURN_IF_ERROR(o.Matmul(k::LinearForwardArgs(t_, q_, h_), a.att,
                              pp_.Param(id.wo), out, "o_proj fwd"));
  ZR_RETURN_IF_ERROR(
      m_.AllReduceTp(stream_, out, absl::StrCat("L", l, " tp attention out")));
  if (post) {
    ZR_RETURN_IF_ERROR(
        o.Run(NormForward(a.h1, pp_.Param(id.ln1), sv_.tmp, a.rstd1),
              "post_attention_layernorm fwd"));
  }
  if (sandwich) {
    ZR_RETURN_IF_ERROR(o.Run(
        NormForward(a.attn_out, pp_.Param(id.ln1p), sv_.tmp, a.rstd_attn_out),
        "post_attention_layernorm fwd"));
  }
  return o.Add(sv_.res[l], sv_.tmp, a.mid, "residual 1 fwd");
}

// res[l+1] = mid + down(swiglu(gate(h2), up(h2))), h2 = norm(mid); with
// NORM_POST, res[l+1] = mid + norm(down(swiglu(gate(mid), up(mid)))), the
// down projection's output in h2; with NORM_SANDWICH, res[l+1] = mid +
// norm(down(swiglu(gate(h2), up(h2)))), the down projection's output in
// mlp_out. (swiglu: the model's gated activation.)
absl::Status Transformer::Steps::MlpForward(int64_t l, Ops& o,
                                            bool write_output) {
  const LayerIds id = IdsOf(s_, l);
  Saved::LayerSlots& a = sv_.layers[l];
  const bool post = PostNorm(s_);
  const bool sandwich = Sandwich(s_);
  if (!post) {
    ZR_RETURN_IF_ERROR(
        o.Run(NormForward(a.mid, pp_.Param(id.ln2), a.h2, a.rstd2),
              PreMlpNormName(" fwd")));
  }
  const TensorRef& in = post ? a.mid : a.h2;
  ZR_RETURN_IF_ERROR(o.Matmul(k::LinearForwardArgs(t_, h_, f_), in,
                              pp_.Param(id.wg), a.gate, "gate_proj fwd"));
  ZR_RETURN_IF_ERROR(o.Matmul(k::LinearForwardArgs(t_, h_, f_), in,
                              pp_.Param(id.wu), a.up, "up_proj fwd"));
  ops::SwigluForward sw;
  sw.args = args_.swiglu;
  sw.gate = a.gate;
  sw.up = a.up;
  sw.h = a.m;
  ZR_RETURN_IF_ERROR(o.Run(sw, "swiglu fwd"));
  const TensorRef& out = post ? a.h2 : sandwich ? a.mlp_out : sv_.tmp;
  ZR_RETURN_IF_ERROR(o.Matmul(k::LinearForwardArgs(t_, f_, h_), a.m,
                              pp_.Param(id.wd), out, "down_proj fwd"));
  ZR_RETURN_IF_ERROR(
      m_.AllReduceTp(stream_, out, absl::StrCat("L", l, " tp mlp out")));
  // A recompute needs the norm's statistics even when it stops short.
  if (post) {
    ZR_RETURN_IF_ERROR(
        o.Run(NormForward(a.h2, pp_.Param(id.ln2), sv_.tmp, a.rstd2),
              "post_feedforward_layernorm fwd"));
  }
  if (sandwich) {
    ZR_RETURN_IF_ERROR(o.Run(
        NormForward(a.mlp_out, pp_.Param(id.ln2p), sv_.tmp, a.rstd_mlp_out),
        "post_feedforward_layernorm fwd"));
  }
  if (!write_output) return absl::OkStatus();
  return o.Add(a.mid, sv_.tmp, sv_.res[l + 1], "residual 2 fwd");
}

// Final norm, LM head, loss.
absl::Status Transformer::Steps::HeadForward(const BufferSlice& targets,
                                             const TensorRef& loss) {
  Ops o(stream_, "head ");
  ZR_RETURN_IF_ERROR(pp_.BeginModule(head_, Pass::kForward));
  ZR_RETURN_IF_ERROR(o.Run(NormForward(sv_.res[s_.num_layers()],
                                       pp_.Param(norm_), sv_.hf, sv_.rstdf),
                           "norm fwd"));
  if (m_.HeadChunkRows() > 0) {
    ZR_RETURN_IF_ERROR(ChunkedLoss(o, targets, loss));
    return pp_.EndModule(head_, Pass::kForward);
  }
  ZR_RETURN_IF_ERROR(o.Matmul(k::LinearForwardArgs(t_, h_, s_.vocab_size()),
                              sv_.hf, pp_.Param(lm_), sv_.logits,
                              "lm_head fwd"));
  ops::CrossEntropyForward ce;
  ce.args = LossArgs();
  ce.logits = sv_.logits;
  ce.targets = targets;
  ce.lse = sv_.lse_ce;
  ce.loss = loss;
  ZR_RETURN_IF_ERROR(o.Run(ce, "cross_entropy fwd"));
  return pp_.EndModule(head_, Pass::kForward);
}

// Backward ------------------------------------------------------------------

absl::Status Transformer::Steps::HeadBackward(const TensorRef& dres) {
  const int64_t v = s_.vocab_size();
  Ops o(stream_, "head ");
  ZR_RETURN_IF_ERROR(pp_.BeginModule(head_, Pass::kBackward));
  if (m_.HeadChunkRows() > 0) {
    ZR_ASSIGN_OR_RETURN(TensorRef g_lm, pp_.Grad(lm_));
    ZR_RETURN_IF_ERROR(ChunkedHeadBackward(o, g_lm));
    return HeadBackwardTail(o, dres);
  }
  ops::CrossEntropyBackward ce;
  ce.args = LossArgs();
  ce.logits = sv_.logits;
  ce.targets = m_.targets_;
  ce.lse = sv_.lse_ce;
  ce.d_logits = sv_.logits;  // in place
  ZR_RETURN_IF_ERROR(o.Run(ce, "cross_entropy bwd"));
  // With tied embeddings this is the first write of the embedding's
  // gradient; the embedding module accumulates into it at the end.
  ZR_ASSIGN_OR_RETURN(TensorRef g_lm, pp_.Grad(lm_));
  ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardWeightArgs(t_, h_, v, 0.0f),
                              sv_.logits, sv_.hf, g_lm, "lm_head bwd weight"));
  ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardInputArgs(t_, h_, v), sv_.logits,
                              pp_.Param(lm_), sv_.dh, "lm_head bwd input"));
  return HeadBackwardTail(o, dres);
}

// From the gradient of hf (sv_.dh) through the final norm to `dres`.
absl::Status Transformer::Steps::HeadBackwardTail(Ops& o,
                                                  const TensorRef& dres) {
  ZR_RETURN_IF_ERROR(NormBackward(o, norm_, sv_.res[s_.num_layers()], sv_.rstdf,
                                  sv_.dh, dres, "norm bwd"));
  if (s_.tie_word_embeddings()) {
    ZR_RETURN_IF_ERROR(pp_.GradsReady({norm_}));
  } else {
    ZR_RETURN_IF_ERROR(pp_.GradsReady({norm_, lm_}));
  }
  return pp_.EndModule(head_, Pass::kBackward);
}

// The chunked head ------------------------------------------------------------

std::vector<Transformer::Steps::Chunk> Transformer::Steps::Chunks() const {
  std::vector<Chunk> chunks;
  const int64_t rows = m_.HeadChunkRows();
  for (int64_t first = 0; first < t_; first += rows) {
    chunks.push_back({first, std::min(rows, t_ - first)});
  }
  return chunks;
}

k::CrossEntropyArgs Transformer::Steps::LossArgs() const {
  k::CrossEntropyArgs a = args_.cross_entropy;
  a.grad_scale = m_.grad_scale_;
  a.loss_divisor = m_.loss_divisor_;
  return a;
}

k::CrossEntropyArgs Transformer::Steps::ChunkArgs(const Chunk& c) const {
  k::CrossEntropyArgs a = LossArgs();
  a.num_tokens = c.rows;
  a.batch_tokens = t_;
  a.row_offset = c.first;
  return a;
}

absl::StatusOr<TensorRef> Transformer::Steps::ChunkLogits(
    Ops& o, const Chunk& c, absl::string_view what) {
  const TensorRef logits = sv_.logits.Elements(0, c.rows * s_.vocab_size());
  ZR_RETURN_IF_ERROR(o.Matmul(k::LinearForwardArgs(c.rows, h_, s_.vocab_size()),
                              sv_.hf.Elements(c.first * h_, c.rows * h_),
                              pp_.Param(lm_), logits, what));
  return logits;
}

// Each chunk's logits, log-sum-exp and loss terms; then the mean loss over
// all rows, summed in row order as the whole head sums it.
absl::Status Transformer::Steps::ChunkedLoss(Ops& o, const BufferSlice& targets,
                                             const TensorRef& loss) {
  const std::vector<Chunk> chunks = Chunks();
  for (size_t i = 0; i < chunks.size(); ++i) {
    const Chunk& c = chunks[i];
    ops::CrossEntropyForward ce;
    ZR_ASSIGN_OR_RETURN(
        ce.logits, ChunkLogits(o, c, absl::StrCat("lm_head fwd chunk ", i)));
    ce.args = ChunkArgs(c);
    ce.targets = targets;
    ce.lse = sv_.lse_ce.Elements(c.first, c.rows);
    ce.row_loss = sv_.row_loss.Elements(2 * c.first, 2 * c.rows).slice;
    ZR_RETURN_IF_ERROR(o.Run(ce, absl::StrCat("cross_entropy fwd chunk ", i)));
  }
  ops::CrossEntropyLoss l;
  l.args = LossArgs();
  l.targets = targets;
  l.row_loss = sv_.row_loss.slice;
  l.loss = loss;
  return o.Run(l, "cross_entropy loss");
}

// Per chunk: its logits again, their gradient in place (counting the whole
// batch's targets), the weight gradient summed in fp32 and the rows of dh.
// With tied embeddings the gradient's write here is still its first.
absl::Status Transformer::Steps::ChunkedHeadBackward(Ops& o,
                                                     const TensorRef& g_lm) {
  const int64_t v = s_.vocab_size();
  const bool direct = g_lm.dtype == DType::kF32;
  ZR_CHECK(direct || sv_.head_grad.elements() == g_lm.elements())
      << "a " << k::DTypeName(g_lm.dtype)
      << " LM head gradient needs the fp32 sum the arena holds for "
      << k::DTypeName(m_.dtype_) << " models";
  const TensorRef sum = direct ? g_lm : sv_.head_grad;
  const std::vector<Chunk> chunks = Chunks();
  for (size_t i = 0; i < chunks.size(); ++i) {
    const Chunk& c = chunks[i];
    ZR_ASSIGN_OR_RETURN(
        const TensorRef logits,
        ChunkLogits(o, c, absl::StrCat("lm_head recompute chunk ", i)));
    const TensorRef hf = sv_.hf.Elements(c.first * h_, c.rows * h_);
    ops::CrossEntropyBackward ce;
    ce.args = ChunkArgs(c);
    ce.logits = logits;
    ce.targets = m_.targets_;
    ce.lse = sv_.lse_ce.Elements(c.first, c.rows);
    ce.d_logits = logits;  // in place
    ZR_RETURN_IF_ERROR(o.Run(ce, absl::StrCat("cross_entropy bwd chunk ", i)));
    ZR_RETURN_IF_ERROR(o.Matmul(
        k::LinearBackwardWeightArgs(c.rows, h_, v, i == 0 ? 0.0f : 1.0f),
        logits, hf, sum, absl::StrCat("lm_head bwd weight chunk ", i)));
    ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardInputArgs(c.rows, h_, v),
                                logits, pp_.Param(lm_),
                                sv_.dh.Elements(c.first * h_, c.rows * h_),
                                absl::StrCat("lm_head bwd input chunk ", i)));
  }
  if (direct) return absl::OkStatus();
  return o.Run(ops::Cast::Of(sum, g_lm), "lm_head bwd weight cast");
}

absl::Status Transformer::Steps::LayerBackward(int64_t l, const TensorRef& dres,
                                               const TensorRef& dnext) {
  const int module = static_cast<int>(l) + 1;
  const LayerIds id = IdsOf(s_, l);
  Ops o(stream_, absl::StrCat("L", l, " "));
  ZR_RETURN_IF_ERROR(pp_.BeginModule(module, Pass::kBackward));
  ZR_RETURN_IF_ERROR(MlpBackward(l, o, dres));
  ZR_RETURN_IF_ERROR(AttentionBackward(l, o));
  ZR_RETURN_IF_ERROR(QkvBackward(l, o, dnext));
  std::vector<int> ready = {id.ln1, id.wq, id.wk, id.wv, id.wo,
                            id.ln2, id.wg, id.wu, id.wd};
  if (s_.qkv_bias()) ready.insert(ready.end(), {id.bq, id.bk, id.bv});
  if (HasQkNorm(s_)) ready.insert(ready.end(), {id.qn, id.kn});
  if (Sandwich(s_)) ready.insert(ready.end(), {id.ln1p, id.ln2p});
  std::sort(ready.begin(), ready.end());
  ZR_RETURN_IF_ERROR(pp_.GradsReady(ready));
  return pp_.EndModule(module, Pass::kBackward);
}

// The MLP's backward (see MlpForward) and the second residual. With
// NORM_POST and NORM_SANDWICH, dmid first holds the gradient of down_proj's
// output.
absl::Status Transformer::Steps::MlpBackward(int64_t l, Ops& o,
                                             const TensorRef& dres) {
  const LayerIds id = IdsOf(s_, l);
  Saved::LayerSlots& a = sv_.layers[l];
  const bool post = PostNorm(s_);
  const bool sandwich = Sandwich(s_);
  if (post) {
    ZR_RETURN_IF_ERROR(NormBackward(o, id.ln2, a.h2, a.rstd2, dres, sv_.dmid,
                                    "post_feedforward_layernorm bwd"));
  }
  if (sandwich) {
    ZR_RETURN_IF_ERROR(NormBackward(o, id.ln2p, a.mlp_out, a.rstd_mlp_out, dres,
                                    sv_.dmid,
                                    "post_feedforward_layernorm bwd"));
  }
  const TensorRef& d_out = post || sandwich ? sv_.dmid : dres;
  const TensorRef& in = post ? a.mid : a.h2;
  ZR_ASSIGN_OR_RETURN(TensorRef g_wd, pp_.Grad(id.wd));
  ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardInputArgs(t_, f_, h_), d_out,
                              pp_.Param(id.wd), sv_.dm, "down_proj bwd input"));
  ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardWeightArgs(t_, f_, h_, 0.0f),
                              d_out, a.m, g_wd, "down_proj bwd weight"));
  ops::SwigluBackward sw;
  sw.args = args_.swiglu;
  sw.gate = a.gate;
  sw.up = a.up;
  sw.dh = sv_.dm;
  sw.d_gate = sv_.dgate;
  sw.d_up = sv_.dup;
  ZR_RETURN_IF_ERROR(o.Run(sw, "swiglu bwd"));
  // d_out (dmid with NORM_SANDWICH) is read for the last time above.
  ZR_ASSIGN_OR_RETURN(TensorRef g_wg, pp_.Grad(id.wg));
  ZR_ASSIGN_OR_RETURN(TensorRef g_wu, pp_.Grad(id.wu));
  ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardWeightArgs(t_, h_, f_, 0.0f),
                              sv_.dgate, in, g_wg, "gate_proj bwd weight"));
  ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardWeightArgs(t_, h_, f_, 0.0f),
                              sv_.dup, in, g_wu, "up_proj bwd weight"));
  ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardInputArgs(t_, h_, f_, 0.0f),
                              sv_.dgate, pp_.Param(id.wg), sv_.dh,
                              "gate_proj bwd input"));
  ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardInputArgs(t_, h_, f_, 1.0f),
                              sv_.dup, pp_.Param(id.wu), sv_.dh,
                              "up_proj bwd input"));
  ZR_RETURN_IF_ERROR(m_.AllReduceTp(
      stream_, sv_.dh, absl::StrCat("L", l, " tp mlp input grad")));
  if (post) return o.Add(sv_.dh, dres, sv_.dmid, "residual 2 bwd");
  ZR_RETURN_IF_ERROR(NormBackward(o, id.ln2, a.mid, a.rstd2, sv_.dh, sv_.dmid,
                                  PreMlpNormName(" bwd")));
  return o.Add(sv_.dmid, dres, sv_.dmid, "residual 2 bwd");
}

// From the gradient of mid (sv_.dmid) through o_proj (with NORM_POST or
// NORM_SANDWICH, the norm after it first, its gradient in sv_.dh), attention
// and the rotary embedding to the gradients of q, k and v (sv_.dq, dk, dv), and
// through the q/k norms where the model has them.
absl::Status Transformer::Steps::AttentionBackward(int64_t l, Ops& o) {
  const LayerIds id = IdsOf(s_, l);
  Saved::LayerSlots& a = sv_.layers[l];
  const bool post = PostNorm(s_);
  const bool sandwich = Sandwich(s_);
  if (post) {
    ZR_RETURN_IF_ERROR(NormBackward(o, id.ln1, a.h1, a.rstd1, sv_.dmid, sv_.dh,
                                    "post_attention_layernorm bwd"));
  }
  if (sandwich) {
    ZR_RETURN_IF_ERROR(NormBackward(o, id.ln1p, a.attn_out, a.rstd_attn_out,
                                    sv_.dmid, sv_.dh,
                                    "post_attention_layernorm bwd"));
  }
  const TensorRef& d_out = post || sandwich ? sv_.dh : sv_.dmid;
  ZR_ASSIGN_OR_RETURN(TensorRef g_wo, pp_.Grad(id.wo));
  ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardInputArgs(t_, q_, h_), d_out,
                              pp_.Param(id.wo), sv_.datt, "o_proj bwd input"));
  ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardWeightArgs(t_, q_, h_, 0.0f),
                              d_out, a.att, g_wo, "o_proj bwd weight"));
  ops::AttentionBackward ab;
  ab.args = m_.LayerAttention(l);
  ab.positions = m_.positions_;
  ab.q = a.q;
  ab.k = a.k;
  ab.v = a.v;
  ab.out = a.att;
  ab.lse = a.lse;
  ab.d_out = sv_.datt;
  ab.dq = sv_.dq;
  ab.dk = sv_.dk;
  ab.dv = sv_.dv;
  ZR_RETURN_IF_ERROR(o.Run(ab, "attention bwd"));
  ops::RotaryBackward rq;
  rq.args = RotaryQ(l);
  rq.dy = rq.dx = sv_.dq;
  rq.positions = m_.positions_;
  ZR_RETURN_IF_ERROR(o.Run(rq, "rotary q bwd"));
  ops::RotaryBackward rk;
  rk.args = RotaryK(l);
  rk.dy = rk.dx = sv_.dk;
  rk.positions = m_.positions_;
  ZR_RETURN_IF_ERROR(o.Run(rk, "rotary k bwd"));
  return QkNormBackward(l, o);
}

absl::Status Transformer::Steps::QkNormBackward(int64_t l, Ops& o) {
  if (!HasQkNorm(s_)) return absl::OkStatus();
  const LayerIds id = IdsOf(s_, l);
  Saved::LayerSlots& a = sv_.layers[l];
  ZR_RETURN_IF_ERROR(NormBackward(o, args_.q_norm, id.qn, a.q_raw, a.rstd_q,
                                  sv_.dq, sv_.dq_raw, "q_norm bwd"));
  return NormBackward(o, args_.k_norm, id.kn, a.k_raw, a.rstd_k, sv_.dk,
                      sv_.dk_raw, "k_norm bwd");
}

// From the gradients of q, k and v through their projections and the input
// norm (none with NORM_POST) to `dnext`, plus the first residual.
absl::Status Transformer::Steps::QkvBackward(int64_t l, Ops& o,
                                             const TensorRef& dnext) {
  const LayerIds id = IdsOf(s_, l);
  Saved::LayerSlots& a = sv_.layers[l];
  const bool post = PostNorm(s_);
  const TensorRef& dq = DqProj();
  const TensorRef& dk = DkProj();
  const TensorRef& in = post ? sv_.res[l] : a.h1;
  if (s_.qkv_bias()) {
    ZR_ASSIGN_OR_RETURN(TensorRef g_bq, pp_.Grad(id.bq));
    ZR_ASSIGN_OR_RETURN(TensorRef g_bk, pp_.Grad(id.bk));
    ZR_ASSIGN_OR_RETURN(TensorRef g_bv, pp_.Grad(id.bv));
    ZR_RETURN_IF_ERROR(o.BiasBackward(t_, dq, g_bq, "q bias bwd"));
    ZR_RETURN_IF_ERROR(o.BiasBackward(t_, dk, g_bk, "k bias bwd"));
    ZR_RETURN_IF_ERROR(o.BiasBackward(t_, sv_.dv, g_bv, "v bias bwd"));
  }
  ZR_ASSIGN_OR_RETURN(TensorRef g_wq, pp_.Grad(id.wq));
  ZR_ASSIGN_OR_RETURN(TensorRef g_wk, pp_.Grad(id.wk));
  ZR_ASSIGN_OR_RETURN(TensorRef g_wv, pp_.Grad(id.wv));
  ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardWeightArgs(t_, h_, q_, 0.0f), dq,
                              in, g_wq, "q_proj bwd weight"));
  ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardWeightArgs(t_, h_, kv_, 0.0f),
                              dk, in, g_wk, "k_proj bwd weight"));
  ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardWeightArgs(t_, h_, kv_, 0.0f),
                              sv_.dv, in, g_wv, "v_proj bwd weight"));
  ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardInputArgs(t_, h_, q_, 0.0f), dq,
                              pp_.Param(id.wq), sv_.dh, "q_proj bwd input"));
  ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardInputArgs(t_, h_, kv_, 1.0f), dk,
                              pp_.Param(id.wk), sv_.dh, "k_proj bwd input"));
  ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardInputArgs(t_, h_, kv_, 1.0f),
                              sv_.dv, pp_.Param(id.wv), sv_.dh,
                              "v_proj bwd input"));
  ZR_RETURN_IF_ERROR(m_.AllReduceTp(
      stream_, sv_.dh, absl::StrCat("L", l, " tp attention input grad")));
  if (post) return o.Add(sv_.dh, sv_.dmid, dnext, "residual 1 bwd");
  ZR_RETURN_IF_ERROR(NormBackward(o, id.ln1, sv_.res[l], a.rstd1, sv_.dh, dnext,
                                  "input_layernorm bwd"));
  return o.Add(dnext, sv_.dmid, dnext, "residual 1 bwd");
}

absl::Status Transformer::Steps::EmbeddingBackward(const TensorRef& dres) {
  Ops o(stream_, "embedding ");
  ZR_RETURN_IF_ERROR(pp_.BeginModule(0, Pass::kBackward));
  ZR_ASSIGN_OR_RETURN(TensorRef g_emb, pp_.Grad(0));
  if (!s_.tie_word_embeddings()) {
    ZR_RETURN_IF_ERROR(o.Zero(g_emb, "bwd zero"));
  }
  if (s_.scale_embeddings()) {
    ZR_RETURN_IF_ERROR(o.Run(EmbeddingScale(dres), "bwd scale"));
  }
  ops::EmbeddingBackward eb;
  eb.args = args_.embedding;
  eb.tokens = m_.tokens_;
  eb.d_out = dres;
  eb.d_table = g_emb;
  ZR_RETURN_IF_ERROR(o.Run(eb, "bwd"));
  ZR_RETURN_IF_ERROR(pp_.GradsReady({0}));
  return pp_.EndModule(0, Pass::kBackward);
}

// The passes -----------------------------------------------------------------

absl::Status Transformer::Forward(Stream& stream, ParamProvider& pp,
                                  const BufferSlice& tokens,
                                  const BufferSlice& targets,
                                  const TensorRef& loss, float grad_scale,
                                  double loss_divisor,
                                  const BufferSlice& positions) {
  const int64_t t = this->tokens();
  if (tokens.bytes() < t * 4 || targets.bytes() < t * 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("forward needs ", t, " int32 tokens and targets, got ",
                     tokens.bytes() / 4, " and ", targets.bytes() / 4));
  }
  if (!(loss_divisor >= 0 && std::isfinite(loss_divisor))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "loss divisor ", loss_divisor, " is not a finite value >= 0"));
  }
  if (positions.bytes() > 0 && positions.bytes() < t * 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "forward needs ", t, " int32 positions, got ", positions.bytes() / 4));
  }
  tokens_ = tokens;
  targets_ = targets;
  positions_ = positions;
  grad_scale_ = grad_scale;
  loss_divisor_ = loss_divisor;
  Steps steps(*this, stream, pp);
  // Kept input i (with to_host) is written by the step before its layer.
  const auto kept = [&](int64_t l) { return host_ ? host_->Ordinal(l) : -1; };
  ZR_RETURN_IF_ERROR(steps.EmbeddingForward(tokens));
  if (kept(0) >= 0) ZR_RETURN_IF_ERROR(host_->Offload(stream, kept(0)));
  for (int64_t l = 0; l < spec_.num_layers(); ++l) {
    const int next = kept(l + 1);
    if (next >= 0) ZR_RETURN_IF_ERROR(host_->BeforeWrite(stream, next));
    ZR_RETURN_IF_ERROR(steps.LayerForward(l, Pass::kForward));
    if (next >= 0) ZR_RETURN_IF_ERROR(host_->Offload(stream, next));
  }
  ZR_RETURN_IF_ERROR(steps.HeadForward(targets, loss));
  forward_done_ = true;
  return absl::OkStatus();
}

absl::Status Transformer::Backward(Stream& stream, ParamProvider& pp) {
  if (!forward_done_) {
    return absl::FailedPreconditionError("Backward without a Forward");
  }
  forward_done_ = false;
  Steps steps(*this, stream, pp);
  TensorRef dres = saved_->dres_a;   // gradient of the residual stream
  TensorRef dnext = saved_->dres_b;  // the same one layer down
  // With to_host, the last two kept inputs come back first; each later one
  // once the backward that read its slot is enqueued.
  const int kept = host_ ? host_->count() : 0;
  for (int i = kept - 1; i >= std::max(0, kept - 2); --i) {
    ZR_RETURN_IF_ERROR(host_->Restore(stream, i));
  }
  ZR_RETURN_IF_ERROR(steps.HeadBackward(dres));
  for (int64_t l = spec_.num_layers() - 1; l >= 0; --l) {
    const int i = host_ ? host_->Ordinal(l) : -1;
    if (i >= 0) ZR_RETURN_IF_ERROR(host_->BeforeRead(stream, i));
    if (checkpointing_.Recomputes(l)) {
      // Rewrites res[l+1] with the same bits; no later step reads it.
      ZR_RETURN_IF_ERROR(steps.LayerForward(l, Pass::kRecompute));
    }
    ZR_RETURN_IF_ERROR(steps.LayerBackward(l, dres, dnext));
    if (i >= 2) ZR_RETURN_IF_ERROR(host_->Restore(stream, i - 2));
    std::swap(dres, dnext);
  }
  return steps.EmbeddingBackward(dres);
}

absl::Status Transformer::AllReduceTp(Stream& stream, const TensorRef& x,
                                      absl::string_view label) {
  if (tp_.size == 1) return absl::OkStatus();
  return tp_.comm->AllReduce(stream, x, x, runtime::ReduceOp::kSum, label);
}

bool Transformer::SlidingLayer(int64_t layer) const {
  const auto& sliding = spec_.sliding_layers();
  return spec_.sliding_window() > 0 &&
         (sliding.empty() || sliding.Get(static_cast<int>(layer)));
}

kernels::AttentionArgs Transformer::LayerAttention(int64_t layer) const {
  kernels::AttentionArgs a = args_->attention;
  if (!SlidingLayer(layer)) a.window = 0;
  return a;
}

double Transformer::ForwardFlops() const {
  const ModelSpec& s = spec_;
  const double t = static_cast<double>(tokens());
  const double h = s.hidden_size(), f = ffn();
  const double q = heads() * s.head_dim();
  const double kv = kv_heads() * s.head_dim();
  const double per_layer_gemm =
      2 * t * (h * q + 2 * h * kv + q * h + 3 * h * f);
  const double attention = 2.0 * batch_ * heads() * seq_ * seq_ *
                           s.head_dim();  // causal: half of 4·B·H·S²·D
  return s.num_layers() * (per_layer_gemm + attention) +
         2 * t * h * s.vocab_size();
}

double Transformer::BackwardFlops() const {
  // Two GEMMs per forward GEMM; attention backward is 2.5x its forward.
  const ModelSpec& s = spec_;
  const double attention =
      2.0 * batch_ * heads() * seq_ * seq_ * s.head_dim() * s.num_layers();
  return 2 * (ForwardFlops() - attention) + 2.5 * attention;
}

}  // namespace model
}  // namespace zero3
