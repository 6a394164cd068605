// The model registry and build_model. Built-in models are listed in one table
// here (no static-initialiser registration, which a static library may drop).
#include "models/registry.h"

#include <torch/torch.h>

#include <stdexcept>

#include "common/errors.h"
#include "models/checkpoint.h"
#include "models/model_limits.h"

namespace slowpipe::models {
namespace {

std::vector<ModelEntry>& registry() {
  static std::vector<ModelEntry> entries = {
      {"gpt", "GPT-style byte-level decoder LM: embedding, pre-LN transformer blocks, LM head",
       &build_gpt, {"model.layers", "model.d_model", "model.heads", "model.seq_len"},
       &footprint_gpt},
      {"cnn",
       "residual CNN for 28x28 images: stem conv, residual blocks (one stride-2), pool+linear",
       &build_cnn, {"model.layers", "model.channels", "data.classes", "data.sample_shape"},
       &footprint_cnn},
      {"mlp", "multi-layer perceptron: flatten+linear+ReLU blocks, linear head", &build_mlp,
       {"model.layers", "model.hidden", "data.classes", "data.sample_shape"}, &footprint_mlp},
  };
  return entries;
}

}  // namespace

const std::vector<ModelEntry>& model_registry() {
  return registry();
}

std::vector<std::string> model_names() {
  std::vector<std::string> out;
  for (const auto& e : registry()) out.push_back(e.name);
  return out;
}

void register_model(ModelEntry entry) {
  for (const auto& e : registry()) {
    if (e.name == entry.name) throw std::logic_error("model registered twice: " + entry.name);
  }
  registry().push_back(std::move(entry));
}

const ModelEntry& find_model(const std::string& name) {
  std::string known;
  for (const auto& e : registry()) {
    if (e.name == name) return e;
    known += (known.empty() ? "" : ", ") + e.name;
  }
  throw UsageError("unknown model '" + name + "' (model.name: one of " + known + ")");
}

Model build_model(const ModelConfig& cfg, const DatasetInfo& data, uint64_t seed) {
  const ModelEntry& entry = find_model(cfg.name);
  MemoryBudget budget;
  budget.data = &data;
  check_model_memory(cfg, budget);
  torch::manual_seed(seed);
  Model model = entry.build(cfg, data);
  model.name = entry.name;
  model.shape_config = shape_config(cfg, data);
  if (!cfg.init_from.empty()) load_checkpoint(model, cfg.init_from);
  return model;
}

}  // namespace slowpipe::models
