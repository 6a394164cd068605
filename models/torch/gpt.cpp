// A GPT-style decoder-only language model (vocabulary model.vocab, 256 bytes by default), cut into
// blocks: Embedding, L x TransformerBlock, LMHead.
//
// Follows GPT-2 (Radford et al. 2019) in miniature: learned position embeddings,
// pre-LayerNorm residual blocks with causal multi-head self-attention and a 4x GELU
// MLP, N(0, 0.02) initialisation with residual projections scaled by 1/sqrt(2L).
// Left out: weight tying between embedding and head (they sit in different
// pipeline stages), KV caching, fused/flash attention.
//
// model.bottleneck (models/facts/bottleneck_spec.h) adds learned bottlenecks
// after chosen transformer blocks (models/torch/internal/bottleneck.h): ResBM's
// encoder ends the block before and its decoder starts the block after, so
// the stream between them is r wide; a learned projection's module is owned
// by the block before and applied through the model's bottleneck maps.
//
// model.subspace = k > 0 constrains the residual stream to a fixed subspace
// (models/torch/internal/subspace.h, after Protocol Models, arXiv 2506.01260): the attention
// output and MLP down projections produce k coefficients that the fixed basis
// U [C, k] lifts into the residual, and the embedding is k trainable
// coefficients per byte and per position, lifted, plus a fixed part outside
// span(U). Dropout then applies to those coefficients. k = 0 is the model
// above, parameter for parameter and draw for draw.
//
// Forward FLOPs per sample count 2 x multiply-accumulates of the matrix products
// (attention over the full T x T square, as computed); element-wise work is
// ignored except the embedding's position add (T*C), so no block reports zero.
#include <torch/torch.h>

#include <cmath>
#include <string>

#include "common/errors.h"
#include "models/facts/bottleneck_spec.h"
#include "models/facts/gpt_size.h"
#include "models/facts/layer_work.h"
#include "models/torch/internal/bottleneck.h"
#include "models/torch/internal/subspace.h"
#include "models/torch/model_limits.h"
#include "models/torch/model_registry.h"

namespace slowpipe::models {
namespace {

constexpr double kInitStd = 0.02;
constexpr uint64_t kBottleneckSeed = 0x5b0771e;  // any fixed value: bottleneck draws' own stream

void init_linear(torch::nn::Linear& l, double std) {
  torch::NoGradGuard g;
  l->weight.normal_(0.0, std);
  if (l->bias.defined()) l->bias.zero_();
}

using SubspacePtr = std::shared_ptr<const Subspace>;

// Width of what a residual-writing layer produces: C, or k coefficients.
int64_t write_width(const SubspacePtr& sub, int64_t d_model) {
  return sub ? sub->rank() : d_model;
}

// What a residual-writing layer adds to the residual: its output, or U times it.
at::Tensor into_residual(const SubspacePtr& sub, const at::Tensor& out) {
  return sub ? sub->lift(out) : out;
}

// int64 [B, T] bytes -> float [B, T, C]
class Embedding : public Block {
 public:
  Embedding(int64_t vocab, int64_t seq_len, int64_t d_model, double dropout, SubspacePtr sub)
      : Block("Embedding"),
        seq_len_(seq_len),
        d_model_(d_model),
        dropout_(dropout),
        sub_(std::move(sub)) {
    const int64_t w = write_width(sub_, d_model);
    tok_ = register_module("tok", torch::nn::Embedding(vocab, w));    // [V, C] (or [V, k])
    pos_ = register_module("pos", torch::nn::Embedding(seq_len, w));  // [T_max, C] (or [T_max, k])
    set_role(tok_->weight, ParamRole::kEmbedding);
    set_role(pos_->weight, ParamRole::kEmbedding);
    torch::NoGradGuard g;
    tok_->weight.normal_(0.0, kInitStd);
    pos_->weight.normal_(0.0, kInitStd);
  }
  at::Tensor forward(const at::Tensor& x) override {
    const int64_t t = x.size(1);
    TORCH_CHECK(t <= seq_len_, "sequence of ", t, " bytes exceeds model.seq_len ", seq_len_);
    auto positions = torch::arange(t, x.options().dtype(torch::kLong));  // [T]
    auto h = tok_(x) + pos_(positions).unsqueeze(0);                     // [B, T, C] (or k)
    h = torch::nn::functional::dropout(
        h, torch::nn::functional::DropoutFuncOptions().p(dropout_).training(is_training()));
    if (!sub_) return h;
    return sub_->lift(h) + sub_->fixed(x);  // [B, T, C]
  }
  double forward_flops_per_sample() const override {
    return static_cast<double>(seq_len_) * static_cast<double>(d_model_);
  }
  bool add_forward_work(netmodel::OpWork& work, int64_t samples) const override {
    if (sub_) return false;
    add_embedding_work(work, samples * seq_len_, d_model_);
    return true;
  }

 private:
  int64_t seq_len_, d_model_;
  double dropout_;
  SubspacePtr sub_;
  torch::nn::Embedding tok_{nullptr}, pos_{nullptr};
};

// float [B, T, C] -> float [B, T, C]
class TransformerBlock : public Block {
 public:
  TransformerBlock(int64_t seq_len, int64_t d_model, int64_t heads, int64_t ffn, int64_t layers,
                   double dropout, SubspacePtr sub, int64_t resbm_in = 0, int64_t resbm_out = 0,
                   uint64_t seed = 0)
      : Block("TransformerBlock"),
        seq_len_(seq_len),
        d_model_(d_model),
        heads_(heads),
        ffn_(ffn),
        dropout_(dropout),
        resbm_io_(resbm_in + resbm_out),
        sub_(std::move(sub)) {
    const int64_t w = write_width(sub_, d_model);
    ln1_ = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})));
    qkv_ = register_module("qkv", torch::nn::Linear(d_model, 3 * d_model));  // [3C, C]
    proj_ = register_module("proj", torch::nn::Linear(d_model, w));          // [C, C] (or [k, C])
    ln2_ = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})));
    fc1_ = register_module("fc1", torch::nn::Linear(d_model, ffn));  // [F, C], F = 4C by default
    fc2_ = register_module("fc2", torch::nn::Linear(ffn, w));        // [C, F] (or [k, F])
    const double resid_std = kInitStd / std::sqrt(2.0 * static_cast<double>(layers));
    init_linear(qkv_, kInitStd);
    init_linear(proj_, resid_std);
    init_linear(fc1_, kInitStd);
    init_linear(fc2_, resid_std);
    for (auto* l : {&qkv_, &proj_, &fc1_, &fc2_}) set_role((*l)->weight, ParamRole::kHiddenMatrix);
    // ResBM: float [B, T, r_in] in, float [B, T, r_out] out.
    if (resbm_in > 0) {
      dec_ = register_module("resbm_dec",
                             std::make_shared<ResbmDecoderImpl>(d_model, resbm_in, seed + 1));
      set_role(dec_->weight(), ParamRole::kHiddenMatrix);
    }
    if (resbm_out > 0) {
      enc_ = register_module("resbm_enc",
                             std::make_shared<ResbmEncoderImpl>(d_model, resbm_out, seed));
      set_role(enc_->weight(), ParamRole::kHiddenMatrix);
    }
  }

  // A learned projection after this block (model.bottleneck = learned:...):
  // owned here, applied by forward_stage through the returned map.
  std::shared_ptr<const BoundaryMap> own_projection(int64_t k, int64_t vocab, int64_t anchor,
                                                    uint64_t seed) {
    auto p = register_module(
        "bottleneck", std::make_shared<LearnedProjectionImpl>(d_model_, k, vocab, anchor, seed));
    set_role(p->basis(), ParamRole::kStiefel);
    if (p->anchored()) {
      set_role(p->anchor_tokens(), ParamRole::kEmbedding);
      set_role(p->anchor_lift(), ParamRole::kHiddenMatrix);
    }
    return std::make_shared<const LearnedBoundary>(p);
  }

  at::Tensor forward(const at::Tensor& x) override {
    namespace F = torch::nn::functional;
    const auto drop = F::DropoutFuncOptions().p(dropout_).training(is_training());
    const at::Tensor full = dec_ ? dec_->decode(x) : x;  // [B, T, C] (ResBM: x is [B, T, r])
    const int64_t b = full.size(0), t = full.size(1), c = full.size(2), d = c / heads_;
    // Causal self-attention.
    auto qkv =
        qkv_(ln1_(full)).view({b, t, 3, heads_, d}).permute({2, 0, 3, 1, 4});  // [3, B, H, T, D]
    auto q = qkv[0], k = qkv[1], v = qkv[2];                                   // [B, H, T, D]
    auto att = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(d)));
    auto future = torch::ones({t, t}, x.options().dtype(torch::kBool)).triu(1);      // [T, T]
    att = F::dropout(torch::softmax(att.masked_fill(future, -INFINITY), -1), drop);  // [B, H, T, T]
    auto y = torch::matmul(att, v).transpose(1, 2).reshape({b, t, c});               // [B, T, C]
    const auto a = into_residual(sub_, F::dropout(proj_(y), drop));                  // [B, T, C]
    auto h = dec_ ? dec_->residual(x, a) : x + a;
    // MLP.
    auto m = F::dropout(fc2_(F::gelu(fc1_(ln2_(h)))), drop);  // [B, T, C] (or [B, T, k])
    if (enc_) return enc_->encode(h, m);                      // [B, T, r]
    return h + into_residual(sub_, m);
  }

  double forward_flops_per_sample() const override {
    const double t = static_cast<double>(seq_len_), c = static_cast<double>(d_model_),
                 f = static_cast<double>(ffn_);
    // qkv 3C^2 + proj C^2 + MLP 2 C F MACs per token (12 C^2 at F = 4C; a
    // subspace's narrower writers are not discounted); QK^T and AV: 2 T C per
    // token; a ResBM decoder or encoder: r C per token each.
    return 2.0 *
           (t * (4.0 * c * c + 2.0 * c * f + c * static_cast<double>(resbm_io_)) + 2.0 * t * t * c);
  }
  // The plain block (no subspace, no ResBM) as one transformer layer.
  bool add_forward_work(netmodel::OpWork& work, int64_t samples) const override {
    if (sub_ || dec_ || enc_) return false;
    add_transformer_work(work, {samples, seq_len_, d_model_, heads_, ffn_, 1}, 1);
    return true;
  }

 private:
  int64_t seq_len_, d_model_, heads_, ffn_;
  double dropout_;
  int64_t resbm_io_;  // r_in + r_out of its ResBM decoder and encoder (0: none)
  SubspacePtr sub_;
  torch::nn::LayerNorm ln1_{nullptr}, ln2_{nullptr};
  torch::nn::Linear qkv_{nullptr}, proj_{nullptr}, fc1_{nullptr}, fc2_{nullptr};
  std::shared_ptr<ResbmDecoderImpl> dec_;
  std::shared_ptr<ResbmEncoderImpl> enc_;
};

// float [B, T, C] -> float [B, T, V] logits
class LMHead : public Block {
 public:
  LMHead(int64_t vocab, int64_t seq_len, int64_t d_model)
      : Block("LMHead"), vocab_(vocab), seq_len_(seq_len), d_model_(d_model) {
    ln_ = register_module("ln", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})));
    out_ = register_module("out",
                           torch::nn::Linear(torch::nn::LinearOptions(d_model, vocab).bias(false)));
    init_linear(out_, kInitStd);
    set_role(out_->weight, ParamRole::kHead);
  }
  at::Tensor forward(const at::Tensor& x) override { return out_(ln_(x)); }
  double forward_flops_per_sample() const override {
    return 2.0 * static_cast<double>(seq_len_) * static_cast<double>(d_model_) *
           static_cast<double>(vocab_);
  }
  bool add_forward_work(netmodel::OpWork& work, int64_t samples) const override {
    add_lm_head_work(work, samples * seq_len_, d_model_, vocab_);
    return true;
  }

 private:
  int64_t vocab_, seq_len_, d_model_;
  torch::nn::LayerNorm ln_{nullptr};
  torch::nn::Linear out_{nullptr};
};

// The L transformer blocks, with model.bottleneck's bottlenecks: block i
// (1-based) is m.blocks[i], and a bottleneck after it sits in front of block
// i + 1. ResBM at r = d_model has nothing to narrow and builds no bottleneck
// (the unconstrained model; docs/models.md).
void add_transformer_blocks(Model& m, const ModelConfig& cfg, const SubspacePtr& sub) {
  const BottleneckSpec bn = parse_bottleneck(cfg.bottleneck, cfg.layers, cfg.d_model);
  const bool resbm = bn.kind == BottleneckKind::kResbm && bn.width < cfg.d_model;
  const int64_t ffn = cfg.ffn > 0 ? cfg.ffn : 4 * int64_t{cfg.d_model};
  for (int i = 1; i <= cfg.layers; ++i) {
    const int64_t r_in = resbm && bottleneck_after(bn, i - 1) ? bn.width : 0;
    const int64_t r_out = resbm && bottleneck_after(bn, i) ? bn.width : 0;
    // Bottleneck draws: a generator per block (models/torch/internal/bottleneck.h).
    const uint64_t seed = kBottleneckSeed + 2 * static_cast<uint64_t>(i);
    auto block = std::make_shared<TransformerBlock>(
        cfg.seq_len, cfg.d_model, cfg.heads, ffn, cfg.layers, cfg.dropout, sub, r_in, r_out, seed);
    if (bn.kind == BottleneckKind::kLearned && bottleneck_after(bn, i)) {
      m.bottlenecks[static_cast<size_t>(i) + 1] =
          block->own_projection(bn.width, cfg.vocab, bn.anchor, seed);
    }
    m.blocks.push_back(block);
  }
}

}  // namespace

ModelFootprint footprint_gpt(const ModelConfig& cfg, const DatasetInfo& /*data*/) {
  const double l = cfg.layers, c = cfg.d_model, h = cfg.heads, t = cfg.seq_len;
  const double v = cfg.vocab, width = cfg.ffn > 0 ? cfg.ffn : 4.0 * c;
  ModelFootprint f;
  const BottleneckSpec bn = parse_bottleneck(cfg.bottleneck, cfg.layers, cfg.d_model);
  f.parameters = static_cast<double>(
      gpt_parameters({GptLayout::kGpt, cfg.d_model, cfg.layers, cfg.vocab, cfg.seq_len, cfg.ffn,
                      cfg.subspace, bottleneck_parameters(bn, cfg.d_model, cfg.vocab)}));
  // Kept for backward, at least: attention probabilities H T^2 and about
  // 8 T C + T F of block activations per layer (12 T C at F = 4C), the
  // embedding output, logits and log-softmax.
  f.activation_floats_per_sample = t * c + l * (h * t * t + 8.0 * t * c + width * t) + 2.0 * t * v;
  return f;
}

Model build_gpt(const ModelConfig& cfg, const DatasetInfo& data) {
  if (data.task != Task::kLanguageModel) {
    throw UsageError("model.name=gpt needs a text data set; data set '" + data.name +
                     "' is not byte-level text (use data.name=gcide or text)");
  }
  if (cfg.d_model % cfg.heads != 0) {
    throw UsageError("model.heads=" + std::to_string(cfg.heads) +
                     " must divide model.d_model=" + std::to_string(cfg.d_model));
  }
  if (!data.sample_shape.empty() && data.sample_shape[0] > cfg.seq_len) {
    throw UsageError("data set '" + data.name + "' has samples of " +
                     std::to_string(data.sample_shape[0]) +
                     " bytes, more than model.seq_len=" + std::to_string(cfg.seq_len));
  }
  check_vocab(cfg, data);
  if (cfg.subspace != 0 && !cfg.bottleneck.empty()) {
    throw UsageError("model.bottleneck=" + cfg.bottleneck +
                     " and model.subspace=" + std::to_string(cfg.subspace) +
                     " are two ways of narrowing the cut; set one of them");
  }
  Model m;
  m.name = "gpt";
  m.task = Task::kLanguageModel;
  SubspacePtr sub;
  if (cfg.subspace != 0) {
    sub = std::make_shared<const Subspace>(cfg.d_model, cfg.subspace, cfg.vocab, cfg.seq_len);
    m.boundary = sub;
  }
  m.blocks.push_back(
      std::make_shared<Embedding>(cfg.vocab, cfg.seq_len, cfg.d_model, cfg.dropout, sub));
  add_transformer_blocks(m, cfg, sub);
  m.blocks.push_back(std::make_shared<LMHead>(cfg.vocab, cfg.seq_len, cfg.d_model));
  return m;
}

}  // namespace slowpipe::models
