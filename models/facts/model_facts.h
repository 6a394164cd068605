// What the layers above the models need to know about each model without
// building it or loading libtorch: the size of the tensor each block sends
// downstream, as the model builds it. The summary (study/summary/internal/summary_fp32.h) sizes
// the fp32 messages of a logged run from it; library slowpipe::model_facts is
// plain C++ so that the light `slowpipe` front can link it.
//
// The built-ins' facts live in model_facts.cpp, beside no torch code; a model
// added from outside gives its own in ModelEntry::block_output_elements
// (models/torch/model_registry.h), which register_model registers here. Leaves out the
// dtype (every boundary tensor is fp32) and the backward (same shape).
#pragma once

#include <functional>
#include <string>

#include "common/registry.h"

namespace slowpipe::models {

// A number of the logged config ("config.model.layers"); NaN when absent.
using ConfigNumber = std::function<double(const std::string& key)>;
// Elements per sample of the tensor leaving block `block` (0-based); NaN when
// that block's output is not sent (the LM head's logits), the block does not
// exist or a key is missing.
using BlockOutputFn = std::function<double(const ConfigNumber& number, int block)>;

struct ModelFacts {
  std::string name;         // the model.name it describes
  std::string description;  // one line
  BlockOutputFn block_output_elements;
};

// The built-ins (gpt, cnn, mlp) first, registered through register_model_facts
// on first use, then those added by register_model (every model, with or
// without a block_output_elements) / register_model_facts. model.name's
// choices are these names (model_config.cpp).
const Registry<ModelFacts>& model_facts_registry();
// An empty or duplicate name throws std::logic_error.
void register_model_facts(ModelFacts facts);

// The block output of model `model`; NaN for a model without facts.
double block_output_elements(const std::string& model, const ConfigNumber& number, int block);

}  // namespace slowpipe::models
