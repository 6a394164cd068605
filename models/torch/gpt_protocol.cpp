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
// capped as 15 x / sqrt(x^2 + 15^2). Left out: bf16 compute, the Muon
// optimizer the benchmark trains the blocks with (slowpipe's optimizers
// apply), dropout.
//
// Forward FLOPs per sample as gpt.cpp counts them (matrix products only).
#include <torch/torch.h>

#include <cmath>
#include <string>

#include "common/errors.h"
#include "models/torch/model_registry.h"

namespace slowpipe::models {
namespace {

constexpr int64_t kVocab = 256;
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

// int64 [B, T] bytes -> float [B, T, C]: token embedding, then RMSNorm.
class ProtocolEmbedding : public Block {
 public:
  ProtocolEmbedding(int64_t seq_len, int64_t d_model)
      : Block("Embedding"), seq_len_(seq_len), d_model_(d_model) {
    tok_ = register_module("tok", torch::nn::Embedding(kVocab, d_model));  // [V, C]
    norm_ = register_module("norm", RMSNorm(d_model));
    set_role(tok_->weight, ParamRole::kEmbedding);
    torch::NoGradGuard g;
    tok_->weight.normal_(0.0, 1.0);
  }
  at::Tensor forward(const at::Tensor& x) override {
    TORCH_CHECK(x.size(1) <= seq_len_, "sequence of ", x.size(1), " bytes exceeds model.seq_len ",
                seq_len_);
    return norm_(tok_(x));  // [B, T, C]
  }
  double forward_flops_per_sample() const override {
    return static_cast<double>(seq_len_) * static_cast<double>(d_model_);
  }

 private:
  int64_t seq_len_, d_model_;
  torch::nn::Embedding tok_{nullptr};
  RMSNorm norm_{nullptr};
};

// float [B, T, C] -> float [B, T, C]
class ProtocolBlock : public Block {
 public:
  ProtocolBlock(int64_t seq_len, int64_t d_model, int64_t heads)
      : Block("TransformerBlock"), seq_len_(seq_len), d_model_(d_model), heads_(heads) {
    norm1_ = register_module("norm1", RMSNorm(d_model));
    q_ = register_module("q", linear(d_model, d_model, false));       // [C, C]
    k_ = register_module("k", linear(d_model, d_model, false));       // [C, C]
    v_ = register_module("v", linear(d_model, d_model, false));       // [C, C]
    proj_ = register_module("proj", linear(d_model, d_model, true));  // [C, C], zero
    norm2_ = register_module("norm2", RMSNorm(d_model));
    fc_ = register_module("fc", linear(d_model, 4 * d_model, false));             // [4C, C]
    mlp_proj_ = register_module("mlp_proj", linear(4 * d_model, d_model, true));  // [C, 4C], zero
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
    auto r = x + proj_(y);
    auto m = torch::relu(fc_(norm2_(r)));  // [B, T, 4C]
    return r + mlp_proj_(m * m);
  }

  double forward_flops_per_sample() const override {
    const double t = static_cast<double>(seq_len_), c = static_cast<double>(d_model_);
    return 2.0 * (12.0 * t * c * c + 2.0 * t * t * c);  // as gpt.cpp
  }

 private:
  int64_t seq_len_, d_model_, heads_;
  RMSNorm norm1_{nullptr}, norm2_{nullptr};
  torch::nn::Linear q_{nullptr}, k_{nullptr}, v_{nullptr}, proj_{nullptr}, fc_{nullptr},
      mlp_proj_{nullptr};
};

// float [B, T, C] -> float [B, T, 256] soft-capped logits
class ProtocolHead : public Block {
 public:
  ProtocolHead(int64_t seq_len, int64_t d_model)
      : Block("LMHead"), seq_len_(seq_len), d_model_(d_model) {
    norm_ = register_module("norm", RMSNorm(d_model));
    proj_ = register_module("proj", linear(d_model, kVocab, true));  // [V, C], zero
    set_role(proj_->weight, ParamRole::kHead);
  }
  at::Tensor forward(const at::Tensor& x) override {
    auto logits = proj_(norm_(x));  // [B, T, V]
    return kLogitCap * logits * torch::rsqrt(logits * logits + kLogitCap * kLogitCap);
  }
  double forward_flops_per_sample() const override {
    return 2.0 * static_cast<double>(seq_len_) * static_cast<double>(d_model_) * kVocab;
  }

 private:
  int64_t seq_len_, d_model_;
  RMSNorm norm_{nullptr};
  torch::nn::Linear proj_{nullptr};
};

}  // namespace

ModelFootprint footprint_protocol_gpt(const ModelConfig& cfg, const DatasetInfo& /*data*/) {
  const double l = cfg.layers, c = cfg.d_model, h = cfg.heads, t = cfg.seq_len, v = kVocab;
  ModelFootprint f;
  // Embedding V C + its gains C; per block 12 C^2 + 11 C (q, k, v, proj, fc,
  // mlp_proj with biases, two gains); head gains C and V C + V.
  f.parameters = v * c + c + l * (12.0 * c * c + 11.0 * c) + c + v * c + v;
  f.activation_floats_per_sample = t * c + l * (h * t * t + 14.0 * t * c) + 2.0 * t * v;
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
  Model m;
  m.name = "protocol-gpt";
  m.task = Task::kLanguageModel;
  m.blocks.push_back(std::make_shared<ProtocolEmbedding>(cfg.seq_len, cfg.d_model));
  for (int i = 0; i < cfg.layers; ++i) {
    m.blocks.push_back(std::make_shared<ProtocolBlock>(cfg.seq_len, cfg.d_model, cfg.heads));
  }
  m.blocks.push_back(std::make_shared<ProtocolHead>(cfg.seq_len, cfg.d_model));
  return m;
}

}  // namespace slowpipe::models
