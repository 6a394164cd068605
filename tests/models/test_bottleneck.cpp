// Learned bottlenecks of the gpt model (model.bottleneck; models/facts/bottleneck_spec.h,
// models/torch/internal/bottleneck.h): the spec's grammar and refusals, where
// the bottlenecks sit and what crosses them, r = d and k = d against the
// unconstrained model, ResBM's identity path, the learned projection's
// orthonormal basis and anchors, parameter counts and checkpoints.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "common/errors.h"
#include "matchers.h"
#include "model_fixtures.h"
#include "models/facts/bottleneck_spec.h"
#include "models/torch/checkpoint.h"
#include "models/torch/model_limits.h"
#include "models/torch/model_registry.h"
#include "temp_files.h"

namespace sm = slowpipe::models;
namespace st = slowpipe::models::testing;
using slowpipe::models::testing::WhatContains;

namespace {

sm::ModelConfig bottleneck_gpt(const std::string& spec, int layers = 3) {
  sm::ModelConfig c = st::tiny_gpt();  // d_model 32, 4 heads, seq_len 16
  c.layers = layers;
  c.bottleneck = spec;
  return c;
}

// The model's output on `inputs` through every block, as one stage runs it.
at::Tensor whole(const sm::Model& m, const at::Tensor& inputs) {
  return sm::forward_stage(m, 0, m.blocks.size(), inputs, inputs);
}

// Each block's output in turn (blocks chained, no maps), for shapes.
std::vector<int64_t> widths(const sm::Model& m, const at::Tensor& inputs) {
  std::vector<int64_t> out;
  at::Tensor h = inputs;
  for (const auto& b : m.blocks) {
    h = b->forward(h);
    out.push_back(h.size(-1));
  }
  return out;
}

}  // namespace

TEST_CASE("Bottleneck spec: grammar, defaults and canonical text") {
  const auto a = sm::parse_bottleneck("resbm:r=8", 4, 128);
  CHECK(a.kind == sm::BottleneckKind::kResbm);
  CHECK(a.width == 8);
  CHECK(a.after == std::vector<int>{1, 2, 3});  // every block but the last
  CHECK(a.text() == "resbm:r=8:at=1+2+3");
  const auto b = sm::parse_bottleneck("learned:k=16:anchor=4:at=2", 4, 128);
  CHECK(b.kind == sm::BottleneckKind::kLearned);
  CHECK(b.anchor == 4);
  CHECK(b.after == std::vector<int>{2});
  CHECK(sm::bottleneck_after(b, 2));
  CHECK_FALSE(sm::bottleneck_after(b, 1));
  CHECK(sm::parse_bottleneck(b.text(), 4, 128).text() == b.text());
  CHECK_FALSE(sm::parse_bottleneck("", 4, 128).on());
  for (const char* bad : {"resbm", "resbm:r=0", "resbm:r=129", "resbm:k=8", "learned:r=8",
                          "resbm:r=8:anchor=2", "learned:k=8:at=4", "learned:k=8:at=2+1",
                          "learned:k=8:at=", "pca:k=8", "resbm:r=8x", "learned:k=8:anchor=-1"}) {
    INFO(bad);
    CHECK_THROWS_MATCHES(sm::parse_bottleneck(bad, 4, 128), slowpipe::UsageError,
                         WhatContains("model.bottleneck=" + std::string(bad)));
  }
  CHECK_THROWS_AS(sm::parse_bottleneck("resbm:r=8", 1, 128), slowpipe::UsageError);
}

TEST_CASE("ResBM: r values cross after each chosen block, and r = d is the unconstrained model") {
  const auto info = st::text_info(16);
  const auto batch = st::random_batch(sm::Task::kLanguageModel, 2, 16, 5);
  const sm::Model m = sm::build_model(bottleneck_gpt("resbm:r=4:at=1+2"), info, 3);
  // Embedding, 3 blocks, head: blocks 1 and 2 end in 4 values per token.
  CHECK(widths(m, batch.inputs) == std::vector<int64_t>{32, 4, 4, 32, 256});
  CHECK(m.bottlenecks.empty());
  // r = d: nothing to narrow, no encoder or decoder: the same model draw for draw.
  const sm::Model plain = sm::build_model(bottleneck_gpt(""), info, 3);
  const sm::Model full = sm::build_model(bottleneck_gpt("resbm:r=32"), info, 3);
  const auto pp = plain.parameters(), pf = full.parameters();
  REQUIRE(pp.size() == pf.size());
  for (size_t i = 0; i < pp.size(); ++i) CHECK(torch::equal(pp[i], pf[i]));
  CHECK(torch::equal(whole(plain, batch.inputs), whole(full, batch.inputs)));
  // The bottleneck's draws are its own: every parameter the plain model has is
  // the same draw in the bottlenecked one (by name, block by block).
  size_t same = 0;
  for (size_t b = 0; b < plain.blocks.size(); ++b) {
    const auto mine = m.blocks[b]->named_parameters();
    for (const auto& q : plain.blocks[b]->named_parameters()) {
      const at::Tensor* p = mine.find(q.key());
      same += p != nullptr && torch::equal(*p, q.value()) ? 1 : 0;
    }
  }
  CHECK(same == pp.size());
  CHECK(m.parameters().size() == pp.size() + 4);  // 2 encoders and 2 decoders
}

TEST_CASE("ResBM: the identity path carries the first r coordinates through the cut") {
  // With the encoder's weight zero, the sender writes h[..., :r], h the
  // residual stream after attention; the plain block with its MLP's output
  // weights zero writes h itself. Their other weights are the same draws.
  const auto info = st::text_info(16);
  const sm::Model m = sm::build_model(bottleneck_gpt("resbm:r=4:at=1", 2), info, 3);
  const sm::Model plain = sm::build_model(bottleneck_gpt("", 2), info, 3);
  const auto batch = st::random_batch(sm::Task::kLanguageModel, 2, 16, 6);
  const at::Tensor e = m.blocks[0]->forward(batch.inputs);  // [B, T, C]
  const at::Tensor drawn = m.blocks[1]->forward(e);         // [B, T, 4]
  {
    torch::NoGradGuard g;
    for (auto& item : m.blocks[1]->named_parameters())
      if (item.key() == "resbm_enc.enc.weight") item.value().zero_();
    for (auto& item : plain.blocks[1]->named_parameters())
      if (item.key() == "fc2.weight" || item.key() == "fc2.bias") item.value().zero_();
  }
  const at::Tensor c = m.blocks[1]->forward(e);
  const at::Tensor h = plain.blocks[1]->forward(e);  // [B, T, C]
  REQUIRE(c.size(-1) == 4);
  CHECK(torch::allclose(c, h.narrow(-1, 0, 4), 0, 1e-6));
  // Control: the learned residual (the drawn encoder) moves the output.
  CHECK((c - drawn).abs().max().item<double>() > 1e-5);
}

TEST_CASE(
    "Learned projection: k values cross, U is orthonormal, k = d is the unconstrained model") {
  const auto info = st::text_info(16);
  const auto batch = st::random_batch(sm::Task::kLanguageModel, 2, 16, 5);
  const sm::Model m = sm::build_model(bottleneck_gpt("learned:k=4:at=2"), info, 3);
  REQUIRE(m.bottlenecks.size() == 1);
  REQUIRE(m.bottlenecks.count(3) == 1);  // after transformer block 2, in front of block 3
  CHECK(sm::boundary_at(m, 3) == m.bottlenecks.at(3).get());
  CHECK(sm::boundary_at(m, 2) == nullptr);
  at::Tensor u;
  for (const auto& item : m.blocks[2]->named_parameters())
    if (item.key() == "bottleneck.U") u = item.value();
  REQUIRE(u.defined());
  CHECK(u.sizes() == at::IntArrayRef{32, 4});
  CHECK(torch::allclose(torch::matmul(u.t(), u), torch::eye(4), 0, 1e-6));
  // Stage 0 = blocks [0, 3) sends [B, T, 4]; no token ids without anchors.
  const at::Tensor sent = sm::forward_stage(m, 0, 3, batch.inputs, batch.inputs);
  CHECK(sent.sizes() == at::IntArrayRef{2, 16, 4});
  CHECK(sm::side_bytes(m, 3, batch.inputs) == 0);
  // Two stages compute what one stage does.
  const at::Tensor two = sm::forward_stage(m, 3, 5, sent, batch.inputs);
  CHECK(torch::allclose(two, whole(m, batch.inputs), 0, 1e-6));
  // k = d: U U^T = I, so the model is the unconstrained one (its other draws
  // are the plain model's) to float rounding.
  const sm::Model full = sm::build_model(bottleneck_gpt("learned:k=32"), info, 3);
  const sm::Model plain = sm::build_model(bottleneck_gpt(""), info, 3);
  const at::Tensor a = whole(plain, batch.inputs), b = whole(full, batch.inputs);
  CHECK((a - b).abs().max().item<double>() < 1e-5);
  // Control: at k = 4 the output differs.
  CHECK((a - whole(m, batch.inputs)).abs().max().item<double>() > 1e-3);
}

TEST_CASE("Learned projection: anchors send the token ids and rebuild U c + anchor") {
  const auto info = st::text_info(16);
  const auto batch = st::random_batch(sm::Task::kLanguageModel, 2, 16, 5);
  const sm::Model m = sm::build_model(bottleneck_gpt("learned:k=4:anchor=3:at=1"), info, 3);
  CHECK(sm::side_bytes(m, 2, batch.inputs) == 2u * 2 * 16);
  // anchor(t) = E[t] W with W zero at the start: set W and check the round trip
  // h -> U^T (h - a) -> U c + a against the formula.
  at::Tensor u, e, w;
  for (const auto& item : m.blocks[1]->named_parameters()) {
    if (item.key() == "bottleneck.U") u = item.value();
    if (item.key() == "bottleneck.anchor_tok") e = item.value();
    if (item.key() == "bottleneck.anchor_lift") w = item.value();
  }
  REQUIRE((u.defined() && e.defined() && w.defined()));
  CHECK(w.abs().max().item<double>() == 0.0);
  {
    torch::NoGradGuard g;
    w.normal_(0.0, 1.0);
  }
  const auto& map = *m.bottlenecks.at(2);
  const at::Tensor h = torch::randn({2, 16, 32});
  const at::Tensor a = torch::matmul(e.index_select(0, batch.inputs.reshape({-1})), w)
                           .view({2, 16, 32});  // [B, T, C]
  const at::Tensor c = map.reduce(h, batch.inputs);
  CHECK(torch::allclose(c, torch::matmul(h - a, u), 1e-5, 1e-5));
  const at::Tensor back = map.expand(c, batch.inputs);
  CHECK(torch::allclose(back, torch::matmul(c, u.t()) + a, 1e-5, 1e-5));
}

TEST_CASE("Bottlenecks: parameter counts match the footprint and the spec's count") {
  const auto info = st::text_info(16);
  const sm::Model plain = sm::build_model(bottleneck_gpt(""), info, 1);
  const int64_t n0 = plain.parameter_count(0, plain.blocks.size());
  for (const char* spec : {"resbm:r=4", "resbm:r=8:at=2", "learned:k=8", "learned:k=4:anchor=3"}) {
    INFO(spec);
    const auto cfg = bottleneck_gpt(spec);
    const sm::Model m = sm::build_model(cfg, info, 1);
    const int64_t n = m.parameter_count(0, m.blocks.size());
    CHECK(static_cast<double>(n) == sm::footprint_gpt(cfg, info).parameters);
    CHECK(n - n0 == sm::bottleneck_parameters(sm::parse_bottleneck(spec, 3, 32), 32, 256));
  }
}

TEST_CASE("Bottlenecks: checkpoints record model.bottleneck; refusals name the key") {
  const auto info = st::text_info(16);
  st::TempFile file(".pt");
  sm::Model a = sm::build_model(bottleneck_gpt("learned:k=4:anchor=2"), info, 1);
  {
    torch::NoGradGuard g;
    for (auto& p : a.parameters()) p.add_(0.25);
  }
  sm::save_checkpoint(a, file.path());
  auto cfg = bottleneck_gpt("learned:k=4:anchor=2:at=1+2");  // the same places, spelled out
  cfg.init_from = file.path();
  sm::Model b = sm::build_model(cfg, info, 2);
  const auto pa = a.parameters(), pb = b.parameters();
  REQUIRE(pa.size() == pb.size());
  for (size_t i = 0; i < pa.size(); ++i) CHECK(torch::equal(pa[i], pb[i]));
  auto other = bottleneck_gpt("resbm:r=4");
  other.init_from = file.path();
  CHECK_THROWS_MATCHES(sm::build_model(other, info, 1), slowpipe::UsageError,
                       WhatContains("model.bottleneck=learned:k=4:anchor=2:at=1+2"));
  auto plain = bottleneck_gpt("");
  plain.init_from = file.path();
  CHECK_THROWS_MATCHES(sm::build_model(plain, info, 1), slowpipe::UsageError,
                       WhatContains("model.bottleneck"));
  auto cnn = st::tiny_cnn();
  cnn.bottleneck = "resbm:r=4";
  CHECK_THROWS_MATCHES(sm::validate_model_config(cnn), slowpipe::UsageError,
                       WhatContains("model.name=gpt"));
  auto both = bottleneck_gpt("resbm:r=4");
  both.subspace = 8;
  CHECK_THROWS_MATCHES(sm::build_model(both, info, 1), slowpipe::UsageError,
                       WhatContains("model.subspace=8"));
}
