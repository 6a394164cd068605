// protocol-gpt in the ReparamSSN record's subspace form (model.subspace = k,
// model.ffn): parameter counts against the record's own totals and the built
// model, parameter matching, the boundary map (exact on every constrained
// block's output, not on the full-rank last block's), and the cuts it allows.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "common/errors.h"
#include "model_fixtures.h"
#include "models/facts/gpt_size.h"
#include "models/torch/cuts.h"
#include "models/torch/model_limits.h"
#include "models/torch/model_registry.h"

namespace sm = slowpipe::models;
namespace smt = slowpipe::models::testing;

namespace {

sm::ModelConfig tiny_ssn(int k = 5) {
  sm::ModelConfig c = smt::tiny_gpt();  // d 32, 4 heads (8 wide), seq 16
  c.name = "protocol-gpt";
  c.layers = 3;
  c.subspace = k;
  c.ffn = static_cast<int>(
      sm::matched_ffn({sm::GptLayout::kProtocol, c.d_model, c.layers, 256, c.seq_len, 0, k}));
  return c;
}

// Non-zero output projections, so every block writes into the residual.
void perturb(const sm::Model& m) {
  torch::NoGradGuard g;
  torch::manual_seed(11);
  for (const auto& b : m.blocks) {
    for (auto& p : b->named_parameters()) {
      if (p.key().find("proj") != std::string::npos) p.value().normal_(0.0, 0.2);
    }
  }
}

}  // namespace

TEST_CASE("protocol-gpt subspace form: the record's parameter totals and its MLP width") {
  // train_gpt.py's BASELINE_PARAMS and the ReparamSSN record's README.
  const sm::GptSize dense{sm::GptLayout::kProtocol, 1024, 8, 50304, 1024, 0, 0};
  CHECK(sm::gpt_parameters(dense) == 203'828'352);
  sm::GptSize ssn{sm::GptLayout::kProtocol, 1024, 8, 50304, 1024, 11292, 160};
  CHECK(sm::gpt_parameters(ssn) == 203'822'240);
  CHECK(sm::matched_ffn(ssn) == 11292);
  ssn.ffn = 11293;  // one wider is over the cap
  CHECK(sm::gpt_parameters(ssn) > 203'828'352);
  // The laptop widths of experiments/reproduce/b1.ini.
  CHECK(sm::matched_ffn({sm::GptLayout::kProtocol, 32, 8, 256, 64, 0, 5}) == 241);
  CHECK(sm::matched_ffn({sm::GptLayout::kProtocol, 64, 8, 256, 64, 0, 10}) == 463);
  CHECK(sm::matched_ffn({sm::GptLayout::kProtocol, 96, 8, 256, 64, 0, 15}) == 685);
}

TEST_CASE(
    "protocol-gpt subspace form: the built model has the counted parameters, no more than dense") {
  const sm::ModelConfig cfg = tiny_ssn();
  const sm::Model m = sm::build_model(cfg, smt::text_info(cfg.seq_len), 3);
  const int64_t n = m.parameter_count(0, m.blocks.size());
  CHECK(n == sm::gpt_parameters({sm::GptLayout::kProtocol, cfg.d_model, cfg.layers, 256,
                                 cfg.seq_len, cfg.ffn, cfg.subspace}));
  CHECK(sm::footprint_protocol_gpt(cfg, smt::text_info(cfg.seq_len)).parameters ==
        static_cast<double>(n));
  sm::ModelConfig dense = cfg;
  dense.subspace = 0;
  dense.ffn = 0;
  const sm::Model d = sm::build_model(dense, smt::text_info(dense.seq_len), 3);
  const int64_t nd = d.parameter_count(0, d.blocks.size());
  CHECK(nd == sm::gpt_parameters({sm::GptLayout::kProtocol, 32, 3, 256, 16, 0, 0}));
  CHECK(n <= nd);
  CHECK(cfg.ffn > 4 * cfg.d_model);  // the freed parameters went to the MLP
  // model.ffn alone widens the dense model: 2 C + 1 parameters per block per unit.
  sm::ModelConfig wide = dense;
  wide.ffn = 4 * dense.d_model + 1;
  const sm::Model w = sm::build_model(wide, smt::text_info(wide.seq_len), 3);
  CHECK(w.parameter_count(0, w.blocks.size()) == nd + 3 * (2 * 32 + 1));
  // Writers: blocks 1..L-1 write k outputs, the last block d_model.
  auto shape_of = [](const sm::Model& mm, size_t block, const std::string& name) {
    for (auto& p : mm.blocks[block]->named_parameters())
      if (p.key() == name) return p.value().sizes().vec();
    return std::vector<int64_t>{};
  };
  CHECK(shape_of(m, 1, "proj.weight") == std::vector<int64_t>{5, 32});
  CHECK(shape_of(m, 2, "mlp_proj.weight") == std::vector<int64_t>{5, cfg.ffn});
  CHECK(shape_of(m, 3, "proj.weight") == std::vector<int64_t>{32, 32});
  CHECK(shape_of(m, 3, "mlp_proj.weight") == std::vector<int64_t>{32, cfg.ffn});
  CHECK(shape_of(m, 0, "tok.weight") == std::vector<int64_t>{256, 5});
}

TEST_CASE("protocol-gpt subspace form: a cut's k coordinates rebuild the residual exactly") {
  const sm::ModelConfig cfg = tiny_ssn();
  const sm::Model m = sm::build_model(cfg, smt::text_info(cfg.seq_len), 5);
  perturb(m);
  REQUIRE(m.boundary != nullptr);
  torch::manual_seed(4);
  const auto tokens = torch::randint(0, 256, {2, cfg.seq_len}, torch::kLong);
  torch::NoGradGuard g;
  at::Tensor h = tokens;
  for (size_t b = 0; b + 1 < m.blocks.size(); ++b) {
    h = m.blocks[b]->forward(h);  // [B, T, C]
    const at::Tensor a = m.boundary->reduce(h, tokens);
    CHECK(a.sizes().vec() == std::vector<int64_t>{2, cfg.seq_len, cfg.subspace});
    const at::Tensor back = m.boundary->expand(a, tokens);
    const double err = (back - h).norm().item<double>() / h.norm().item<double>();
    INFO("block " << b);
    if (b + 1 < m.blocks.size() - 1) {
      CHECK(err < 1e-5);  // embedding and constrained blocks
    } else {
      CHECK(err > 1e-2);  // the full-rank last block: its output is not in the subspace
    }
  }
  // The fixed part is not orthogonal to U (the record's form), so reduce must
  // subtract it: zero coordinates give the fixed part F, whose own reduction is
  // zero, while 2 F has the coordinates U^T F, which are not.
  const at::Tensor zeros = torch::zeros({2, cfg.seq_len, cfg.subspace});
  const at::Tensor fixed = m.boundary->expand(zeros, tokens);
  CHECK(fixed.norm().item<double>() > 1.0);
  CHECK(m.boundary->reduce(fixed, tokens).abs().max().item<double>() < 1e-4);
  CHECK(m.boundary->reduce(2 * fixed, tokens).norm().item<double>() >
        0.1 * fixed.norm().item<double>() * std::sqrt(5.0 / 32.0));
  // Each message carries the 2-byte token ids besides the coordinates.
  CHECK(m.boundary->side_bytes(tokens) == static_cast<uint64_t>(2 * 2 * cfg.seq_len));
}

TEST_CASE("protocol-gpt subspace form: no cut after the full-rank last block") {
  const sm::ModelConfig cfg = tiny_ssn();  // blocks: embedding, 3 blocks, head = 5
  const sm::Model m = sm::build_model(cfg, smt::text_info(cfg.seq_len), 5);
  CHECK(m.max_cut == 3);
  CHECK(sm::resolve_cuts(m, 4, {1, 2, 3}, "params", nullptr) == std::vector<size_t>{0, 1, 2, 3, 5});
  CHECK_THROWS_WITH(sm::resolve_cuts(m, 4, {2, 3, 4}, "params", nullptr),
                    Catch::Contains("cuts must be at most 3"));
  // Balanced: the last block stays with the head; at most 4 stages.
  for (int s = 2; s <= 4; ++s) {
    const auto cuts = sm::resolve_cuts(m, s, {}, "params", nullptr);
    REQUIRE(cuts.size() == static_cast<size_t>(s + 1));
    CHECK(cuts[cuts.size() - 2] <= 3);
  }
  CHECK_THROWS_AS(sm::resolve_cuts(m, 5, {}, "params", nullptr), slowpipe::UsageError);
  // Control: the dense model cuts anywhere.
  sm::ModelConfig dense = cfg;
  dense.subspace = 0;
  const sm::Model d = sm::build_model(dense, smt::text_info(dense.seq_len), 5);
  CHECK(d.max_cut == 0);
  CHECK(sm::resolve_cuts(d, 5, {}, "params", nullptr).size() == 6);
}

TEST_CASE("model.ffn and model.subspace apply where they mean something") {
  sm::ModelConfig cfg = smt::tiny_cnn();
  cfg.ffn = 100;
  CHECK_THROWS_WITH(sm::validate_model_config(cfg, {}),
                    Catch::Contains("model.ffn=100 applies to a GPT"));
  sm::ModelConfig gpt = smt::tiny_gpt();
  gpt.ffn = 100;
  CHECK_NOTHROW(sm::validate_model_config(gpt, {}));
  sm::ModelConfig ssn = tiny_ssn();
  CHECK_NOTHROW(sm::validate_model_config(ssn, {}));
  ssn.subspace = 33;
  CHECK_THROWS_AS(sm::validate_model_config(ssn, {}), slowpipe::UsageError);
}

TEST_CASE(
    "gpt: model.ffn widens the MLP; the matched width gives a subspace model the dense count") {
  sm::ModelConfig cfg = smt::tiny_gpt();  // gpt: 2 layers, d 32, seq 16
  const auto count = [](const sm::ModelConfig& c) {
    const sm::Model m = sm::build_model(c, smt::text_info(c.seq_len), 1);
    return m.parameter_count(0, m.blocks.size());
  };
  const int64_t dense = count(cfg);
  CHECK(dense == sm::gpt_parameters({sm::GptLayout::kGpt, 32, 2, 256, 16, 0, 0}));
  cfg.ffn = 200;
  CHECK(count(cfg) == dense + 2 * (200 - 128) * (32 + 1 + 32));  // fc1 row + bias, fc2 column
  CHECK(sm::footprint_gpt(cfg, smt::text_info(16)).parameters == static_cast<double>(count(cfg)));
  // The demo GPT (d 128, 4 layers, seq 64) and P1's subspaces: the documented counts,
  // and the matched widths of experiments/reproduce/p1m.ini.
  CHECK(sm::gpt_parameters({sm::GptLayout::kGpt, 128, 4, 256, 64, 0, 0}) == 867'072);
  CHECK(sm::gpt_parameters({sm::GptLayout::kGpt, 128, 4, 256, 64, 0, 16}) == 543'616);
  CHECK(sm::matched_ffn({sm::GptLayout::kGpt, 128, 4, 256, 64, 0, 16}) == 1069);
  CHECK(sm::matched_ffn({sm::GptLayout::kGpt, 128, 4, 256, 64, 0, 8}) == 1144);
  sm::ModelConfig sub = smt::tiny_gpt();
  sub.subspace = 4;
  sub.ffn = static_cast<int>(sm::matched_ffn({sm::GptLayout::kGpt, 32, 2, 256, 16, 0, 4}));
  CHECK(count(sub) == sm::gpt_parameters({sm::GptLayout::kGpt, 32, 2, 256, 16, sub.ffn, 4}));
  CHECK(count(sub) <= dense);
  sub.ffn += 1;
  CHECK(count(sub) > dense);
}
