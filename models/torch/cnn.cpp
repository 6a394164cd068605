// A small residual CNN for 28x28 single-channel images (Fashion-MNIST), cut into
// blocks: Stem, L x ResidualBlock, Head.
//
// ResNet-style basic blocks (He et al. 2016): two 3x3 convolutions with a skip
// connection; block L/2 has stride 2 and doubles the width (1x1 projection on its
// skip path). Normalisation is GroupNorm, not BatchNorm: it is per sample, so a
// micro-batched pipeline computes exactly what the unsplit model computes, and
// AQ-SGD's per-sample activations do not depend on the batch. Left out: BatchNorm,
// max-pool stem, more than one down-sampling stage.
//
// Forward FLOPs per sample: 2 x MACs of the convolutions and the final linear.
#include <torch/torch.h>

#include <string>

#include "common/errors.h"
#include "models/torch/model_registry.h"

namespace slowpipe::models {
namespace {

int64_t groups_for(int64_t channels) {
  for (int64_t g : {8, 4, 2}) {
    if (channels % g == 0) return g;
  }
  return 1;
}

torch::nn::Conv2d conv(int64_t in, int64_t out, int64_t k, int64_t stride) {
  return torch::nn::Conv2d(
      torch::nn::Conv2dOptions(in, out, k).stride(stride).padding(k / 2).bias(false));
}

torch::nn::GroupNorm norm(int64_t channels) {
  return torch::nn::GroupNorm(torch::nn::GroupNormOptions(groups_for(channels), channels));
}

double conv_flops(int64_t in, int64_t out, int64_t k, int64_t hw_out) {
  return 2.0 * static_cast<double>(in * out * k * k) * static_cast<double>(hw_out * hw_out);
}

// float [B, C_in, H, W] -> float [B, C, H, W]
class Stem : public Block {
 public:
  Stem(int64_t in, int64_t out, int64_t hw) : Block("Stem") {
    conv_ = register_module("conv", conv(in, out, 3, 1));
    norm_ = register_module("norm", norm(out));
    flops_ = conv_flops(in, out, 3, hw);
  }
  at::Tensor forward(const at::Tensor& x) override { return torch::relu(norm_(conv_(x))); }
  double forward_flops_per_sample() const override { return flops_; }

 private:
  torch::nn::Conv2d conv_{nullptr};
  torch::nn::GroupNorm norm_{nullptr};
  double flops_ = 0;
};

// float [B, C_in, H, W] -> float [B, C_out, H/stride, W/stride]
class ResidualBlock : public Block {
 public:
  ResidualBlock(int64_t in, int64_t out, int64_t stride, int64_t hw_in) : Block("ResidualBlock") {
    const int64_t hw_out = (hw_in + stride - 1) / stride;
    conv1_ = register_module("conv1", conv(in, out, 3, stride));
    norm1_ = register_module("norm1", norm(out));
    conv2_ = register_module("conv2", conv(out, out, 3, 1));
    norm2_ = register_module("norm2", norm(out));
    flops_ = conv_flops(in, out, 3, hw_out) + conv_flops(out, out, 3, hw_out);
    if (stride != 1 || in != out) {
      skip_conv_ = register_module("skip_conv", conv(in, out, 1, stride));
      skip_norm_ = register_module("skip_norm", norm(out));
      flops_ += conv_flops(in, out, 1, hw_out);
    }
  }
  at::Tensor forward(const at::Tensor& x) override {
    auto h = torch::relu(norm1_(conv1_(x)));
    h = norm2_(conv2_(h));
    auto skip = skip_conv_ ? skip_norm_(skip_conv_(x)) : x;
    return torch::relu(h + skip);
  }
  double forward_flops_per_sample() const override { return flops_; }

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr}, skip_conv_{nullptr};
  torch::nn::GroupNorm norm1_{nullptr}, norm2_{nullptr}, skip_norm_{nullptr};
  double flops_ = 0;
};

// float [B, C, H, W] -> float [B, classes] logits (global average pool + linear)
class Head : public Block {
 public:
  Head(int64_t channels, int64_t classes) : Block("Head") {
    fc_ = register_module("fc", torch::nn::Linear(channels, classes));
    flops_ = 2.0 * static_cast<double>(channels * classes);
  }
  at::Tensor forward(const at::Tensor& x) override { return fc_(x.mean({2, 3})); }
  double forward_flops_per_sample() const override { return flops_; }

 private:
  torch::nn::Linear fc_{nullptr};
  double flops_ = 0;
};

}  // namespace

ModelFootprint footprint_cnn(const ModelConfig& cfg, const DatasetInfo& data) {
  // Mirrors build_cnn's loop; inputs of another shape are left to build_cnn's check.
  const bool square = data.sample_shape.size() == 3;
  const double in = square ? static_cast<double>(data.sample_shape[0]) : 1.0;
  int64_t hw = square ? data.sample_shape[1] : 28;
  double width = cfg.channels;
  const auto area = [](int64_t side) { return static_cast<double>(side * side); };
  ModelFootprint f;
  f.parameters = in * width * 9.0 + 2.0 * width;          // stem conv + GroupNorm
  f.activation_floats_per_sample = 3.0 * width * area(hw);  // conv, norm, relu outputs
  for (int i = 0; i < cfg.layers; ++i) {
    const bool down = (i == cfg.layers / 2);
    const double out = down ? 2.0 * width : width;
    const int64_t hw_out = down ? (hw + 1) / 2 : hw;
    f.parameters += width * out * 9.0 + out * out * 9.0 + 4.0 * out;
    if (down || width != out) f.parameters += width * out + 2.0 * out;  // skip projection
    f.activation_floats_per_sample += 4.0 * out * area(hw_out);
    hw = hw_out;
    width = out;
  }
  const auto classes = static_cast<double>(data.num_classes);
  f.parameters += width * classes + classes;
  f.activation_floats_per_sample += width + classes;
  return f;
}

Model build_cnn(const ModelConfig& cfg, const DatasetInfo& data) {
  if (data.task != Task::kClassification || data.sample_shape.size() != 3 ||
      data.sample_shape[1] != data.sample_shape[2]) {
    throw UsageError("model.name=cnn needs square images [C, H, W]; data set '" + data.name +
                     "' does not provide them (use data.name=fashion-mnist)");
  }
  const int64_t in = data.sample_shape[0];
  int64_t hw = data.sample_shape[1];
  int64_t width = cfg.channels;
  Model m;
  m.name = "cnn";
  m.task = Task::kClassification;
  m.blocks.push_back(std::make_shared<Stem>(in, width, hw));
  for (int i = 0; i < cfg.layers; ++i) {
    const bool down = (i == cfg.layers / 2);
    const int64_t out = down ? 2 * width : width;
    m.blocks.push_back(std::make_shared<ResidualBlock>(width, out, down ? 2 : 1, hw));
    if (down) hw = (hw + 1) / 2;
    width = out;
  }
  m.blocks.push_back(std::make_shared<Head>(width, data.num_classes));
  return m;
}

}  // namespace slowpipe::models
