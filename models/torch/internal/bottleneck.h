// The learned bottlenecks of the `gpt` model (model.bottleneck,
// models/facts/bottleneck_spec.h; docs/models.md, "Learned bottlenecks").
//
// ResBM (after the authors' public code): the sender's last block ends in
// ResbmEncoder, the receiver's first block starts with ResbmDecoder, and only
// the r values per token between them cross the cut. Nothing crosses but
// the block outputs, so the pipeline needs no boundary map.
//
// Learned projection (after MAPL): a LearnedProjection per bottleneck, owned
// (as a submodule) by the block before it, applied by forward_stage through
// its BoundaryMap: the sender sends U^T (h - anchor(tokens)) [B, T, k], the
// receiver rebuilds U c + anchor(tokens) [B, T, C]. U [C, k] has orthonormal
// columns, kept so by the optimizer's Stiefel step (ParamRole::kStiefel).
// The receiver reads the sender's U and anchors, so in one process their
// gradient from both sides meets in one tensor; distributed runs refuse it
// (BoundaryMap::shared_parameters).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "models/torch/model.h"

namespace slowpipe::models {

// The sender's side: out [B, T, r] = h[..., :r] + W_enc silu(m), with h the
// residual stream after attention [B, T, C] and m the block's MLP output
// [B, T, C] (before its residual add). W_enc [r, C], no bias, N(0, 0.02).
// Each module here draws from a generator of its own seeded by `seed` (the
// rest of the model is drawn exactly as without bottlenecks).
class ResbmEncoderImpl : public torch::nn::Module {
 public:
  ResbmEncoderImpl(int64_t d_model, int64_t r, uint64_t seed);
  at::Tensor encode(const at::Tensor& h, const at::Tensor& m);
  const at::Tensor& weight() const { return enc_->weight; }

 private:
  int64_t r_;
  torch::nn::Linear enc_{nullptr};
};

// The receiver's side: decode(c) = relu(W_dec c) [B, T, C] feeds attention
// only; residual(c, a) = [c + a[..., :r], a[..., r:]] [B, T, C] is the
// residual stream after attention (the r values are its identity path).
// W_dec [C, r], no bias, N(0, 0.02).
class ResbmDecoderImpl : public torch::nn::Module {
 public:
  ResbmDecoderImpl(int64_t d_model, int64_t r, uint64_t seed);
  at::Tensor decode(const at::Tensor& c);
  at::Tensor residual(const at::Tensor& c, const at::Tensor& a) const;
  const at::Tensor& weight() const { return dec_->weight; }

 private:
  int64_t r_;
  torch::nn::Linear dec_{nullptr};
};

// U [C, k] (orthonormal columns: modified Gram-Schmidt, twice, in double, of
// N(0, 1) draws) and, with anchor rank A > 0,
// the factorised anchors anchor(t) = E[t] W: E [V, A] N(0, 0.02), W [A, C]
// zero, so training starts from the plain projection.
class LearnedProjectionImpl : public torch::nn::Module {
 public:
  LearnedProjectionImpl(int64_t d_model, int64_t k, int64_t vocab, int64_t anchor_rank,
                        uint64_t seed);
  // h [B, T, C], tokens int64 [B, T] -> [B, T, k]
  at::Tensor reduce(const at::Tensor& h, const at::Tensor& tokens) const;
  // c [B, T, k], tokens int64 [B, T] -> [B, T, C]
  at::Tensor expand(const at::Tensor& c, const at::Tensor& tokens) const;
  bool anchored() const { return anchor_tok_.defined(); }
  const at::Tensor& basis() const { return basis_; }
  const at::Tensor& anchor_tokens() const { return anchor_tok_; }
  const at::Tensor& anchor_lift() const { return anchor_lift_; }

 private:
  at::Tensor anchor(const at::Tensor& tokens) const;  // [B, T, C]
  at::Tensor basis_;                                  // U [C, k]
  at::Tensor anchor_tok_, anchor_lift_;               // E [V, A], W [A, C]; undefined when A = 0
};

// The BoundaryMap of one learned projection: its anchors need the token ids,
// counted at 2 bytes (uint16) per token each way; without anchors nothing
// crosses besides the k values.
class LearnedBoundary : public BoundaryMap {
 public:
  explicit LearnedBoundary(std::shared_ptr<LearnedProjectionImpl> p) : p_(std::move(p)) {}
  at::Tensor reduce(const at::Tensor& output, const at::Tensor& inputs) const override;
  at::Tensor expand(const at::Tensor& sent, const at::Tensor& inputs) const override;
  uint64_t side_bytes(const at::Tensor& inputs) const override;
  bool shared_parameters() const override { return true; }
  std::vector<at::Tensor> parameters() const override { return p_->parameters(); }

 private:
  std::shared_ptr<LearnedProjectionImpl> p_;
};

}  // namespace slowpipe::models
