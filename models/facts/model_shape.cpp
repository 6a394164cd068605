// The shape presets: GPT-2 XL and a DeBERTa-v2-xxlarge-like encoder (48
// layers each, 8 stages, micro-batch 1, batch 32, layers split evenly), and
// GPT-2 small. The AQ-SGD reference set-ups (uneven GPT-2 XL split, DeBERTa at
// seq 256 and micro-batch 8) are the `timing.preset`s in whatif/timing_preset.cpp
// (docs/netmodel.md, "The AQ-SGD presets").
#include "models/facts/model_shape.h"

#include "common/errors.h"

namespace slowpipe::models {

const Registry<ModelShape>& model_shapes() {
  static const Registry<ModelShape> shapes = [] {
    Registry<ModelShape> v("model shape");
    ModelShape gpt;
    gpt.name = "gpt2-xl";
    gpt.description =
        "GPT-2 XL (1.5B): 48 layers, d 1600, seq 1024, 8 stages, micro-batch 1, batch 32";
    v.add(gpt);
    ModelShape deb;
    deb.name = "deberta-xxl";
    deb.description =
        "DeBERTa-v2-xxlarge-like encoder (1.5B): 48 layers, d 1536, seq 512, disentangled "
        "attention, 8 stages, micro-batch 1, batch 32";
    deb.hidden = 1536;
    deb.seq = 512;
    deb.vocab = 128100;
    deb.score_terms = 3;
    deb.lm_head = false;
    v.add(deb);
    ModelShape small;
    small.name = "gpt2-small";
    small.description =
        "GPT-2 small (124M): 12 layers, d 768, seq 1024, 4 stages, micro-batch 1, batch 8";
    small.layers = 12;
    small.hidden = 768;
    small.stages = 4;
    small.batch = 8;
    v.add(small);
    return v;
  }();
  return shapes;
}

const ModelShape& find_model_shape(const std::string& key, const std::string& name) {
  return model_shapes().at(key, name);
}

void check_model_shape(const ModelShape& m) {
  if (m.stages < 1 || m.microbatch_size < 1 || m.batch < m.microbatch_size ||
      m.batch % m.microbatch_size != 0 || m.stages > m.layers) {
    throw UsageError("model shape '" + m.name +
                     "': need 1 <= stages <= layers and batch a multiple of the micro-batch size");
  }
  if (m.stage_layers.empty()) return;
  int sum = 0;
  bool positive = true;
  for (int l : m.stage_layers) {
    sum += l;
    positive = positive && l >= 1;
  }
  if (static_cast<int>(m.stage_layers.size()) != m.stages || sum != m.layers || !positive) {
    throw UsageError("model shape '" + m.name + "': layers per stage " + describe_stage_layers(m) +
                     " must give every one of the " + std::to_string(m.stages) +
                     " stages at least one layer and sum to " + std::to_string(m.layers));
  }
}

std::string describe_stage_layers(const ModelShape& m) {
  std::string s;
  const bool given = !m.stage_layers.empty();
  const int n = given ? static_cast<int>(m.stage_layers.size()) : m.stages;
  for (int i = 0; i < n; ++i) {
    const int l = given ? m.stage_layers[static_cast<size_t>(i)] : layers_of_stage(m, i);
    s += (s.empty() ? "" : ",") + std::to_string(l);
  }
  return s;
}

int layers_of_stage(const ModelShape& m, int stage) {
  if (!m.stage_layers.empty()) return m.stage_layers.at(static_cast<size_t>(stage));
  const int base = m.layers / m.stages, extra = m.layers % m.stages;
  return base + (stage < extra ? 1 : 0);
}

namespace {

// Weights per layer: attention (QKV and output) and MLP. Without grouped
// queries or a gated MLP the expressions stay the plain ones (the same bits).
double layer_weights(const ModelShape& m) {
  const double d = static_cast<double>(m.hidden);
  if (m.kv_heads <= 0 && !m.gated_mlp) {
    return m.mlp_width > 0 ? 4.0 * d * d + 2.0 * d * static_cast<double>(m.mlp_width)
                           : (4.0 + 2.0 * m.mlp_ratio) * d * d;
  }
  const double attention = 2.0 * d * d + 2.0 * d * static_cast<double>(kv_width(m));
  return attention + (m.gated_mlp ? 3.0 : 2.0) * d * static_cast<double>(mlp_width(m));
}

}  // namespace

double forward_flops(const ModelShape& m, int stage) {
  const double d = static_cast<double>(m.hidden), t = static_cast<double>(m.seq);
  // The ratio's expression unchanged when no width is given (the same bits).
  const double mlp =
      m.mlp_width > 0 ? 2.0 * d * static_cast<double>(m.mlp_width) : 2.0 * m.mlp_ratio * d * d;
  const double weights = m.kv_heads <= 0 && !m.gated_mlp ? 4.0 * d * d + mlp : layer_weights(m);
  const double per_token_layer = 2.0 * weights + 2.0 * t * d * (1 + m.score_terms);
  double per_token = per_token_layer * layers_of_stage(m, stage);
  if (m.lm_head && stage == m.stages - 1) per_token += 2.0 * d * static_cast<double>(m.vocab);
  const double flops = per_token * t * m.microbatch_size;
  return m.tensor_parallel > 1 ? flops / m.tensor_parallel : flops;
}

double stage_parameters(const ModelShape& m, int stage) {
  const double d = static_cast<double>(m.hidden);
  double p = layer_weights(m) * layers_of_stage(m, stage);
  if (stage == 0) p += d * static_cast<double>(m.vocab + m.seq);
  return m.tensor_parallel > 1 ? p / m.tensor_parallel : p;
}

namespace {
constexpr int kParametrisedPerLayer = 6;  // LayerNorm x 2, QKV, projection, MLP x 2
}  // namespace

int forward_kernels(const ModelShape& m, int stage) {
  int k = 2 * (kParametrisedPerLayer + (m.gated_mlp ? 1 : 0)) * layers_of_stage(m, stage);
  if (stage == 0) k += 2 * 2;
  if (m.lm_head && stage == m.stages - 1) k += 2 * 2;
  return k;
}

int parameter_tensors(const ModelShape& m, int stage) {
  int n = 2 * (kParametrisedPerLayer + (m.gated_mlp ? 1 : 0)) * layers_of_stage(m, stage);
  if (stage == 0) n += 2;
  if (m.lm_head && stage == m.stages - 1) n += 2;
  return n;
}

}  // namespace slowpipe::models
