// Protocol NanoGPT's GPT at byte scale (model.name = protocol-gpt): the block
// of the benchmark's train_gpt.py (PluralisResearch/ProtocolNanoGPT, itself
// from modded-nanogpt) on slowpipe's byte-level text, so that codecs can be
// compared on the benchmark's architecture family at CPU size
// (docs/models.md, "protocol-gpt").
//
// Differences from `gpt` (gpt.cpp): RMSNorm with gains (no bias) instead of
// LayerNorm; no position table: half-truncated rotary embeddings on queries
// and keys (a quarter of each head's frequencies, from 1 down to 1/1024, the
// other quarter zero), queries and keys RMS-normalised per head before it;
// attention scale 0.12; separate q, k, v projections with biases; a ReLU^2
// MLP; the embedding followed by an RMSNorm; every output projection
// (attention, MLP and the LM head) initialised to zero, so at initialisation
// each block is the identity and the logits are zero (loss ln 256); the other
// matrices N(0, 0.33 / fan_in), biases zero, embedding N(0, 1); logits soft-
// capped as 15 x / sqrt(x^2 + 15^2). Left out: bf16 compute, dropout.
//
// model.ffn sets the MLP width (default 4 C). model.subspace = k builds the
// ReparamSSN record's form (train_gpt_ssn.py): the embedding is k trainable
// coordinates per token lifted by a fixed basis U plus a fixed N(0, 1) token
// part, with no RMSNorm; every block but the last writes through k outputs
// lifted by U; the last block is full-rank and ends the model (no cut after
// it); a cut sends the k coordinates of (h - fixed) and the token ids
// (internal/subspace.h, SubspaceForm::record).
//
// Forward FLOPs per sample as gpt.cpp counts them (matrix products only).
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

constexpr double kLogitCap = 15.0;
constexpr double kAttentionScale = 0.12;

// F.rms_norm's default epsilon for fp32: torch.finfo(float32).eps.
constexpr double kRmsEps = 1.1920928955078125e-07;

at::Tensor rms_norm(const at::Tensor& x) {
  return x * torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + kRmsEps);
}

// RMSNorm over the last dimension with a learned gain per channel (init 1).
class RMSNormImpl : public torch::nn::Module {
 public:
  explicit RMSNormImpl(int64_t dim) : torch::nn::Module("RMSNorm") {
    gains_ = register_parameter("gains", torch::ones({dim}));  // [C]
  }
  at::Tensor forward(const at::Tensor& x) { return rms_norm(x) * gains_; }

 private:
  at::Tensor gains_;
};
TORCH_MODULE(RMSNorm);

torch::nn::Linear linear(int64_t in, int64_t out, bool zero) {
  torch::nn::Linear l(torch::nn::LinearOptions(in, out).bias(true));
  torch::NoGradGuard g;
  if (zero) {
    l->weight.zero_();
  } else {
    l->weight.normal_(0.0, std::sqrt(0.33 / static_cast<double>(in)));
  }
  l->bias.zero_();
  return l;
}

}  // namespace

// Half-truncated rotary embedding of x [B, T, H, D] (D even, D/4 >= 1): the
// first D/4 frequency pairs turn at (1/1024)^(i/(D/4-1)), the rest not at all.
at::Tensor protocol_rotary(const at::Tensor& x) {
  const int64_t t = x.size(1), d = x.size(3), quarter = d / 4;
  auto opts = x.options().dtype(torch::kFloat);
  auto freq = torch::pow(1.0 / 1024, torch::linspace(0, 1, quarter, opts));        // [D/4]
  freq = torch::cat({freq, torch::zeros({d / 2 - quarter}, opts)});                // [D/2]
  auto theta = torch::outer(torch::arange(t, opts), freq).view({1, t, 1, d / 2});  // [1, T, 1, D/2]
  auto cos = theta.cos(), sin = theta.sin();
  auto halves = x.chunk(2, -1);  // [B, T, H, D/2] each
  auto y1 = halves[0] * cos + halves[1] * sin;
  auto y2 = halves[0] * (-sin) + halves[1] * cos;
  return torch::cat({y1, y2}, -1);  // [B, T, H, D]
}

namespace {

using SubspacePtr = std::shared_ptr<const Subspace>;

// int64 [B, T] bytes -> float [B, T, C]: token embedding, then RMSNorm; in
// the subspace form U tok[x] + fixed(x), tok [V, k], no RMSNorm.
class ProtocolEmbedding : public Block {
 public:
  ProtocolEmbedding(int64_t vocab, int64_t seq_len, int64_t d_model, SubspacePtr sub)
      : Block("Embedding"), seq_len_(seq_len), d_model_(d_model), sub_(std::move(sub)) {
    const int64_t width = sub_ ? sub_->rank() : d_model;
    tok_ = register_module("tok", torch::nn::Embedding(vocab, width));  // [V, C] or [V, k]
    if (!sub_) norm_ = register_module("norm", RMSNorm(d_model));
    set_role(tok_->weight, ParamRole::kEmbedding);
    torch::NoGradGuard g;
    tok_->weight.normal_(0.0, 1.0);
  }
  at::Tensor forward(const at::Tensor& x) override {
    TORCH_CHECK(x.size(1) <= seq_len_, "sequence of ", x.size(1), " bytes exceeds model.seq_len ",
                seq_len_);
    if (sub_) return sub_->lift(tok_(x)) + sub_->fixed(x);  // [B, T, C]
    return norm_(tok_(x));                                  // [B, T, C]
  }
  double forward_flops_per_sample() const override {
    const double t = static_cast<double>(seq_len_), c = static_cast<double>(d_model_);
    return sub_ ? t * c * (2.0 * static_cast<double>(sub_->rank()) + 1.0) : t * c;
  }

 private:
  int64_t seq_len_, d_model_;
  SubspacePtr sub_;
  torch::nn::Embedding tok_{nullptr};
  RMSNorm norm_{nullptr};
};

// float [B, T, C] -> float [B, T, C]; MLP width F; with a subspace `sub` the
// two writers have k outputs, lifted by U.
class ProtocolBlock : public Block {
 public:
  ProtocolBlock(int64_t seq_len, int64_t d_model, int64_t heads, int64_t ffn, SubspacePtr sub)
      : Block("TransformerBlock"),
        seq_len_(seq_len),
        d_model_(d_model),
        heads_(heads),
        ffn_(ffn),
        sub_(std::move(sub)) {
    const int64_t out = sub_ ? sub_->rank() : d_model;
    norm1_ = register_module("norm1", RMSNorm(d_model));
    q_ = register_module("q", linear(d_model, d_model, false));   // [C, C]
    k_ = register_module("k", linear(d_model, d_model, false));   // [C, C]
    v_ = register_module("v", linear(d_model, d_model, false));   // [C, C]
    proj_ = register_module("proj", linear(d_model, out, true));  // [C or k, C], zero
    norm2_ = register_module("norm2", RMSNorm(d_model));
    fc_ = register_module("fc", linear(d_model, ffn, false));         // [F, C]
    mlp_proj_ = register_module("mlp_proj", linear(ffn, out, true));  // [C or k, F], zero
    for (auto* l : {&q_, &k_, &v_, &proj_, &fc_, &mlp_proj_}) {
      set_role((*l)->weight, ParamRole::kHiddenMatrix);
    }
  }

  at::Tensor forward(const at::Tensor& x) override {
    const int64_t b = x.size(0), t = x.size(1), c = x.size(2), d = c / heads_;
    auto h = norm1_(x);
    auto q = protocol_rotary(rms_norm(q_(h).view({b, t, heads_, d})));  // [B, T, H, D]
    auto k = protocol_rotary(rms_norm(k_(h).view({b, t, heads_, d})));
    auto v = v_(h).view({b, t, heads_, d});
    q = q.transpose(1, 2), k = k.transpose(1, 2), v = v.transpose(1, 2);  // [B, H, T, D]
    auto att = torch::matmul(q, k.transpose(-2, -1)) * kAttentionScale;   // [B, H, T, T]
    auto future = torch::ones({t, t}, x.options().dtype(torch::kBool)).triu(1);
    att = torch::softmax(att.masked_fill(future, -INFINITY), -1);
    auto y = torch::matmul(att, v).transpose(1, 2).reshape({b, t, c});  // [B, T, C]
    auto r = x + write(proj_(y));
    auto m = torch::relu(fc_(norm2_(r)));  // [B, T, F]
    return r + write(mlp_proj_(m * m));
  }

  double forward_flops_per_sample() const override {
    // Matrix products as gpt.cpp counts them; the subspace form adds U's lifts.
    const double t = static_cast<double>(seq_len_), c = static_cast<double>(d_model_),
                 f = static_cast<double>(ffn_);
    const double out = sub_ ? static_cast<double>(sub_->rank()) : c;
    const double lifts = sub_ ? 2.0 * out * c : 0.0;
    return 2.0 * (t * (3.0 * c * c + c * out + c * f + f * out + lifts) + 2.0 * t * t * c);
  }

 private:
  // [B, T, k] -> [B, T, C] through U in the subspace form; as it is otherwise.
  at::Tensor write(const at::Tensor& y) const { return sub_ ? sub_->lift(y) : y; }

  int64_t seq_len_, d_model_, heads_, ffn_;
  SubspacePtr sub_;
  RMSNorm norm1_{nullptr}, norm2_{nullptr};
  torch::nn::Linear q_{nullptr}, k_{nullptr}, v_{nullptr}, proj_{nullptr}, fc_{nullptr},
      mlp_proj_{nullptr};
};

// float [B, T, C] -> float [B, T, V] soft-capped logits
class ProtocolHead : public Block {
 public:
  ProtocolHead(int64_t vocab, int64_t seq_len, int64_t d_model)
      : Block("LMHead"), vocab_(vocab), seq_len_(seq_len), d_model_(d_model) {
    norm_ = register_module("norm", RMSNorm(d_model));
    proj_ = register_module("proj", linear(d_model, vocab, true));  // [V, C], zero
    set_role(proj_->weight, ParamRole::kHead);
  }
  at::Tensor forward(const at::Tensor& x) override {
    auto logits = proj_(norm_(x));  // [B, T, V]
    return kLogitCap * logits * torch::rsqrt(logits * logits + kLogitCap * kLogitCap);
  }
  double forward_flops_per_sample() const override {
    return 2.0 * static_cast<double>(seq_len_) * static_cast<double>(d_model_) *
           static_cast<double>(vocab_);
  }

 private:
  int64_t vocab_, seq_len_, d_model_;
  RMSNorm norm_{nullptr};
  torch::nn::Linear proj_{nullptr};
};

}  // namespace

ModelFootprint footprint_protocol_gpt(const ModelConfig& cfg, const DatasetInfo& /*data*/) {
  const double l = cfg.layers, c = cfg.d_model, h = cfg.heads, t = cfg.seq_len, v = cfg.vocab;
  const double width = cfg.ffn > 0 ? cfg.ffn : 4.0 * c;
  ModelFootprint f;
  f.parameters =
      static_cast<double>(gpt_parameters({GptLayout::kProtocol, cfg.d_model, cfg.layers, cfg.vocab,
                                          cfg.seq_len, cfg.ffn, cfg.subspace}));
  f.activation_floats_per_sample = t * c + l * (h * t * t + 10.0 * t * c + width * t) + 2.0 * t * v;
  return f;
}

Model build_protocol_gpt(const ModelConfig& cfg, const DatasetInfo& data) {
  if (data.task != Task::kLanguageModel) {
    throw UsageError("model.name=protocol-gpt needs a text data set; data set '" + data.name +
                     "' is not byte-level text (use data.name=gcide or text)");
  }
  if (cfg.d_model % cfg.heads != 0 || (cfg.d_model / cfg.heads) % 4 != 0) {
    throw UsageError("model.name=protocol-gpt: model.heads=" + std::to_string(cfg.heads) +
                     " must divide model.d_model=" + std::to_string(cfg.d_model) +
                     " into heads of a multiple of 4 (the rotary embedding turns a quarter of "
                     "each head's frequencies)");
  }
  if (cfg.dropout > 0) {
    throw UsageError(
        "model.name=protocol-gpt has no dropout (the benchmark's model has none): "
        "leave model.dropout at 0");
  }
  if (!data.sample_shape.empty() && data.sample_shape[0] > cfg.seq_len) {
    throw UsageError("data set '" + data.name + "' has samples of " +
                     std::to_string(data.sample_shape[0]) +
                     " bytes, more than model.seq_len=" + std::to_string(cfg.seq_len));
  }
  check_vocab(cfg, data);
  Model m;
  m.name = "protocol-gpt";
  m.task = Task::kLanguageModel;
  SubspacePtr sub;
  if (cfg.subspace != 0) {
    sub = std::make_shared<const Subspace>(cfg.d_model, cfg.subspace, cfg.vocab, cfg.seq_len,
                                           SubspaceForm::record());
    m.boundary = sub;
    m.max_cut = static_cast<size_t>(cfg.layers);  // the last block starts the last stage at most
  }
  const int64_t ffn = cfg.ffn > 0 ? cfg.ffn : 4 * static_cast<int64_t>(cfg.d_model);
  m.blocks.push_back(std::make_shared<ProtocolEmbedding>(cfg.vocab, cfg.seq_len, cfg.d_model, sub));
  for (int i = 0; i < cfg.layers; ++i) {
    m.blocks.push_back(std::make_shared<ProtocolBlock>(cfg.seq_len, cfg.d_model, cfg.heads, ffn,
                                                       i + 1 < cfg.layers ? sub : nullptr));
  }
  m.blocks.push_back(std::make_shared<ProtocolHead>(cfg.vocab, cfg.seq_len, cfg.d_model));
  return m;
}

}  // namespace slowpipe::models
