// What a model config means in sizes, known before anything is built: the keys
// that fix its parameters' shapes (recorded in checkpoints), its parameter
// count and activation memory (from each model's registered footprint), and the
// up-front check that refuses a config this machine cannot hold, naming the key
// to reduce (`model.d_model = 65536` fails here, not in bad_alloc).
//
// The memory estimate is deliberately a lower bound, so that no config that
// could train is refused: fp32 weights and gradients (optimizer moments left
// out) for every replica, plus the activations that backward must keep for the
// samples of one batch (attention scores, block inputs and outputs; transient
// buffers left out). It is compared with physical memory, not with what is free.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "models/torch/dataset.h"
#include "models/facts/model_config.h"

namespace slowpipe::models {

struct MemoryBudget {
  int64_t batch_samples = 1;          // samples whose activations are held at once
  int replicas = 1;                   // full copies of the model (pipeline.replicas)
  uint64_t memory_bytes = 0;          // 0 = this machine's physical memory
  const DatasetInfo* data = nullptr;  // nullptr: the model's default_data (model_registry.h)
};

struct MemoryEstimate {
  double parameters = 0;        // scalars
  double weight_bytes = 0;      // weights + gradients, fp32, all replicas
  double activation_bytes = 0;  // batch_samples x activations kept per sample
  double total_bytes() const { return weight_bytes + activation_bytes; }
};

// The estimate for a config; all zero for a model registered without a footprint.
MemoryEstimate estimate_training_memory(const ModelConfig& cfg, const MemoryBudget& budget = {});

// The vocabulary size of a language model (its default data set's classes,
// ModelEntry::default_data: 256 for the byte-level GPTs), 0 for a model of
// images. Token data sets read ids against it (data.name = tokens).
int64_t model_vocab(const ModelConfig& cfg);

// A language model against its data: a data set with more classes (token ids)
// than model.vocab is refused (UsageError), naming the key to raise.
void check_vocab(const ModelConfig& cfg, const DatasetInfo& data);

// The model's shape keys (ModelEntry::shape_keys) with their values in `cfg`
// and `data`: {"model.d_model", "128"}, {"data.classes", "10"},
// {"data.sample_shape", "1x28x28"}; model.subspace only when it is not 0.
std::vector<std::pair<std::string, std::string>> shape_config(const ModelConfig& cfg,
                                                              const DatasetInfo& data);

// Throws UsageError when the estimate exceeds the memory: the message names the
// key whose halving saves the most ("model.d_model=65536 is too large ..."),
// the model's shape keys, the estimate and the memory.
void check_model_memory(const ModelConfig& cfg, const MemoryBudget& budget = {});

// Keys set for a model that does not have them: model.subspace other than 0
// for a model whose shape keys lack it, or larger than model.d_model. UsageError.
void check_model_keys(const ModelConfig& cfg);

// Every model.* check that needs no data, for the trainer to call before any
// data is loaded or any log is created: a known model.name, check_model_keys,
// check_model_memory,
// and, when model.init_from is set, that the file is a slowpipe model
// checkpoint written for the same model.name and model.* shape keys (its header
// only: the checksum is verified when the checkpoint is loaded). UsageError or
// DataError naming the key and file, as load_checkpoint would throw.
void validate_model_config(const ModelConfig& cfg, const MemoryBudget& budget = {});

}  // namespace slowpipe::models
