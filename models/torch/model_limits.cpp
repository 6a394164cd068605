// Model sizes from the config alone. The per-model formulas live beside each
// model's blocks (footprint_gpt in gpt.cpp, ...); this file combines them with
// the budget and names the key to reduce.
#include "models/torch/model_limits.h"

#include <algorithm>
#include <cstdio>

#include "common/errors.h"
#include "common/units.h"
#include "models/facts/bottleneck_spec.h"
#include "models/torch/checkpoint.h"
#include "models/torch/internal/input_file.h"
#include "models/torch/model_registry.h"

namespace slowpipe::models {
namespace {

constexpr double kFloatBytes = 4.0;

const std::vector<std::string>& all_shape_keys() {
  static const std::vector<std::string> keys = {"model.layers",  "model.d_model",    "model.heads",
                                                "model.seq_len", "model.channels",   "model.hidden",
                                                "data.classes",  "data.sample_shape"};
  return keys;
}

const std::vector<std::string>& keys_of(const ModelEntry& entry) {
  return entry.shape_keys.empty() ? all_shape_keys() : entry.shape_keys;
}

// The int field behind a model.* shape key; nullptr for data.* keys.
int* int_field(ModelConfig& cfg, const std::string& key) {
  if (key == "model.layers") return &cfg.layers;
  if (key == "model.d_model") return &cfg.d_model;
  if (key == "model.heads") return &cfg.heads;
  if (key == "model.seq_len") return &cfg.seq_len;
  if (key == "model.channels") return &cfg.channels;
  if (key == "model.hidden") return &cfg.hidden;
  if (key == "model.subspace") return &cfg.subspace;
  if (key == "model.ffn") return &cfg.ffn;
  if (key == "model.vocab") return &cfg.vocab;
  return nullptr;
}

// model.subspace, model.ffn and model.vocab are shape keys only when set off
// their defaults (0, 0, 256), which are not recorded, so checkpoints written
// before the keys existed still load.
bool unset_optional(const std::string& key, int value) {
  return ((key == "model.subspace" || key == "model.ffn") && value == 0) ||
         (key == "model.vocab" && value == 256);
}

// The entry's default data set; without one, 1x28x28 images of 10 classes.
DatasetInfo default_data(const ModelEntry& entry, const ModelConfig& cfg) {
  if (entry.default_data) return entry.default_data(cfg);
  return DatasetInfo{"fashion-mnist", Task::kClassification, {1, 28, 28}, 10, ""};
}

std::string count_text(double n) {
  char buf[32];
  if (n >= 1e9) {
    std::snprintf(buf, sizeof buf, "%.1f G", n / 1e9);
  } else if (n >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.1f M", n / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f", n);
  }
  return buf;
}

}  // namespace

MemoryEstimate estimate_training_memory(const ModelConfig& cfg, const MemoryBudget& budget) {
  const ModelEntry& entry = find_model(cfg.name);
  MemoryEstimate e;
  if (!entry.footprint) return e;
  const DatasetInfo data = budget.data != nullptr ? *budget.data : default_data(entry, cfg);
  const ModelFootprint f = entry.footprint(cfg, data);
  e.parameters = f.parameters;
  e.weight_bytes = 2.0 * kFloatBytes * f.parameters * std::max(1, budget.replicas);
  e.activation_bytes = kFloatBytes * f.activation_floats_per_sample *
                       static_cast<double>(std::max<int64_t>(1, budget.batch_samples));
  return e;
}

void check_vocab(const ModelConfig& cfg, const DatasetInfo& data) {
  if (data.num_classes > cfg.vocab) {
    throw UsageError("data set '" + data.name + "' has token ids up to " +
                     std::to_string(data.num_classes - 1) + ", more than model.vocab=" +
                     std::to_string(cfg.vocab) + " holds (ids 0.." + std::to_string(cfg.vocab - 1) +
                     "); set model.vocab to at least " + std::to_string(data.num_classes));
  }
}

int64_t model_vocab(const ModelConfig& cfg) {
  const DatasetInfo data = default_data(find_model(cfg.name), cfg);
  return data.task == Task::kLanguageModel ? data.num_classes : 0;
}

std::vector<std::pair<std::string, std::string>> shape_config(const ModelConfig& cfg,
                                                              const DatasetInfo& data) {
  std::vector<std::pair<std::string, std::string>> out;
  ModelConfig copy = cfg;
  for (const auto& key : keys_of(find_model(cfg.name))) {
    if (const int* v = int_field(copy, key)) {
      if (!unset_optional(key, *v)) out.emplace_back(key, std::to_string(*v));
    } else if (key == "model.bottleneck") {
      // Recorded only when set, in its canonical form (every bottleneck's place).
      if (!cfg.bottleneck.empty())
        out.emplace_back(key, parse_bottleneck(cfg.bottleneck, cfg.layers, cfg.d_model).text());
    } else if (key == "data.classes") {
      out.emplace_back(key, std::to_string(data.num_classes));
    } else if (key == "data.sample_shape") {
      std::string s;
      for (int64_t d : data.sample_shape) s += (s.empty() ? "" : "x") + std::to_string(d);
      out.emplace_back(key, s);
    }
  }
  return out;
}

void check_model_memory(const ModelConfig& cfg, const MemoryBudget& budget) {
  const double memory =
      static_cast<double>(budget.memory_bytes > 0 ? budget.memory_bytes : physical_memory_bytes());
  const MemoryEstimate e = estimate_training_memory(cfg, budget);
  if (e.total_bytes() <= memory) return;
  // Name the key whose halving saves the most.
  const ModelEntry& entry = find_model(cfg.name);
  std::string culprit, shape;
  double best = e.total_bytes();
  for (const auto& key : keys_of(entry)) {
    ModelConfig halved = cfg;
    int* v = int_field(halved, key);
    if (v == nullptr || unset_optional(key, *v)) continue;
    shape += (shape.empty() ? "" : ", ") + key + "=" + std::to_string(*v);
    if (*v < 2) continue;
    *v /= 2;
    const double total = estimate_training_memory(halved, budget).total_bytes();
    if (total < best) {
      best = total;
      culprit = key;
    }
  }
  ModelConfig copy = cfg;
  const std::string what = culprit.empty()
                               ? "model.name=" + cfg.name
                               : culprit + "=" + std::to_string(*int_field(copy, culprit));
  throw UsageError(what + " is too large for this machine: model.name=" + cfg.name + " with " +
                   shape + " has " + count_text(e.parameters) + " parameters and needs at least " +
                   format_bytes(e.total_bytes()) + " to train (weights and gradients " +
                   format_bytes(e.weight_bytes) + ", activations of " +
                   std::to_string(std::max<int64_t>(1, budget.batch_samples)) + " samples " +
                   format_bytes(e.activation_bytes) + "), more than its " + format_bytes(memory) +
                   " of memory" + (culprit.empty() ? "" : "; reduce " + culprit));
}

void check_model_keys(const ModelConfig& cfg) {
  const auto& keys = keys_of(find_model(cfg.name));
  if (cfg.subspace != 0 && std::find(keys.begin(), keys.end(), "model.subspace") == keys.end()) {
    throw UsageError("model.subspace=" + std::to_string(cfg.subspace) +
                     " applies to a model with a residual stream (gpt, protocol-gpt), not "
                     "model.name=" +
                     cfg.name + " (leave it 0)");
  }
  if (cfg.ffn != 0 && std::find(keys.begin(), keys.end(), "model.ffn") == keys.end()) {
    throw UsageError("model.ffn=" + std::to_string(cfg.ffn) +
                     " applies to a GPT (gpt, protocol-gpt: its MLP width), not model.name=" +
                     cfg.name + " (leave it 0)");
  }
  if (cfg.vocab != 256 && std::find(keys.begin(), keys.end(), "model.vocab") == keys.end()) {
    throw UsageError("model.vocab=" + std::to_string(cfg.vocab) +
                     " applies to a language model (gpt, protocol-gpt), not model.name=" +
                     cfg.name + " (leave it 256)");
  }
  if (!cfg.bottleneck.empty()) {
    if (std::find(keys.begin(), keys.end(), "model.bottleneck") == keys.end()) {
      throw UsageError("model.bottleneck=" + cfg.bottleneck + " applies to model.name=gpt, not " +
                       cfg.name + " (leave it empty)");
    }
    parse_bottleneck(cfg.bottleneck, cfg.layers, cfg.d_model);  // UsageError when malformed
  }
  if (cfg.subspace > cfg.d_model) {
    throw UsageError("model.subspace=" + std::to_string(cfg.subspace) +
                     " must not exceed model.d_model=" + std::to_string(cfg.d_model));
  }
}

void validate_model_config(const ModelConfig& cfg, const MemoryBudget& budget) {
  check_model_keys(cfg);
  check_model_memory(cfg, budget);
  if (!cfg.init_from.empty()) check_checkpoint_config(cfg, cfg.init_from);
}

}  // namespace slowpipe::models
