// A GPT-style decoder-only language model (vocabulary model.vocab, 256 bytes by default), cut into
// blocks: Embedding, L x TransformerBlock, LMHead.
//
// Follows GPT-2 (Radford et al. 2019) in miniature: learned position embeddings,
// pre-LayerNorm residual blocks with causal multi-head self-attention and a 4x GELU
// MLP, N(0, 0.02) initialisation with residual projections scaled by 1/sqrt(2L).
// Left out: weight tying between embedding and head (they sit in different
// pipeline stages), KV caching, fused/flash attention.
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
#include "models/facts/gpt_size.h"
#include "models/torch/internal/subspace.h"
#include "models/torch/model_limits.h"
#include "models/torch/model_registry.h"

namespace slowpipe::models {
namespace {

constexpr double kInitStd = 0.02;

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
                   double dropout, SubspacePtr sub)
      : Block("TransformerBlock"),
        seq_len_(seq_len),
        d_model_(d_model),
        heads_(heads),
        ffn_(ffn),
        dropout_(dropout),
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
  }

  at::Tensor forward(const at::Tensor& x) override {
    namespace F = torch::nn::functional;
    const auto drop = F::DropoutFuncOptions().p(dropout_).training(is_training());
    const int64_t b = x.size(0), t = x.size(1), c = x.size(2), d = c / heads_;
    // Causal self-attention.
    auto qkv =
        qkv_(ln1_(x)).view({b, t, 3, heads_, d}).permute({2, 0, 3, 1, 4});  // [3, B, H, T, D]
    auto q = qkv[0], k = qkv[1], v = qkv[2];                                // [B, H, T, D]
    auto att = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(d)));
    auto future = torch::ones({t, t}, x.options().dtype(torch::kBool)).triu(1);      // [T, T]
    att = F::dropout(torch::softmax(att.masked_fill(future, -INFINITY), -1), drop);  // [B, H, T, T]
    auto y = torch::matmul(att, v).transpose(1, 2).reshape({b, t, c});               // [B, T, C]
    auto h = x + into_residual(sub_, F::dropout(proj_(y), drop));
    // MLP.
    auto m = fc2_(F::gelu(fc1_(ln2_(h))));  // [B, T, C] (or [B, T, k])
    return h + into_residual(sub_, F::dropout(m, drop));
  }

  double forward_flops_per_sample() const override {
    const double t = static_cast<double>(seq_len_), c = static_cast<double>(d_model_),
                 f = static_cast<double>(ffn_);
    // qkv 3C^2 + proj C^2 + MLP 2 C F MACs per token (12 C^2 at F = 4C; a
    // subspace's narrower writers are not discounted); QK^T and AV: 2 T C per token.
    return 2.0 * (t * (4.0 * c * c + 2.0 * c * f) + 2.0 * t * t * c);
  }

 private:
  int64_t seq_len_, d_model_, heads_, ffn_;
  double dropout_;
  SubspacePtr sub_;
  torch::nn::LayerNorm ln1_{nullptr}, ln2_{nullptr};
  torch::nn::Linear qkv_{nullptr}, proj_{nullptr}, fc1_{nullptr}, fc2_{nullptr};
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

 private:
  int64_t vocab_, seq_len_, d_model_;
  torch::nn::LayerNorm ln_{nullptr};
  torch::nn::Linear out_{nullptr};
};

}  // namespace

ModelFootprint footprint_gpt(const ModelConfig& cfg, const DatasetInfo& /*data*/) {
  const double l = cfg.layers, c = cfg.d_model, h = cfg.heads, t = cfg.seq_len;
  const double v = cfg.vocab, width = cfg.ffn > 0 ? cfg.ffn : 4.0 * c;
  ModelFootprint f;
  f.parameters = static_cast<double>(gpt_parameters(
      {GptLayout::kGpt, cfg.d_model, cfg.layers, cfg.vocab, cfg.seq_len, cfg.ffn, cfg.subspace}));
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
  for (int i = 0; i < cfg.layers; ++i) {
    m.blocks.push_back(std::make_shared<TransformerBlock>(
        cfg.seq_len, cfg.d_model, cfg.heads, cfg.ffn > 0 ? cfg.ffn : 4 * int64_t{cfg.d_model},
        cfg.layers, cfg.dropout, sub));
  }
  m.blocks.push_back(std::make_shared<LMHead>(cfg.vocab, cfg.seq_len, cfg.d_model));
  return m;
}

}  // namespace slowpipe::models
