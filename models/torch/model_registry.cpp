// The model registry and build_model. Built-in models are registered here on
// first use, through register_model (no static-initialiser registration, which
// a static library may drop).
#include "models/torch/model_registry.h"

#include <torch/torch.h>

#include "common/errors.h"
#include "models/torch/checkpoint.h"
#include "models/torch/model_limits.h"

namespace slowpipe::models {
namespace {

// The built-ins, registered as any other model is.
void register_builtins() {
  const auto images = [](const ModelConfig&) {
    return DatasetInfo{"fashion-mnist", Task::kClassification, {1, 28, 28}, 10, ""};
  };
  register_model({"gpt",
                  "GPT-style byte-level decoder LM: embedding, pre-LN transformer blocks, LM head",
                  &build_gpt,
                  {"model.layers", "model.d_model", "model.heads", "model.seq_len",
                   "model.subspace", "model.vocab", "model.ffn", "model.bottleneck"},
                  &footprint_gpt,
                  [](const ModelConfig& cfg) {
                    return DatasetInfo{"text", Task::kLanguageModel, {cfg.seq_len}, cfg.vocab, ""};
                  }});
  register_model(
      {"cnn",
       "residual CNN for 28x28 images: stem conv, residual blocks (one stride-2), pool+linear",
       &build_cnn,
       {"model.layers", "model.channels", "data.classes", "data.sample_shape"},
       &footprint_cnn,
       images});
  register_model({"mlp",
                  "multi-layer perceptron: flatten+linear+ReLU blocks, linear head",
                  &build_mlp,
                  {"model.layers", "model.hidden", "data.classes", "data.sample_shape"},
                  &footprint_mlp,
                  images});
  register_model({"protocol-gpt",
                  "Protocol NanoGPT's GPT at byte scale: RMSNorm, QK-norm, rotary, ReLU^2 MLP, "
                  "zero-initialised output projections, soft-capped logits",
                  &build_protocol_gpt,
                  {"model.layers", "model.d_model", "model.heads", "model.seq_len",
                   "model.subspace", "model.ffn", "model.vocab"},
                  &footprint_protocol_gpt,
                  [](const ModelConfig& cfg) {
                    return DatasetInfo{"text", Task::kLanguageModel, {cfg.seq_len}, cfg.vocab, ""};
                  }});
}

// The registry with the built-ins in it: they are registered on first use,
// before any other model; register_model reaches here again while they are.
Registry<ModelEntry>& filled() {
  static LazyRegistry<ModelEntry> models("model", &register_builtins);
  return models.get();
}

}  // namespace

const Registry<ModelEntry>& model_registry() {
  return filled();
}

std::vector<std::string> model_names() {
  return filled().names();
}

void register_model(ModelEntry entry) {
  const ModelEntry& added = filled().add(std::move(entry));
  // Every model has facts (model.name's choices are their names); the
  // built-ins' are in model_facts.cpp already.
  if (added.block_output_elements || model_facts_registry().find(added.name) == nullptr)
    register_model_facts({added.name, added.description, added.block_output_elements});
}

const ModelEntry& find_model(const std::string& name) {
  return filled().at("model.name", name);
}

Model build_model(const ModelConfig& cfg, const DatasetInfo& data, uint64_t seed) {
  const ModelEntry& entry = find_model(cfg.name);
  check_model_keys(cfg);
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
