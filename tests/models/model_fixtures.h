// Small model configurations and data-set descriptions shared by the model tests.
#pragma once

#include <torch/types.h>  // tensor factories (randint, randn, arange)
#include <torch/utils.h>  // manual_seed

#include "models/facts/model_config.h"
#include "models/torch/dataset.h"
#include "models/torch/model.h"

namespace slowpipe::models::testing {

inline DatasetInfo text_info(int64_t seq_len) {
  return DatasetInfo{"text", Task::kLanguageModel, {seq_len}, 256, "mem"};
}
inline DatasetInfo image_info() {
  return DatasetInfo{"fashion-mnist", Task::kClassification, {1, 28, 28}, 10, "mem"};
}
inline ModelConfig tiny_gpt() {
  ModelConfig c;
  c.layers = 2;
  c.d_model = 32;
  c.heads = 4;
  c.seq_len = 16;
  return c;
}
inline ModelConfig tiny_cnn() {
  ModelConfig c;
  c.name = "cnn";
  c.layers = 2;
  c.channels = 8;
  return c;
}
inline ModelConfig tiny_mlp() {
  ModelConfig c;
  c.name = "mlp";
  c.layers = 2;
  c.hidden = 32;
  return c;
}
// A random batch for a model: bytes for the LM, images and labels otherwise.
inline Batch random_batch(Task task, int64_t b, int64_t seq_len, uint64_t seed) {
  torch::manual_seed(seed);
  Batch batch;
  if (task == Task::kLanguageModel) {
    batch.inputs = torch::randint(0, 256, {b, seq_len}, torch::kLong);
    batch.targets = torch::randint(0, 256, {b, seq_len}, torch::kLong);
  } else {
    batch.inputs = torch::randn({b, 1, 28, 28});
    batch.targets = torch::randint(0, 10, {b}, torch::kLong);
  }
  batch.ids = torch::arange(b, torch::kLong);
  return batch;
}

// Bitwise the same parameters, in the same order.
inline bool same_params(const Model& a, const Model& b) {
  auto pa = a.parameters(), pb = b.parameters();
  if (pa.size() != pb.size()) return false;
  for (size_t i = 0; i < pa.size(); ++i) {
    if (!pa[i].equal(pb[i])) return false;
  }
  return true;
}

}  // namespace slowpipe::models::testing
