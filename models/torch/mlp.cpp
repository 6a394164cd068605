// A multi-layer perceptron for classification, cut into blocks: L hidden blocks
// (the first flattens its input) and a linear head. The simplest model with a
// cut: useful for fast tests and for teaching. Left out: normalisation, dropout.
//
// Forward FLOPs per sample: 2 x MACs of each linear layer.
#include <torch/torch.h>

#include <string>

#include "common/errors.h"
#include "models/torch/model_registry.h"

namespace slowpipe::models {
namespace {

// float [B, ...] -> float [B, out] (flatten, linear, optional ReLU)
class DenseBlock : public Block {
 public:
  DenseBlock(int64_t in, int64_t out, bool relu, const std::string& kind)
      : Block(kind), relu_(relu), flops_(2.0 * static_cast<double>(in * out)) {
    fc_ = register_module("fc", torch::nn::Linear(in, out));
  }
  at::Tensor forward(const at::Tensor& x) override {
    auto h = fc_(x.flatten(1));
    return relu_ ? torch::relu(h) : h;
  }
  double forward_flops_per_sample() const override { return flops_; }

 private:
  bool relu_;
  double flops_;
  torch::nn::Linear fc_{nullptr};
};

}  // namespace

ModelFootprint footprint_mlp(const ModelConfig& cfg, const DatasetInfo& data) {
  double in = 1;
  for (int64_t d : data.sample_shape) in *= static_cast<double>(d);
  const double h = cfg.hidden, classes = static_cast<double>(data.num_classes);
  ModelFootprint f;
  f.parameters = in * h + h + (cfg.layers - 1) * (h * h + h) + h * classes + classes;
  f.activation_floats_per_sample = in + 2.0 * h * cfg.layers + classes;  // linear + ReLU outputs
  return f;
}

Model build_mlp(const ModelConfig& cfg, const DatasetInfo& data) {
  if (data.task != Task::kClassification || data.sample_shape.empty()) {
    throw UsageError("model.name=mlp needs a classification data set; data set '" + data.name +
                     "' is not one (use data.name=fashion-mnist)");
  }
  int64_t in = 1;
  for (int64_t d : data.sample_shape) in *= d;
  Model m;
  m.name = "mlp";
  m.task = Task::kClassification;
  for (int i = 0; i < cfg.layers; ++i) {
    m.blocks.push_back(std::make_shared<DenseBlock>(in, cfg.hidden, /*relu=*/true, "Dense"));
    in = cfg.hidden;
  }
  m.blocks.push_back(std::make_shared<DenseBlock>(in, data.num_classes, /*relu=*/false, "Head"));
  return m;
}

}  // namespace slowpipe::models
