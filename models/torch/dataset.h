// Data sets: every sample has a stable integer id (its index in its split), and
// every batch carries the ids, because AQ-SGD keys its per-sample buffers by them.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/torch/model.h"

namespace slowpipe::models {

enum class Split { kTrain, kValidation };

struct Batch {
  at::Tensor inputs;   // LM: int64 [B, T] bytes; images: float [B, 1, 28, 28]
  at::Tensor targets;  // LM: int64 [B, T] next bytes; images: int64 [B] labels
  at::Tensor ids;      // int64 [B] sample ids within the split
  int64_t size() const { return ids.defined() ? ids.size(0) : 0; }
};

struct DatasetInfo {
  std::string name;
  Task task = Task::kClassification;
  std::vector<int64_t> sample_shape;  // shape of one input sample
  int64_t num_classes = 0;            // classes, or vocabulary size for LM (256)
  std::string source;                 // the file(s) read, for the run log
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual DatasetInfo info() const = 0;
  virtual int64_t size(Split split) const = 0;
  // Gathers samples by index (each index in [0, size(split))).
  virtual Batch get(Split split, const std::vector<int64_t>& indices) const = 0;
};

}  // namespace slowpipe::models
