// Copyright 2026 The zero3 Authors.

#include "core/model/transformer.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/kernels/op_args.h"
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

 private:
  int64_t size_ = 0;
};

}  // namespace

// Where each activation lives in the arena.
struct Transformer::Saved {
  struct LayerSlots {
    TensorRef h1, rstd1, q, k, v, att, lse, mid, h2, rstd2, gate, up, m;
  };
  std::vector<TensorRef> res;  // [L+1] residual stream, res[0] = embeddings
  std::vector<LayerSlots> layers;
  TensorRef hf, rstdf, logits, lse_ce;
  // Scratch, not kept between ops of different layers.
  TensorRef tmp, dres_a, dres_b, dmid, dh, datt, dq, dk, dv, dm, dgate, dup;
};

namespace {

// Parameter ids of layer l, recomputed from the construction order below.
struct LayerIds {
  int ln1, wq, bq, wk, bk, wv, bv, wo, ln2, wg, wu, wd;
};

LayerIds IdsOf(const ModelSpec& s, int64_t l) {
  const int per_layer = s.qkv_bias() ? 12 : 9;
  int id = 1 + static_cast<int>(l) * per_layer;
  LayerIds ids;
  ids.ln1 = id++;
  ids.wq = id++;
  ids.bq = s.qkv_bias() ? id++ : -1;
  ids.wk = id++;
  ids.bk = s.qkv_bias() ? id++ : -1;
  ids.wv = id++;
  ids.bv = s.qkv_bias() ? id++ : -1;
  ids.wo = id++;
  ids.ln2 = id++;
  ids.wg = id++;
  ids.wu = id++;
  ids.wd = id++;
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
                         int64_t seq, runtime::Runtime& rt, TensorParallel tp)
    : spec_(spec), dtype_(dtype), batch_(batch), seq_(seq), rt_(rt), tp_(tp) {}

Transformer::~Transformer() = default;

absl::StatusOr<std::unique_ptr<Transformer>> Transformer::Create(
    const ModelSpec& spec, DType dtype, int64_t batch, int64_t seq,
    runtime::Runtime& rt, TensorParallel tp) {
  if (tp.size < 1 || (tp.size > 1 && tp.comm == nullptr)) {
    return absl::InvalidArgumentError(
        "tensor parallelism needs a degree of at least 1 and its group");
  }
  if (spec.num_heads() % tp.size != 0 || spec.num_kv_heads() % tp.size != 0 ||
      spec.intermediate_size() % tp.size != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor-parallel degree ", tp.size, " must divide the heads (",
        spec.num_heads(), "), the kv heads (", spec.num_kv_heads(),
        ") and the MLP width (", spec.intermediate_size(), ") of ",
        spec.name()));
  }
  if (batch <= 0 || seq <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("micro-batch must be at least 1 sequence of 1 token, got ",
                     batch, " x ", seq));
  }
  std::unique_ptr<Transformer> t(
      new Transformer(spec, dtype, batch, seq, rt, tp));
  t->BuildParams();
  ZR_RETURN_IF_ERROR(t->Allocate());
  return t;
}

void Transformer::BuildParams() {
  const ModelSpec& s = spec_;
  const int64_t h = s.hidden_size(), f = ffn();
  const int64_t q = heads() * s.head_dim();
  const int64_t kv = kv_heads() * s.head_dim();
  auto add = [this](std::string name, int64_t rows, int64_t cols, Init init,
                    int module) {
    ParamInfo p;
    p.id = static_cast<int>(params_.size());
    p.name = std::move(name);
    p.rows = rows;
    p.cols = cols;
    p.init = init;
    p.module = module;
    params_.push_back(p);
    modules_[module].params.push_back(p.id);
    return p.id;
  };
  modules_.resize(s.num_layers() + 2);
  modules_[0].name = "embedding";
  add("embed_tokens", s.vocab_size(), h, Init::kNormal, 0);
  for (int64_t l = 0; l < s.num_layers(); ++l) {
    const int m = static_cast<int>(l) + 1;
    modules_[m].name = absl::StrCat("layers.", l);
    const std::string p = absl::StrCat("layers.", l, ".");
    add(p + "input_layernorm", 1, h, Init::kOnes, m);
    add(p + "q_proj.weight", q, h, Init::kNormal, m);
    if (s.qkv_bias()) add(p + "q_proj.bias", 1, q, Init::kZeros, m);
    add(p + "k_proj.weight", kv, h, Init::kNormal, m);
    if (s.qkv_bias()) add(p + "k_proj.bias", 1, kv, Init::kZeros, m);
    add(p + "v_proj.weight", kv, h, Init::kNormal, m);
    if (s.qkv_bias()) add(p + "v_proj.bias", 1, kv, Init::kZeros, m);
    add(p + "o_proj.weight", h, q, Init::kNormal, m);
    add(p + "post_attention_layernorm", 1, h, Init::kOnes, m);
    add(p + "gate_proj.weight", f, h, Init::kNormal, m);
    add(p + "up_proj.weight", f, h, Init::kNormal, m);
    add(p + "down_proj.weight", h, f, Init::kNormal, m);
  }
  const int head = static_cast<int>(s.num_layers()) + 1;
  modules_[head].name = "head";
  if (s.tie_word_embeddings()) modules_[head].params.push_back(0);
  add("norm", 1, h, Init::kOnes, head);
  if (!s.tie_word_embeddings()) {
    add("lm_head", s.vocab_size(), h, Init::kNormal, head);
  }
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
  for (TensorRef& r : sv.res) act(&r, t * h);
  for (Saved::LayerSlots& l : sv.layers) {
    act(&l.h1, t * h);
    f32(&l.rstd1, t);
    act(&l.q, t * q);
    act(&l.k, t * kv);
    act(&l.v, t * kv);
    act(&l.att, t * q);
    f32(&l.lse, lse);
    act(&l.mid, t * h);
    act(&l.h2, t * h);
    f32(&l.rstd2, t);
    act(&l.gate, t * f);
    act(&l.up, t * f);
    act(&l.m, t * f);
  }
  act(&sv.hf, t * h);
  f32(&sv.rstdf, t);
  act(&sv.logits, t * s.vocab_size());
  f32(&sv.lse_ce, t);
  for (TensorRef* r : {&sv.tmp, &sv.dres_a, &sv.dres_b, &sv.dmid, &sv.dh}) {
    act(r, t * h);
  }
  act(&sv.datt, t * q);
  act(&sv.dq, t * q);
  act(&sv.dk, t * kv);
  act(&sv.dv, t * kv);
  for (TensorRef* r : {&sv.dm, &sv.dgate, &sv.dup}) act(r, t * f);

  arena_bytes_ = layout.size();
  ZR_ASSIGN_OR_RETURN(arena_, runtime::AllocateDevice(
                                  rt_.device(), arena_bytes_, "activations"));
  for (const Pending& p : pending) {
    // Arena offsets are 256-byte aligned, so a whole number of elements.
    *p.ref = TensorRef::Of(arena_, p.dtype, p.offset / k::DTypeSize(p.dtype),
                           p.elements);
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

absl::Status Transformer::Forward(Stream& stream, ParamProvider& pp,
                                  const BufferSlice& tokens,
                                  const BufferSlice& targets,
                                  const TensorRef& loss, float grad_scale) {
  const ModelSpec& s = spec_;
  const int64_t t = this->tokens();
  if (tokens.bytes() < t * 4 || targets.bytes() < t * 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("forward needs ", t, " int32 tokens and targets, got ",
                     tokens.bytes() / 4, " and ", targets.bytes() / 4));
  }
  const int64_t h = s.hidden_size(), f = ffn();
  const int64_t q = heads() * s.head_dim();
  const int64_t kv = kv_heads() * s.head_dim();
  Saved& sv = *saved_;
  tokens_ = tokens;
  targets_ = targets;
  grad_scale_ = grad_scale;

  // Embedding.
  {
    Ops o(stream, "embedding fwd");
    ZR_RETURN_IF_ERROR(pp.BeginModule(0, Pass::kForward));
    ops::EmbeddingForward op;
    op.args.num_tokens = t;
    op.args.vocab_size = s.vocab_size();
    op.args.dim = h;
    op.tokens = tokens;
    op.table = pp.Param(0);
    op.out = sv.res[0];
    ZR_RETURN_IF_ERROR(o.Run(op, ""));
    ZR_RETURN_IF_ERROR(pp.EndModule(0, Pass::kForward));
  }

  for (int64_t l = 0; l < s.num_layers(); ++l) {
    const int module = static_cast<int>(l) + 1;
    const LayerIds id = IdsOf(s, l);
    Saved::LayerSlots& a = sv.layers[l];
    Ops o(stream, absl::StrCat("L", l, " "));
    ZR_RETURN_IF_ERROR(pp.BeginModule(module, Pass::kForward));

    ops::RmsNormForward n1;
    n1.args.rows = t;
    n1.args.dim = h;
    n1.args.eps = static_cast<float>(s.rms_norm_eps());
    n1.x = sv.res[l];
    n1.weight = pp.Param(id.ln1);
    n1.y = a.h1;
    n1.rstd = a.rstd1;
    ZR_RETURN_IF_ERROR(o.Run(n1, "input_layernorm fwd"));

    ZR_RETURN_IF_ERROR(o.Matmul(k::LinearForwardArgs(t, h, q), a.h1,
                                pp.Param(id.wq), a.q, "q_proj fwd"));
    ZR_RETURN_IF_ERROR(o.Matmul(k::LinearForwardArgs(t, h, kv), a.h1,
                                pp.Param(id.wk), a.k, "k_proj fwd"));
    ZR_RETURN_IF_ERROR(o.Matmul(k::LinearForwardArgs(t, h, kv), a.h1,
                                pp.Param(id.wv), a.v, "v_proj fwd"));
    if (s.qkv_bias()) {
      ZR_RETURN_IF_ERROR(o.BiasAdd(t, pp.Param(id.bq), a.q, "q bias fwd"));
      ZR_RETURN_IF_ERROR(o.BiasAdd(t, pp.Param(id.bk), a.k, "k bias fwd"));
      ZR_RETURN_IF_ERROR(o.BiasAdd(t, pp.Param(id.bv), a.v, "v bias fwd"));
    }
    ops::RotaryForward rq;
    rq.args.batch = batch_;
    rq.args.seq = seq_;
    rq.args.heads = heads();
    rq.args.head_dim = s.head_dim();
    rq.args.theta = static_cast<float>(s.rope_theta());
    rq.x = a.q;
    rq.y = a.q;
    ZR_RETURN_IF_ERROR(o.Run(rq, "rotary q fwd"));
    ops::RotaryForward rk = rq;
    rk.args.heads = kv_heads();
    rk.x = a.k;
    rk.y = a.k;
    ZR_RETURN_IF_ERROR(o.Run(rk, "rotary k fwd"));

    ops::AttentionForward at;
    at.args.batch = batch_;
    at.args.seq = seq_;
    at.args.num_heads = heads();
    at.args.num_kv_heads = kv_heads();
    at.args.head_dim = s.head_dim();
    at.q = a.q;
    at.k = a.k;
    at.v = a.v;
    at.out = a.att;
    at.lse = a.lse;
    ZR_RETURN_IF_ERROR(o.Run(at, "attention fwd"));

    ZR_RETURN_IF_ERROR(o.Matmul(k::LinearForwardArgs(t, q, h), a.att,
                                pp.Param(id.wo), sv.tmp, "o_proj fwd"));
    ZR_RETURN_IF_ERROR(
        AllReduceTp(stream, sv.tmp, absl::StrCat("L", l, " tp attention out")));
    ZR_RETURN_IF_ERROR(o.Add(sv.res[l], sv.tmp, a.mid, "residual 1 fwd"));

    ops::RmsNormForward n2 = n1;
    n2.x = a.mid;
    n2.weight = pp.Param(id.ln2);
    n2.y = a.h2;
    n2.rstd = a.rstd2;
    ZR_RETURN_IF_ERROR(o.Run(n2, "post_attention_layernorm fwd"));

    ZR_RETURN_IF_ERROR(o.Matmul(k::LinearForwardArgs(t, h, f), a.h2,
                                pp.Param(id.wg), a.gate, "gate_proj fwd"));
    ZR_RETURN_IF_ERROR(o.Matmul(k::LinearForwardArgs(t, h, f), a.h2,
                                pp.Param(id.wu), a.up, "up_proj fwd"));
    ops::SwigluForward sw;
    sw.args.n = t * f;
    sw.gate = a.gate;
    sw.up = a.up;
    sw.h = a.m;
    ZR_RETURN_IF_ERROR(o.Run(sw, "swiglu fwd"));
    ZR_RETURN_IF_ERROR(o.Matmul(k::LinearForwardArgs(t, f, h), a.m,
                                pp.Param(id.wd), sv.tmp, "down_proj fwd"));
    ZR_RETURN_IF_ERROR(
        AllReduceTp(stream, sv.tmp, absl::StrCat("L", l, " tp mlp out")));
    ZR_RETURN_IF_ERROR(o.Add(a.mid, sv.tmp, sv.res[l + 1], "residual 2 fwd"));
    ZR_RETURN_IF_ERROR(pp.EndModule(module, Pass::kForward));
  }

  // Head: final norm, LM head, loss.
  {
    const int module = static_cast<int>(s.num_layers()) + 1;
    const int norm = s.tie_word_embeddings()
                         ? static_cast<int>(params_.size()) - 1
                         : static_cast<int>(params_.size()) - 2;
    const int lm = s.tie_word_embeddings() ? 0 : norm + 1;
    Ops o(stream, "head ");
    ZR_RETURN_IF_ERROR(pp.BeginModule(module, Pass::kForward));
    ops::RmsNormForward nf;
    nf.args.rows = t;
    nf.args.dim = h;
    nf.args.eps = static_cast<float>(s.rms_norm_eps());
    nf.x = sv.res[s.num_layers()];
    nf.weight = pp.Param(norm);
    nf.y = sv.hf;
    nf.rstd = sv.rstdf;
    ZR_RETURN_IF_ERROR(o.Run(nf, "norm fwd"));
    ZR_RETURN_IF_ERROR(o.Matmul(k::LinearForwardArgs(t, h, s.vocab_size()),
                                sv.hf, pp.Param(lm), sv.logits, "lm_head fwd"));
    ops::CrossEntropyForward ce;
    ce.args.num_tokens = t;
    ce.args.vocab_size = s.vocab_size();
    ce.args.grad_scale = grad_scale;
    ce.logits = sv.logits;
    ce.targets = targets;
    ce.lse = sv.lse_ce;
    ce.loss = loss;
    ZR_RETURN_IF_ERROR(o.Run(ce, "cross_entropy fwd"));
    ZR_RETURN_IF_ERROR(pp.EndModule(module, Pass::kForward));
  }
  forward_done_ = true;
  return absl::OkStatus();
}

absl::Status Transformer::Backward(Stream& stream, ParamProvider& pp) {
  if (!forward_done_) {
    return absl::FailedPreconditionError("Backward without a Forward");
  }
  forward_done_ = false;
  const ModelSpec& s = spec_;
  const int64_t t = tokens();
  const int64_t h = s.hidden_size(), f = ffn();
  const int64_t q = heads() * s.head_dim();
  const int64_t kv = kv_heads() * s.head_dim();
  Saved& sv = *saved_;
  TensorRef dres = sv.dres_a;   // gradient of the residual stream
  TensorRef dnext = sv.dres_b;  // the same one layer down

  // Head.
  {
    const int module = static_cast<int>(s.num_layers()) + 1;
    const int norm = s.tie_word_embeddings()
                         ? static_cast<int>(params_.size()) - 1
                         : static_cast<int>(params_.size()) - 2;
    const int lm = s.tie_word_embeddings() ? 0 : norm + 1;
    const int64_t v = s.vocab_size();
    Ops o(stream, "head ");
    ZR_RETURN_IF_ERROR(pp.BeginModule(module, Pass::kBackward));
    ops::CrossEntropyBackward ce;
    ce.args.num_tokens = t;
    ce.args.vocab_size = v;
    ce.args.grad_scale = grad_scale_;
    ce.logits = sv.logits;
    ce.targets = targets_;
    ce.lse = sv.lse_ce;
    ce.d_logits = sv.logits;  // in place
    ZR_RETURN_IF_ERROR(o.Run(ce, "cross_entropy bwd"));
    // With tied embeddings this is the first write of the embedding's
    // gradient; the embedding module accumulates into it at the end.
    ZR_ASSIGN_OR_RETURN(TensorRef g_lm, pp.Grad(lm));
    ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardWeightArgs(t, h, v, 0.0f),
                                sv.logits, sv.hf, g_lm, "lm_head bwd weight"));
    ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardInputArgs(t, h, v), sv.logits,
                                pp.Param(lm), sv.dh, "lm_head bwd input"));
    ZR_ASSIGN_OR_RETURN(TensorRef g_norm, pp.Grad(norm));
    ZR_RETURN_IF_ERROR(o.Zero(g_norm, "norm bwd zero"));
    ops::RmsNormBackward nb;
    nb.args.rows = t;
    nb.args.dim = h;
    nb.args.eps = static_cast<float>(s.rms_norm_eps());
    nb.x = sv.res[s.num_layers()];
    nb.weight = pp.Param(norm);
    nb.rstd = sv.rstdf;
    nb.dy = sv.dh;
    nb.dx = dres;
    nb.d_weight = g_norm;
    ZR_RETURN_IF_ERROR(o.Run(nb, "norm bwd"));
    if (s.tie_word_embeddings()) {
      ZR_RETURN_IF_ERROR(pp.GradsReady({norm}));
    } else {
      ZR_RETURN_IF_ERROR(pp.GradsReady({norm, lm}));
    }
    ZR_RETURN_IF_ERROR(pp.EndModule(module, Pass::kBackward));
  }

  for (int64_t l = s.num_layers() - 1; l >= 0; --l) {
    const int module = static_cast<int>(l) + 1;
    const LayerIds id = IdsOf(s, l);
    Saved::LayerSlots& a = sv.layers[l];
    Ops o(stream, absl::StrCat("L", l, " "));
    ZR_RETURN_IF_ERROR(pp.BeginModule(module, Pass::kBackward));

    // MLP: res[l+1] = mid + down(swiglu(gate(h2), up(h2))), h2 = norm(mid).
    ZR_ASSIGN_OR_RETURN(TensorRef g_wd, pp.Grad(id.wd));
    ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardInputArgs(t, f, h), dres,
                                pp.Param(id.wd), sv.dm, "down_proj bwd input"));
    ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardWeightArgs(t, f, h, 0.0f),
                                dres, a.m, g_wd, "down_proj bwd weight"));
    ops::SwigluBackward sw;
    sw.args.n = t * f;
    sw.gate = a.gate;
    sw.up = a.up;
    sw.dh = sv.dm;
    sw.d_gate = sv.dgate;
    sw.d_up = sv.dup;
    ZR_RETURN_IF_ERROR(o.Run(sw, "swiglu bwd"));
    ZR_ASSIGN_OR_RETURN(TensorRef g_wg, pp.Grad(id.wg));
    ZR_ASSIGN_OR_RETURN(TensorRef g_wu, pp.Grad(id.wu));
    ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardWeightArgs(t, h, f, 0.0f),
                                sv.dgate, a.h2, g_wg, "gate_proj bwd weight"));
    ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardWeightArgs(t, h, f, 0.0f),
                                sv.dup, a.h2, g_wu, "up_proj bwd weight"));
    ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardInputArgs(t, h, f, 0.0f),
                                sv.dgate, pp.Param(id.wg), sv.dh,
                                "gate_proj bwd input"));
    ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardInputArgs(t, h, f, 1.0f),
                                sv.dup, pp.Param(id.wu), sv.dh,
                                "up_proj bwd input"));
    ZR_RETURN_IF_ERROR(
        AllReduceTp(stream, sv.dh, absl::StrCat("L", l, " tp mlp input grad")));
    ZR_ASSIGN_OR_RETURN(TensorRef g_ln2, pp.Grad(id.ln2));
    ZR_RETURN_IF_ERROR(o.Zero(g_ln2, "post_attention_layernorm bwd zero"));
    ops::RmsNormBackward n2;
    n2.args.rows = t;
    n2.args.dim = h;
    n2.args.eps = static_cast<float>(s.rms_norm_eps());
    n2.x = a.mid;
    n2.weight = pp.Param(id.ln2);
    n2.rstd = a.rstd2;
    n2.dy = sv.dh;
    n2.dx = sv.dmid;
    n2.d_weight = g_ln2;
    ZR_RETURN_IF_ERROR(o.Run(n2, "post_attention_layernorm bwd"));
    ZR_RETURN_IF_ERROR(o.Add(sv.dmid, dres, sv.dmid, "residual 2 bwd"));

    // Attention: mid = res[l] + o_proj(attn(rope(q), rope(k), v)),
    // q/k/v = proj(h1) (+ bias), h1 = norm(res[l]).
    ZR_ASSIGN_OR_RETURN(TensorRef g_wo, pp.Grad(id.wo));
    ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardInputArgs(t, q, h), sv.dmid,
                                pp.Param(id.wo), sv.datt, "o_proj bwd input"));
    ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardWeightArgs(t, q, h, 0.0f),
                                sv.dmid, a.att, g_wo, "o_proj bwd weight"));
    ops::AttentionBackward ab;
    ab.args.batch = batch_;
    ab.args.seq = seq_;
    ab.args.num_heads = heads();
    ab.args.num_kv_heads = kv_heads();
    ab.args.head_dim = s.head_dim();
    ab.q = a.q;
    ab.k = a.k;
    ab.v = a.v;
    ab.out = a.att;
    ab.lse = a.lse;
    ab.d_out = sv.datt;
    ab.dq = sv.dq;
    ab.dk = sv.dk;
    ab.dv = sv.dv;
    ZR_RETURN_IF_ERROR(o.Run(ab, "attention bwd"));
    ops::RotaryBackward rq;
    rq.args.batch = batch_;
    rq.args.seq = seq_;
    rq.args.heads = heads();
    rq.args.head_dim = s.head_dim();
    rq.args.theta = static_cast<float>(s.rope_theta());
    rq.dy = sv.dq;
    rq.dx = sv.dq;
    ZR_RETURN_IF_ERROR(o.Run(rq, "rotary q bwd"));
    ops::RotaryBackward rk = rq;
    rk.args.heads = kv_heads();
    rk.dy = sv.dk;
    rk.dx = sv.dk;
    ZR_RETURN_IF_ERROR(o.Run(rk, "rotary k bwd"));
    if (s.qkv_bias()) {
      ZR_ASSIGN_OR_RETURN(TensorRef g_bq, pp.Grad(id.bq));
      ZR_ASSIGN_OR_RETURN(TensorRef g_bk, pp.Grad(id.bk));
      ZR_ASSIGN_OR_RETURN(TensorRef g_bv, pp.Grad(id.bv));
      ZR_RETURN_IF_ERROR(o.BiasBackward(t, sv.dq, g_bq, "q bias bwd"));
      ZR_RETURN_IF_ERROR(o.BiasBackward(t, sv.dk, g_bk, "k bias bwd"));
      ZR_RETURN_IF_ERROR(o.BiasBackward(t, sv.dv, g_bv, "v bias bwd"));
    }
    ZR_ASSIGN_OR_RETURN(TensorRef g_wq, pp.Grad(id.wq));
    ZR_ASSIGN_OR_RETURN(TensorRef g_wk, pp.Grad(id.wk));
    ZR_ASSIGN_OR_RETURN(TensorRef g_wv, pp.Grad(id.wv));
    ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardWeightArgs(t, h, q, 0.0f),
                                sv.dq, a.h1, g_wq, "q_proj bwd weight"));
    ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardWeightArgs(t, h, kv, 0.0f),
                                sv.dk, a.h1, g_wk, "k_proj bwd weight"));
    ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardWeightArgs(t, h, kv, 0.0f),
                                sv.dv, a.h1, g_wv, "v_proj bwd weight"));
    ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardInputArgs(t, h, q, 0.0f),
                                sv.dq, pp.Param(id.wq), sv.dh,
                                "q_proj bwd input"));
    ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardInputArgs(t, h, kv, 1.0f),
                                sv.dk, pp.Param(id.wk), sv.dh,
                                "k_proj bwd input"));
    ZR_RETURN_IF_ERROR(o.Matmul(k::LinearBackwardInputArgs(t, h, kv, 1.0f),
                                sv.dv, pp.Param(id.wv), sv.dh,
                                "v_proj bwd input"));
    ZR_RETURN_IF_ERROR(AllReduceTp(
        stream, sv.dh, absl::StrCat("L", l, " tp attention input grad")));
    ZR_ASSIGN_OR_RETURN(TensorRef g_ln1, pp.Grad(id.ln1));
    ZR_RETURN_IF_ERROR(o.Zero(g_ln1, "input_layernorm bwd zero"));
    ops::RmsNormBackward n1 = n2;
    n1.x = sv.res[l];
    n1.weight = pp.Param(id.ln1);
    n1.rstd = a.rstd1;
    n1.dy = sv.dh;
    n1.dx = dnext;
    n1.d_weight = g_ln1;
    ZR_RETURN_IF_ERROR(o.Run(n1, "input_layernorm bwd"));
    ZR_RETURN_IF_ERROR(o.Add(dnext, sv.dmid, dnext, "residual 1 bwd"));

    std::vector<int> ready = {id.ln1, id.wq, id.wk, id.wv, id.wo,
                              id.ln2, id.wg, id.wu, id.wd};
    if (s.qkv_bias()) ready.insert(ready.end(), {id.bq, id.bk, id.bv});
    std::sort(ready.begin(), ready.end());
    ZR_RETURN_IF_ERROR(pp.GradsReady(ready));
    ZR_RETURN_IF_ERROR(pp.EndModule(module, Pass::kBackward));
    std::swap(dres, dnext);
  }

  // Embedding.
  {
    Ops o(stream, "embedding ");
    ZR_RETURN_IF_ERROR(pp.BeginModule(0, Pass::kBackward));
    ZR_ASSIGN_OR_RETURN(TensorRef g_emb, pp.Grad(0));
    if (!s.tie_word_embeddings()) {
      ZR_RETURN_IF_ERROR(o.Zero(g_emb, "bwd zero"));
    }
    ops::EmbeddingBackward eb;
    eb.args.num_tokens = t;
    eb.args.vocab_size = s.vocab_size();
    eb.args.dim = h;
    eb.tokens = tokens_;
    eb.d_out = dres;
    eb.d_table = g_emb;
    ZR_RETURN_IF_ERROR(o.Run(eb, "bwd"));
    ZR_RETURN_IF_ERROR(pp.GradsReady({0}));
    ZR_RETURN_IF_ERROR(pp.EndModule(0, Pass::kBackward));
  }
  return absl::OkStatus();
}

absl::Status Transformer::AllReduceTp(Stream& stream, const TensorRef& x,
                                      absl::string_view label) {
  if (tp_.size == 1) return absl::OkStatus();
  return tp_.comm->AllReduce(stream, x, x, runtime::ReduceOp::kSum, label);
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
