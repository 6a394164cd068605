// The built-in models' facts (see model_facts.h). The tensor leaving block k:
//   gpt: [B, T, C] for every block before the LM head (T = model.seq_len,
//        C = model.d_model);
//   cnn: the stem [B, c, H, W]; residual block i (0-based) [B, c, H, W] before
//        block layers/2 and [B, 2c, ceil(H/2), ceil(W/2)] from it on
//        (c = model.channels; H = W = 28, the 28x28 images the cnn is built for);
//   mlp: [B, model.hidden];
//   protocol-gpt: as gpt.
// Block numbering and shapes as docs/models.md and models/{gpt,cnn,mlp}.cpp.
#include "models/facts/model_facts.h"

#include <cmath>
#include <limits>

namespace slowpipe::models {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kImageSide = 28;  // the cnn's input images

double gpt_block_output(const ConfigNumber& number, int block) {
  const double layers = number("config.model.layers");
  if (std::isnan(layers) || block < 0 || block > layers) return kNaN;  // LM head: not sent
  return number("config.model.seq_len") * number("config.model.d_model");
}

double cnn_block_output(const ConfigNumber& number, int block) {
  const double layers = number("config.model.layers");
  if (std::isnan(layers) || block < 0 || block > layers) return kNaN;
  const double c = number("config.model.channels");
  const int residual = block - 1;  // -1: the stem
  const int down = static_cast<int>(layers) / 2;
  if (residual < down) return c * kImageSide * kImageSide;
  const double side = std::ceil(kImageSide / 2);
  return 2 * c * side * side;
}

double mlp_block_output(const ConfigNumber& number, int block) {
  const double layers = number("config.model.layers");
  if (std::isnan(layers) || block < 0 || block >= layers) return kNaN;
  return number("config.model.hidden");
}

void register_builtins() {
  register_model_facts({"gpt", "[B, seq_len, d_model] out of every block", &gpt_block_output});
  register_model_facts(
      {"cnn", "[B, c, 28, 28], then [B, 2c, 14, 14] from block layers/2", &cnn_block_output});
  register_model_facts({"mlp", "[B, hidden] out of every block", &mlp_block_output});
  register_model_facts(
      {"protocol-gpt", "[B, seq_len, d_model] out of every block", &gpt_block_output});
}

Registry<ModelFacts>& filled() {
  static LazyRegistry<ModelFacts> facts("model", &register_builtins);
  return facts.get();
}

}  // namespace

const Registry<ModelFacts>& model_facts_registry() {
  return filled();
}

void register_model_facts(ModelFacts facts) {
  filled().add(std::move(facts));
}

double block_output_elements(const std::string& model, const ConfigNumber& number, int block) {
  const ModelFacts* facts = model_facts_registry().find(model);
  return facts && facts->block_output_elements ? facts->block_output_elements(number, block) : kNaN;
}

}  // namespace slowpipe::models
