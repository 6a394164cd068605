// The learned bottlenecks' modules; see models/torch/internal/bottleneck.h and
// docs/models.md, "Learned bottlenecks".
#include "models/torch/internal/bottleneck.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

namespace slowpipe::models {
namespace {

constexpr double kProjectionInitStd = 0.02;  // as every other GPT weight (models/torch/gpt.cpp)

// Every bottleneck draws from a generator of its own, so the rest of the
// model is drawn exactly as without bottlenecks (same run.seed, same draws).
at::Generator own_generator(uint64_t seed) {
  return at::detail::createCPUGenerator(seed);
}

torch::nn::Linear plain_linear(int64_t in, int64_t out, uint64_t seed) {
  // Linear's constructor draws its default initialisation from libtorch's
  // global generator: put that generator back as it was.
  at::Generator global = at::detail::getDefaultCPUGenerator();
  const at::Tensor state = global.get_state();
  torch::nn::Linear l(torch::nn::LinearOptions(in, out).bias(false));
  global.set_state(state);
  torch::NoGradGuard g;
  l->weight.normal_(0.0, kProjectionInitStd, own_generator(seed));
  return l;
}

// [C, k] orthonormal columns: modified Gram-Schmidt, twice, in double, of
// N(0, 1) draws.
at::Tensor orthonormal_columns(int64_t rows, int64_t cols, const at::Generator& gen) {
  at::Tensor a = at::randn({rows, cols}, gen, torch::kDouble);
  for (int pass = 0; pass < 2; ++pass) {
    for (int64_t j = 0; j < cols; ++j) {
      at::Tensor v = a.select(1, j);
      for (int64_t i = 0; i < j; ++i) {
        const at::Tensor u = a.select(1, i);
        v.sub_(u * u.dot(v));
      }
      v.div_(v.norm());
    }
  }
  return a.to(torch::kFloat);
}

}  // namespace

ResbmEncoderImpl::ResbmEncoderImpl(int64_t d_model, int64_t r, uint64_t seed) : r_(r) {
  enc_ = register_module("enc", plain_linear(d_model, r, seed));  // [r, C]
}

at::Tensor ResbmEncoderImpl::encode(const at::Tensor& h, const at::Tensor& m) {
  return h.narrow(-1, 0, r_) + enc_(torch::silu(m));  // [B, T, r]
}

ResbmDecoderImpl::ResbmDecoderImpl(int64_t d_model, int64_t r, uint64_t seed) : r_(r) {
  dec_ = register_module("dec", plain_linear(r, d_model, seed));  // [C, r]
}

at::Tensor ResbmDecoderImpl::decode(const at::Tensor& c) {
  return torch::relu(dec_(c));  // [B, T, C]
}

at::Tensor ResbmDecoderImpl::residual(const at::Tensor& c, const at::Tensor& a) const {
  const int64_t rest = a.size(-1) - r_;
  return torch::cat({a.narrow(-1, 0, r_) + c, a.narrow(-1, r_, rest)}, -1);  // [B, T, C]
}

LearnedProjectionImpl::LearnedProjectionImpl(int64_t d_model, int64_t k, int64_t vocab,
                                             int64_t anchor_rank, uint64_t seed) {
  at::Generator gen = own_generator(seed);
  basis_ = register_parameter("U", orthonormal_columns(d_model, k, gen));  // [C, k]
  if (anchor_rank > 0) {
    anchor_tok_ =
        register_parameter("anchor_tok", at::randn({vocab, anchor_rank}, gen, torch::kFloat) *
                                             kProjectionInitStd);  // [V, A]
    anchor_lift_ =
        register_parameter("anchor_lift", torch::zeros({anchor_rank, d_model}));  // [A, C]
  }
}

at::Tensor LearnedProjectionImpl::anchor(const at::Tensor& tokens) const {
  return torch::matmul(anchor_tok_.index_select(0, tokens.reshape({-1})), anchor_lift_)
      .view({tokens.size(0), tokens.size(1), anchor_lift_.size(1)});  // [B, T, C]
}

at::Tensor LearnedProjectionImpl::reduce(const at::Tensor& h, const at::Tensor& tokens) const {
  const at::Tensor centred = anchored() ? h - anchor(tokens) : h;
  return torch::matmul(centred, basis_);  // [B, T, k]
}

at::Tensor LearnedProjectionImpl::expand(const at::Tensor& c, const at::Tensor& tokens) const {
  const at::Tensor lifted = torch::matmul(c, basis_.t());  // [B, T, C]
  return anchored() ? lifted + anchor(tokens) : lifted;
}

at::Tensor LearnedBoundary::reduce(const at::Tensor& output, const at::Tensor& inputs) const {
  return p_->reduce(output, inputs);
}

at::Tensor LearnedBoundary::expand(const at::Tensor& sent, const at::Tensor& inputs) const {
  return p_->expand(sent, inputs);
}

uint64_t LearnedBoundary::side_bytes(const at::Tensor& inputs) const {
  return p_->anchored() ? 2 * static_cast<uint64_t>(inputs.numel()) : 0;
}

}  // namespace slowpipe::models
