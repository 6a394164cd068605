// model.name = protocol-gpt (models/torch/gpt_protocol.cpp): the properties of the
// benchmark's block that can be checked exactly. Zero-initialised output
// projections make every block the identity and the logits zero at
// initialisation (loss ln 256); the rotary embedding is a rotation (norms
// kept) whose query-key products depend only on the distance between
// positions; attention is causal; the parameter count matches the footprint's
// formula and the FLOPs gpt's; bad head widths are refused.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "common/errors.h"
#include "model_fixtures.h"
#include "models/torch/model_registry.h"

namespace sm = slowpipe::models;
namespace smt = slowpipe::models::testing;

namespace {

sm::ModelConfig tiny_protocol() {
  sm::ModelConfig c = smt::tiny_gpt();  // 2 layers, d 32, 4 heads (8 wide), seq 16
  c.name = "protocol-gpt";
  return c;
}

}  // namespace

TEST_CASE("protocol-gpt: at initialisation every block is the identity and the loss is ln 256") {
  const sm::ModelConfig cfg = tiny_protocol();
  const sm::Model m = sm::build_model(cfg, smt::text_info(cfg.seq_len), 3);
  REQUIRE(m.blocks.size() == 4);  // embedding, 2 blocks, head
  torch::manual_seed(1);
  const auto bytes = torch::randint(0, 256, {2, cfg.seq_len}, torch::kLong);
  const auto h = m.blocks[0]->forward(bytes);  // [2, 16, 32]
  CHECK(h.sizes() == std::vector<int64_t>{2, cfg.seq_len, cfg.d_model});
  // The embedding's RMSNorm (gains 1): every row has unit RMS.
  CHECK(torch::allclose(h.pow(2).mean(-1), torch::ones({2, cfg.seq_len}), 1e-4, 1e-5));
  CHECK(torch::equal(m.blocks[1]->forward(h), h));
  const auto logits = m.blocks[3]->forward(m.blocks[2]->forward(h));
  CHECK(torch::equal(logits, torch::zeros({2, cfg.seq_len, 256})));
  const auto loss = sm::loss(sm::Task::kLanguageModel, logits, bytes);
  CHECK(loss.item<double>() == Approx(std::log(256.0)).epsilon(1e-6));
  // Control: once an output projection is no longer zero, the block is not the identity.
  {
    torch::NoGradGuard g;
    for (auto& p : m.blocks[1]->named_parameters()) {
      if (p.key() == "proj.weight") p.value().normal_(0.0, 0.1);
    }
  }
  CHECK_FALSE(torch::allclose(m.blocks[1]->forward(h), h));
}

TEST_CASE("protocol-gpt: the rotary embedding is a rotation that sees relative positions only") {
  torch::manual_seed(5);
  const int64_t t = 12, d = 16;
  const auto q = torch::randn({1, 1, 1, d}).expand({1, t, 1, d}).contiguous();  // one vector
  const auto k = torch::randn({1, 1, 1, d}).expand({1, t, 1, d}).contiguous();
  const auto rq = sm::protocol_rotary(q), rk = sm::protocol_rotary(k);
  CHECK(torch::allclose(rq.norm(2, -1), q.norm(2, -1), 1e-5, 1e-6));
  // q at position i, k at position j: the product depends on i - j only.
  auto dot = [&](int64_t i, int64_t j) { return (rq[0][i][0] * rk[0][j][0]).sum().item<double>(); };
  CHECK(dot(5, 2) == Approx(dot(9, 6)).epsilon(1e-5));
  CHECK(dot(3, 3) == Approx(dot(11, 11)).epsilon(1e-5));
  CHECK(dot(0, 0) == Approx((q[0][0][0] * k[0][0][0]).sum().item<double>()).epsilon(1e-5));
  // Control: different distances give different products; the last quarter of
  // frequencies (zero) leaves its coordinates unturned.
  CHECK(std::abs(dot(5, 2) - dot(5, 4)) > 1e-4);
  const auto half = d / 2, quarter = d / 4;
  CHECK(torch::allclose(rq.narrow(-1, quarter, half - quarter),
                        q.narrow(-1, quarter, half - quarter)));
}

TEST_CASE("protocol-gpt: attention is causal; parameters and FLOPs follow the formulas") {
  const sm::ModelConfig cfg = tiny_protocol();
  const sm::Model m = sm::build_model(cfg, smt::text_info(cfg.seq_len), 7);
  {
    torch::NoGradGuard g;  // non-zero projections, so that the blocks mix positions
    for (const auto& b : m.blocks) {
      for (auto& p : b->named_parameters()) {
        if (p.key().find("proj.weight") != std::string::npos) p.value().normal_(0.0, 0.1);
      }
    }
  }
  torch::manual_seed(2);
  auto x = torch::randint(0, 256, {1, cfg.seq_len}, torch::kLong);
  auto y = x.clone();
  y[0][cfg.seq_len - 1] = (x[0][cfg.seq_len - 1].item<int64_t>() + 1) % 256;  // last byte differs
  auto run = [&](const at::Tensor& in) {
    at::Tensor h = in;
    for (const auto& b : m.blocks) h = b->forward(h);
    return h;
  };
  const auto a = run(x), b = run(y);
  CHECK(torch::allclose(a.narrow(1, 0, cfg.seq_len - 1), b.narrow(1, 0, cfg.seq_len - 1)));
  CHECK_FALSE(torch::allclose(a.narrow(1, cfg.seq_len - 1, 1), b.narrow(1, cfg.seq_len - 1, 1)));
  const double c = cfg.d_model, l = cfg.layers, v = 256;
  CHECK(m.parameter_count(0, m.blocks.size()) ==
        static_cast<int64_t>(v * c + c + l * (12 * c * c + 11 * c) + c + v * c + v));
  const auto f = sm::footprint_protocol_gpt(cfg, smt::text_info(cfg.seq_len));
  CHECK(f.parameters == static_cast<double>(m.parameter_count(0, m.blocks.size())));
  sm::ModelConfig gpt = smt::tiny_gpt();
  const sm::Model g = sm::build_model(gpt, smt::text_info(gpt.seq_len), 7);
  CHECK(m.forward_flops_per_sample(1, 3) == g.forward_flops_per_sample(1, 3));
}

TEST_CASE("protocol-gpt: heads must be a multiple of 4 wide; text only; no dropout") {
  sm::ModelConfig cfg = tiny_protocol();
  cfg.heads = 16;  // heads of 2
  CHECK_THROWS_AS(sm::build_model(cfg, smt::text_info(cfg.seq_len), 1), slowpipe::UsageError);
  CHECK_THROWS_AS(sm::build_model(tiny_protocol(), smt::image_info(), 1), slowpipe::UsageError);
  cfg = tiny_protocol();
  cfg.dropout = 0.1;
  CHECK_THROWS_AS(sm::build_model(cfg, smt::text_info(cfg.seq_len), 1), slowpipe::UsageError);
}
