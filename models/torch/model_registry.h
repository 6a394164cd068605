// The model registry: name -> builder + one-line description. The same names
// appear in the CLI (model.name), the config files, the HDF5 attributes and the
// plot labels.
//
// build_model() seeds libtorch and then builds every block of the model in order,
// so one seed gives the same parameters whatever cut is applied later, and loads
// model.init_from when set (fine-tuning).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/registry.h"
#include "models/torch/dataset.h"
#include "models/torch/model.h"
#include "models/facts/model_config.h"
#include "models/facts/model_facts.h"

namespace slowpipe::models {

// Builds every block of a model. The RNG is already seeded; builders must not
// reseed. Throws UsageError when the config or the data set does not fit.
using ModelBuilder = std::function<Model(const ModelConfig&, const DatasetInfo&)>;

// Parameter count and activation memory of a config, computed from the config
// alone (nothing is allocated): see models/torch/model_limits.h.
struct ModelFootprint {
  double parameters = 0;                    // scalars, exact for the built-in models
  double activation_floats_per_sample = 0;  // lower bound of what backward keeps
};
using FootprintFn = std::function<ModelFootprint(const ModelConfig&, const DatasetInfo&)>;
using DefaultDataFn = std::function<DatasetInfo(const ModelConfig&)>;

struct ModelEntry {
  std::string name;
  std::string description;  // one line
  ModelBuilder build;
  // The keys that fix the parameters' shapes ("model.layers", "data.classes",
  // ...), recorded in checkpoints and compared on load; empty = every model.*
  // shape key and both data keys (see models/torch/model_limits.h).
  std::vector<std::string> shape_keys = {};
  // Optional: lets validate_model_config refuse a config too large for memory.
  FootprintFn footprint = nullptr;
  // The data set a config of this model is sized for when none is given (the
  // memory estimate before data is loaded); nullptr: 1x28x28 images, 10
  // classes (Fashion-MNIST).
  DefaultDataFn default_data = nullptr;
  // Optional, for a model added from outside: the tensor each block sends, for
  // the summary's fp32 sizes (models/facts/model_facts.h; register_model registers
  // it there). Without it the summary's compression ratio is missing. The
  // built-ins' are in model_facts.cpp, which links no libtorch.
  BlockOutputFn block_output_elements = nullptr;
};

// Every registered model, built-ins first ("gpt", "cnn", "mlp", added through
// register_model on first use), then those added by register_model, in
// registration order.
const Registry<ModelEntry>& model_registry();
std::vector<std::string> model_names();
// Adds a model (e.g. from an experiment's own source file). An empty or
// duplicate name throws std::logic_error.
void register_model(ModelEntry entry);
// Throws UsageError naming model.name for an unknown name, listing the known ones.
const ModelEntry& find_model(const std::string& name);

// Checks the config fits this machine (validate_model_config), seeds libtorch
// with `seed`, builds `cfg.name` for `data`, records the model's shape config,
// and, when cfg.init_from is set, loads that checkpoint over the fresh parameters.
Model build_model(const ModelConfig& cfg, const DatasetInfo& data, uint64_t seed);

// The built-in builders (models/torch/gpt.cpp, cnn.cpp, mlp.cpp).
Model build_gpt(const ModelConfig& cfg, const DatasetInfo& data);
Model build_cnn(const ModelConfig& cfg, const DatasetInfo& data);
Model build_mlp(const ModelConfig& cfg, const DatasetInfo& data);
ModelFootprint footprint_gpt(const ModelConfig& cfg, const DatasetInfo& data);
// Protocol NanoGPT's GPT at byte scale (models/torch/gpt_protocol.cpp), and its
// half-truncated rotary embedding of [B, T, H, D] queries or keys.
Model build_protocol_gpt(const ModelConfig& cfg, const DatasetInfo& data);
ModelFootprint footprint_protocol_gpt(const ModelConfig& cfg, const DatasetInfo& data);
at::Tensor protocol_rotary(const at::Tensor& x);
ModelFootprint footprint_cnn(const ModelConfig& cfg, const DatasetInfo& data);
ModelFootprint footprint_mlp(const ModelConfig& cfg, const DatasetInfo& data);

}  // namespace slowpipe::models
