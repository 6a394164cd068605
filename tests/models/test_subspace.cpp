// Subspace-constrained GPT (model.subspace = k; models/torch/internal/subspace.h): the fixed
// basis and fixed embedding part, k = d_model against the unconstrained model,
// the residual at every cut inside the subspace, the boundary map's round
// trip, parameter counts, checkpoints and refused configurations.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "common/errors.h"
#include "matchers.h"
#include "model_fixtures.h"
#include "models/torch/checkpoint.h"
#include "models/torch/model_limits.h"
#include "models/torch/model_registry.h"
#include "models/torch/internal/subspace.h"
#include "temp_files.h"

namespace sm = slowpipe::models;
namespace st = slowpipe::models::testing;
using slowpipe::models::testing::WhatContains;

namespace {

sm::ModelConfig subspace_gpt(int k) {
  sm::ModelConfig c = st::tiny_gpt();  // 2 layers, d_model 32, 4 heads, seq_len 16
  c.subspace = k;
  return c;
}

const sm::Subspace& subspace_of(const sm::Model& m) {
  const auto* s = dynamic_cast<const sm::Subspace*>(m.boundary.get());
  REQUIRE(s != nullptr);
  return *s;
}

// Largest |x - U U^T x| over the rows of x [.., C], in double.
double off_subspace(const at::Tensor& x, const at::Tensor& u) {
  const auto xd = x.to(torch::kDouble), ud = u.to(torch::kDouble);
  return (xd - torch::matmul(torch::matmul(xd, ud), ud.t())).abs().max().item<double>();
}

}  // namespace

TEST_CASE("Subspace: orthonormal basis, fixed part outside it, nested and deterministic") {
  const int64_t c = 32, v = 256, t = 16;
  const auto d8 = sm::draw_subspace(c, 8, v, t);
  const auto d16 = sm::draw_subspace(c, 16, v, t);
  auto u = torch::from_blob(const_cast<double*>(d16.basis.data()), {c, 16}, torch::kDouble);
  CHECK(torch::allclose(torch::matmul(u.t(), u), torch::eye(16, torch::kDouble), 0, 1e-12));
  auto fixed = torch::from_blob(const_cast<double*>(d16.fixed_tok.data()), {v, c}, torch::kDouble);
  CHECK(torch::matmul(fixed, u).abs().max().item<double>() < 1e-12);
  // Not trivially zero: N(0, 0.02^2) draws keep (C - k) / C of their energy.
  const double rms = fixed.pow(2).mean().sqrt().item<double>();
  CHECK(rms == Approx(0.02 * std::sqrt(16.0 / 32.0)).epsilon(0.1));
  // Rank 8 is the first 8 columns of rank 16; a second draw is identical.
  for (int64_t i = 0; i < c; ++i) {
    for (int64_t j = 0; j < 8; ++j) CHECK(d8.basis[i * 8 + j] == d16.basis[i * 16 + j]);
  }
  CHECK(sm::draw_subspace(c, 16, v, t).fixed_pos == d16.fixed_pos);
  // k = C: U is a rotation and nothing is left outside it.
  const auto full = sm::draw_subspace(c, c, v, t);
  for (double x : full.fixed_tok) CHECK(x == 0.0);
}

TEST_CASE("Subspace GPT: k = d_model computes the unconstrained model's outputs") {
  // Map the unconstrained parameters into the constrained ones: the writers'
  // weights and biases and both embedding tables through U^T (k = C: U U^T = I,
  // the fixed part is zero). Tolerance 1e-5 on logits of magnitude ~1: float
  // rounding of the extra products with U.
  const auto info = st::text_info(16);
  sm::Model plain = sm::build_model(st::tiny_gpt(), info, 3);
  sm::Model sub = sm::build_model(subspace_gpt(32), info, 4);
  const at::Tensor u = subspace_of(sub).basis(torch::kCPU);  // [C, C]
  {
    torch::NoGradGuard g;
    for (size_t b = 0; b < plain.blocks.size(); ++b) {
      const auto from = plain.blocks[b]->named_parameters();
      for (auto& p : sub.blocks[b]->named_parameters()) {
        const at::Tensor& src = from[p.key()];
        const std::string& name = p.key();
        if (name == "tok.weight" || name == "pos.weight") {
          p.value().copy_(torch::matmul(src, u));  // rows: E U
        } else if (name == "proj.weight" || name == "fc2.weight" || name == "proj.bias" ||
                   name == "fc2.bias") {
          p.value().copy_(torch::matmul(u.t(), src.dim() == 2 ? src : src.unsqueeze(1))
                              .view_as(p.value()));  // U^T W, U^T b
        } else {
          p.value().copy_(src);
        }
      }
    }
  }
  const auto batch = st::random_batch(sm::Task::kLanguageModel, 3, 16, 5);
  at::Tensor a = batch.inputs, b = batch.inputs;
  for (auto& blk : plain.blocks) a = blk->forward(a);
  for (auto& blk : sub.blocks) b = blk->forward(b);
  CHECK((a - b).abs().max().item<double>() < 1e-5);
  // Control: without the mapping the models differ.
  sm::Model other = sm::build_model(subspace_gpt(32), info, 4);
  at::Tensor o = batch.inputs;
  for (auto& blk : other.blocks) o = blk->forward(o);
  CHECK((a - o).abs().max().item<double>() > 1e-2);
}

TEST_CASE("Subspace GPT: the residual at every cut lies in fixed(tokens) + span(U)") {
  const auto info = st::text_info(16);
  sm::Model m = sm::build_model(subspace_gpt(4), info, 1);
  {
    torch::NoGradGuard g;  // away from the init, where writers are small
    for (auto& p : m.parameters()) p.add_(torch::randn_like(p) * 0.2);
  }
  const auto& sub = subspace_of(m);
  const at::Tensor u = sub.basis(torch::kCPU);
  const auto batch = st::random_batch(sm::Task::kLanguageModel, 2, 16, 9);
  const at::Tensor fixed = sub.fixed(batch.inputs);
  at::Tensor h = batch.inputs;
  for (size_t b = 0; b + 1 < m.blocks.size(); ++b) {  // every cut: after blocks 0 .. L
    h = m.blocks[b]->forward(h);
    INFO("after block " << b);
    const double scale = h.abs().max().item<double>();
    REQUIRE(scale > 0.1);
    CHECK(off_subspace(h - fixed, u) < 1e-6 * std::max(1.0, scale));
    // What crosses and what the next stage rebuilds from it.
    const at::Tensor sent = sub.reduce(h, batch.inputs);
    CHECK(sent.sizes() == at::IntArrayRef({2, 16, 4}));
    CHECK((sub.expand(sent, batch.inputs) - h).abs().max().item<double>() <
          1e-6 * std::max(1.0, scale));
  }
  // Control: the unconstrained model's residual is far from the subspace.
  sm::Model plain = sm::build_model(st::tiny_gpt(), info, 1);
  const at::Tensor hp = plain.blocks[1]->forward(plain.blocks[0]->forward(batch.inputs));
  CHECK(off_subspace(hp, u) > 1e-2);
}

TEST_CASE("Subspace GPT: the boundary map's gradient is the projected activation-gradient") {
  const auto info = st::text_info(16);
  sm::Model m = sm::build_model(subspace_gpt(8), info, 2);
  const auto& sub = subspace_of(m);
  const auto batch = st::random_batch(sm::Task::kLanguageModel, 2, 16, 3);
  const at::Tensor sent = torch::randn({2, 16, 8}, torch::requires_grad());
  const at::Tensor g = torch::randn({2, 16, 32});
  sub.expand(sent, batch.inputs).backward(g);
  const at::Tensor want = torch::matmul(g, sub.basis(torch::kCPU));  // U^T g per token
  CHECK(torch::allclose(sent.grad(), want, 1e-6, 1e-6));
}

TEST_CASE("Subspace GPT: parameter count matches the footprint and shrinks with k") {
  const auto info = st::text_info(16);
  for (int k : {0, 4, 16, 32}) {
    INFO("k = " << k);
    const auto cfg = subspace_gpt(k);
    const sm::Model m = sm::build_model(cfg, info, 1);
    CHECK(static_cast<double>(m.parameter_count(0, m.blocks.size())) ==
          sm::footprint_gpt(cfg, info).parameters);
    CHECK((m.boundary != nullptr) == (k > 0));
  }
  CHECK(sm::build_model(subspace_gpt(32), info, 1).parameter_count(0, 4) ==
        sm::build_model(subspace_gpt(0), info, 1).parameter_count(0, 4));
}

TEST_CASE("Subspace GPT: checkpoints round-trip and record model.subspace") {
  const auto info = st::text_info(16);
  st::TempFile file(".pt");
  sm::Model a = sm::build_model(subspace_gpt(8), info, 1);
  {
    torch::NoGradGuard g;
    for (auto& p : a.parameters()) p.add_(0.25);
  }
  sm::save_checkpoint(a, file.path());
  auto cfg = subspace_gpt(8);
  cfg.init_from = file.path();
  sm::Model b = sm::build_model(cfg, info, 2);
  const auto pa = a.parameters(), pb = b.parameters();
  REQUIRE(pa.size() == pb.size());
  for (size_t i = 0; i < pa.size(); ++i) CHECK(torch::equal(pa[i], pb[i]));
  const auto batch = st::random_batch(sm::Task::kLanguageModel, 2, 16, 4);
  at::Tensor ya = batch.inputs, yb = batch.inputs;
  for (auto& blk : a.blocks) ya = blk->forward(ya);
  for (auto& blk : b.blocks) yb = blk->forward(yb);
  CHECK(torch::equal(ya, yb));  // U and the fixed part are the same in every build
  // Another k, or no constraint, is refused by its key before any parameter.
  auto other = subspace_gpt(16);
  other.init_from = file.path();
  CHECK_THROWS_MATCHES(sm::validate_model_config(other), slowpipe::UsageError,
                       WhatContains("model.subspace=8"));
  auto plain = subspace_gpt(0);
  plain.init_from = file.path();
  CHECK_THROWS_MATCHES(sm::build_model(plain, info, 1), slowpipe::UsageError,
                       WhatContains("model.subspace=8"));
  // An unconstrained checkpoint does not record the key and still loads.
  sm::save_checkpoint(sm::build_model(subspace_gpt(0), info, 1), file.path());
  CHECK_NOTHROW(sm::build_model(plain, info, 5));
}

TEST_CASE("Subspace GPT: refused configurations name the key") {
  const auto info = st::text_info(16);
  CHECK_THROWS_MATCHES(sm::build_model(subspace_gpt(33), info, 1), slowpipe::UsageError,
                       WhatContains("model.subspace=33"));
  auto cnn = st::tiny_cnn();
  cnn.subspace = 4;
  CHECK_THROWS_MATCHES(sm::validate_model_config(cnn), slowpipe::UsageError,
                       WhatContains("model.name=cnn"));
}
