// Model tests: output shapes, registry errors, seeding, causality of the GPT,
// FLOP counts against the parameter shapes, and the exactness of a cut: running
// the blocks in stage groups with detached boundaries and explicitly handed-back
// gradients gives the same loss and gradients as the unsplit model.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "common/errors.h"
#include "common/options.h"
#include "matchers.h"
#include "model_fixtures.h"
#include "models/facts/model_facts.h"
#include "models/torch/model_limits.h"
#include "models/torch/model_registry.h"

namespace sm = slowpipe::models;
namespace st = slowpipe::models::testing;
using slowpipe::models::testing::WhatContains;

namespace {

std::vector<std::vector<int64_t>> run_shapes(const sm::Model& m, at::Tensor x) {
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& b : m.blocks) {
    x = b->forward(x);
    shapes.push_back(x.sizes().vec());
  }
  return shapes;
}

// Loss and every parameter gradient of one forward+backward, with the model cut
// at `cuts` (S+1 boundaries): each stage gets a detached leaf as input and the
// gradient of its output is handed back explicitly, as the pipeline engine does.
std::pair<double, std::vector<at::Tensor>> staged_step(sm::Model& m, const sm::Batch& batch,
                                                       const std::vector<size_t>& cuts) {
  for (auto& p : m.parameters()) p.mutable_grad() = at::Tensor();
  std::vector<at::Tensor> inputs, outputs;
  at::Tensor x = batch.inputs;
  for (size_t s = 0; s + 1 < cuts.size(); ++s) {
    at::Tensor in = x.detach();
    if (in.is_floating_point()) in.requires_grad_(true);
    at::Tensor h = in;
    for (size_t i = cuts[s]; i < cuts[s + 1]; ++i) h = m.blocks[i]->forward(h);
    inputs.push_back(in);
    outputs.push_back(h);
    x = h;
  }
  at::Tensor loss = sm::loss(m.task, outputs.back(), batch.targets);
  loss.backward();
  for (size_t s = outputs.size() - 1; s-- > 0;) {
    outputs[s].backward(inputs[s + 1].grad());
  }
  std::vector<at::Tensor> grads;
  for (auto& p : m.parameters()) grads.push_back(p.grad().clone());
  return {loss.item<double>(), grads};
}

void check_cut_exact(const sm::ModelConfig& cfg, const sm::DatasetInfo& info,
                     const std::vector<std::vector<size_t>>& cut_sets) {
  sm::Model m = sm::build_model(cfg, info, 7);
  const auto batch = st::random_batch(m.task, 4, cfg.seq_len, 99);
  const size_t n = m.blocks.size();
  // Reference: one stage holding every block.
  auto ref = staged_step(m, batch, {0, n});
  // Blocks one by one.
  std::vector<size_t> each;
  for (size_t i = 0; i <= n; ++i) each.push_back(i);
  for (const auto& cuts : cut_sets) {
    auto got = staged_step(m, batch, cuts);
    CHECK(got.first == Approx(ref.first).epsilon(1e-6));
    REQUIRE(got.second.size() == ref.second.size());
    for (size_t i = 0; i < got.second.size(); ++i) {
      CHECK(torch::allclose(got.second[i], ref.second[i], 1e-5, 1e-7));
    }
  }
  auto one = staged_step(m, batch, each);
  CHECK(one.first == Approx(ref.first).epsilon(1e-6));
  for (size_t i = 0; i < one.second.size(); ++i) {
    CHECK(torch::allclose(one.second[i], ref.second[i], 1e-5, 1e-7));
  }
}

}  // namespace

TEST_CASE("GPT: blocks and output shapes") {
  const auto cfg = st::tiny_gpt();
  sm::Model m = sm::build_model(cfg, st::text_info(16), 1);
  CHECK(m.name == "gpt");
  CHECK(m.task == sm::Task::kLanguageModel);
  REQUIRE(m.blocks.size() == 4);  // Embedding, 2 x TransformerBlock, LMHead
  CHECK(m.blocks[0]->name() == "Embedding");
  CHECK(m.blocks[1]->name() == "TransformerBlock");
  CHECK(m.blocks[3]->name() == "LMHead");
  auto shapes = run_shapes(m, torch::randint(0, 256, {3, 16}, torch::kLong));
  CHECK(shapes[0] == std::vector<int64_t>{3, 16, 32});
  CHECK(shapes[2] == std::vector<int64_t>{3, 16, 32});
  CHECK(shapes[3] == std::vector<int64_t>{3, 16, 256});
  // Shorter sequences than seq_len are fine.
  CHECK(run_shapes(m, torch::zeros({2, 5}, torch::kLong)).back() ==
        std::vector<int64_t>{2, 5, 256});
}

TEST_CASE("GPT: dropout acts in training mode only") {
  auto cfg = st::tiny_gpt();
  cfg.dropout = 0.5;
  sm::Model m = sm::build_model(cfg, st::text_info(16), 3);
  torch::NoGradGuard g;
  auto x = torch::randint(0, 256, {2, 16}, torch::kLong);
  auto run = [&] {
    at::Tensor h = x;
    for (auto& blk : m.blocks) h = blk->forward(h);
    return h;
  };
  CHECK_FALSE(torch::equal(run(), run()));  // training: fresh masks each time
  m.train(false);
  for (auto& blk : m.blocks) CHECK_FALSE(blk->is_training());
  CHECK(torch::equal(run(), run()));
}

TEST_CASE("GPT: attention is causal") {
  sm::Model m = sm::build_model(st::tiny_gpt(), st::text_info(16), 3);
  torch::NoGradGuard g;
  auto x = torch::randint(0, 256, {2, 16}, torch::kLong);
  auto y = x.clone();
  y.select(1, 10).fill_(7);  // change position 10 only
  at::Tensor a = x, b = y;
  for (auto& blk : m.blocks) {
    a = blk->forward(a);
    b = blk->forward(b);
  }
  CHECK(torch::equal(a.slice(1, 0, 10), b.slice(1, 0, 10)));  // the past is unaffected
  CHECK_FALSE(torch::allclose(a.slice(1, 10, 16), b.slice(1, 10, 16)));
}

TEST_CASE("CNN and MLP: blocks and output shapes") {
  sm::Model cnn = sm::build_model(st::tiny_cnn(), st::image_info(), 1);
  REQUIRE(cnn.blocks.size() == 4);  // Stem, 2 x ResidualBlock (the second strided), Head
  auto shapes = run_shapes(cnn, torch::randn({3, 1, 28, 28}));
  CHECK(shapes[0] == std::vector<int64_t>{3, 8, 28, 28});
  CHECK(shapes[1] == std::vector<int64_t>{3, 8, 28, 28});
  CHECK(shapes[2] == std::vector<int64_t>{3, 16, 14, 14});
  CHECK(shapes[3] == std::vector<int64_t>{3, 10});

  sm::Model mlp = sm::build_model(st::tiny_mlp(), st::image_info(), 1);
  REQUIRE(mlp.blocks.size() == 3);
  shapes = run_shapes(mlp, torch::randn({3, 1, 28, 28}));
  CHECK(shapes[0] == std::vector<int64_t>{3, 32});
  CHECK(shapes[2] == std::vector<int64_t>{3, 10});
}

TEST_CASE("build_model: the seed fixes the parameters") {
  auto same = [](const sm::Model& a, const sm::Model& b) {
    auto pa = a.parameters(), pb = b.parameters();
    if (pa.size() != pb.size()) return false;
    for (size_t i = 0; i < pa.size(); ++i) {
      if (!torch::equal(pa[i], pb[i])) return false;
    }
    return true;
  };
  for (const auto& cfg : {st::tiny_gpt(), st::tiny_cnn(), st::tiny_mlp()}) {
    const auto info = cfg.name == "gpt" ? st::text_info(16) : st::image_info();
    auto a = sm::build_model(cfg, info, 42);
    torch::randn({100});  // disturb the global RNG in between
    auto b = sm::build_model(cfg, info, 42);
    auto c = sm::build_model(cfg, info, 43);
    CHECK(same(a, b));
    CHECK_FALSE(same(a, c));
  }
}

TEST_CASE("FLOPs per sample follow the layer shapes") {
  const auto cfg = st::tiny_gpt();
  sm::Model m = sm::build_model(cfg, st::text_info(16), 1);
  const double t = cfg.seq_len, c = cfg.d_model;
  // Transformer block: 2 T x (matrix weights) + QK^T and AV (2 T^2 C MACs).
  double weights = 0;
  for (const auto& p : m.blocks[1]->named_parameters()) {
    if (p.value().dim() == 2) weights += static_cast<double>(p.value().numel());
  }
  CHECK(m.blocks[1]->forward_flops_per_sample() == Approx(2 * t * weights + 4 * t * t * c));
  CHECK(m.blocks[3]->forward_flops_per_sample() == Approx(2 * t * c * 256));
  sm::Model mlp = sm::build_model(st::tiny_mlp(), st::image_info(), 1);
  for (const auto& b : mlp.blocks) {
    double w = 0;
    for (const auto& p : b->named_parameters()) {
      if (p.value().dim() == 2) w += static_cast<double>(p.value().numel());
    }
    CHECK(b->forward_flops_per_sample() == Approx(2 * w));
  }
  CHECK(m.forward_flops_per_sample(0, m.blocks.size()) ==
        Approx(m.blocks[0]->forward_flops_per_sample() + 2 * (2 * t * weights + 4 * t * t * c) +
               2 * t * c * 256));
  sm::Model cnn = sm::build_model(st::tiny_cnn(), st::image_info(), 1);
  // Stem: 3x3 conv 1 -> 8 channels at 28x28.
  CHECK(cnn.blocks[0]->forward_flops_per_sample() == Approx(2.0 * 9 * 8 * 28 * 28));
  // Strided block: 3x3 8->16 and 16->16 at 14x14, plus the 1x1 8->16 projection.
  CHECK(cnn.blocks[2]->forward_flops_per_sample() ==
        Approx(2.0 * 14 * 14 * (9 * 8 * 16 + 9 * 16 * 16 + 8 * 16)));
}

TEST_CASE("Cut exactness: stage groups equal the unsplit model (loss and gradients)") {
  SECTION("gpt") {
    check_cut_exact(st::tiny_gpt(), st::text_info(16), {{0, 2, 4}, {0, 1, 2, 3, 4}});
  }
  SECTION("cnn") {
    check_cut_exact(st::tiny_cnn(), st::image_info(), {{0, 1, 4}, {0, 2, 3, 4}});
  }
  SECTION("mlp") {
    check_cut_exact(st::tiny_mlp(), st::image_info(), {{0, 2, 3}});
  }
}

TEST_CASE("build_model: mismatched model, data set and config are usage errors") {
  auto gpt = st::tiny_gpt();
  CHECK_THROWS_MATCHES(sm::build_model(gpt, st::image_info(), 1), slowpipe::UsageError,
                       WhatContains("gpt"));
  CHECK_THROWS_AS(sm::build_model(st::tiny_cnn(), st::text_info(16), 1), slowpipe::UsageError);
  CHECK_THROWS_AS(sm::build_model(st::tiny_mlp(), st::text_info(16), 1), slowpipe::UsageError);
  gpt.heads = 5;
  CHECK_THROWS_MATCHES(sm::build_model(gpt, st::text_info(16), 1), slowpipe::UsageError,
                       WhatContains("model.heads"));
  gpt = st::tiny_gpt();
  CHECK_THROWS_MATCHES(sm::build_model(gpt, st::text_info(32), 1), slowpipe::UsageError,
                       WhatContains("model.seq_len"));
  gpt.name = "rnn";
  CHECK_THROWS_MATCHES(sm::build_model(gpt, st::text_info(16), 1), slowpipe::UsageError,
                       WhatContains("gpt"));
}

TEST_CASE("ModelConfig: keys and defaults") {
  sm::ModelConfig cfg;
  slowpipe::OptionSet opts;
  sm::describe_options(cfg, opts);
  CHECK(opts.get("model.name") == "gpt");
  CHECK(opts.get("model.layers") == "4");
  CHECK(opts.get("model.dropout") == "0");
  opts.set("model.name", "cnn");
  opts.set("model.channels", "32");
  CHECK(cfg.name == "cnn");
  CHECK(cfg.channels == 32);
  CHECK_THROWS_AS(opts.set("model.name", "rnn"), slowpipe::UsageError);
  CHECK_THROWS_AS(opts.set("model.layers", "0"), slowpipe::UsageError);
  CHECK_THROWS_AS(opts.set("model.dropout", "1"), slowpipe::UsageError);
  // The built-ins first (another test case registers a model after them).
  const auto names = sm::model_names();
  CHECK(std::vector<std::string>(names.begin(), names.begin() + 3) ==
        std::vector<std::string>{"gpt", "cnn", "mlp"});
}

TEST_CASE("Model registry: the built-ins and a user's model go through register_model") {
  const size_t before = sm::model_registry().size();
  CHECK(before >= 3);
  CHECK(sm::find_model("cnn").shape_keys.front() == "model.layers");
  sm::ModelEntry tiny;
  tiny.name = "test-registry-tiny";
  tiny.description = "a model registered by a test";
  tiny.build = [](const sm::ModelConfig& cfg, const sm::DatasetInfo& data) {
    return sm::build_mlp(cfg, data);
  };
  sm::register_model(tiny);
  CHECK(sm::model_registry().size() == before + 1);
  CHECK(sm::model_names().back() == "test-registry-tiny");
  CHECK(sm::find_model("test-registry-tiny").description == "a model registered by a test");
  // model.name's choices are the models' facts (torch-free): every model has
  // them, in the registry's order, so the new name is selectable.
  CHECK(sm::model_facts_registry().names() == sm::model_names());
  sm::ModelConfig cfg;
  slowpipe::OptionSet opts;
  sm::describe_options(cfg, opts);
  opts.set("model.name", "test-registry-tiny");
  CHECK(cfg.name == "test-registry-tiny");
  // A built-in's name is taken: the built-ins were registered the same way.
  sm::ModelEntry dup = tiny;
  dup.name = "gpt";
  CHECK_THROWS_AS(sm::register_model(dup), std::logic_error);
  CHECK_THROWS_AS(sm::register_model(tiny), std::logic_error);
  CHECK_THROWS_WITH(sm::find_model("rnn"), Catch::Contains("'model.name'") &&
                                               Catch::Contains("unknown model 'rnn'") &&
                                               Catch::Contains("gpt, cnn, mlp"));
}

TEST_CASE("Model registry: an entry's default data set and block outputs reach the other layers") {
  // The built-ins: gpt is sized for bytes of text, the image models for 28x28 images.
  sm::ModelConfig gpt;
  gpt.name = "gpt";
  gpt.seq_len = 24;
  const sm::DatasetInfo text = sm::find_model("gpt").default_data(gpt);
  CHECK(text.sample_shape == std::vector<int64_t>{24});
  CHECK(text.num_classes == 256);
  CHECK(sm::find_model("mlp").default_data(gpt).sample_shape == std::vector<int64_t>{1, 28, 28});
  // Every built-in has block outputs in the torch-free facts (the summary's sizes).
  for (const char* name : {"gpt", "cnn", "mlp"}) CHECK(sm::model_facts_registry().find(name));

  // A model added from outside: its default data set is what the memory check
  // sizes it for, and its block outputs are registered for the summary.
  sm::ModelEntry wide;
  wide.name = "test-registry-wide";
  wide.description = "a model whose footprint depends on the data set";
  wide.build = [](const sm::ModelConfig& cfg, const sm::DatasetInfo& data) {
    return sm::build_mlp(cfg, data);
  };
  wide.footprint = [](const sm::ModelConfig&, const sm::DatasetInfo& data) {
    return sm::ModelFootprint{static_cast<double>(data.num_classes), 0};
  };
  wide.default_data = [](const sm::ModelConfig&) {
    return sm::DatasetInfo{"wide", sm::Task::kClassification, {3}, 1000, ""};
  };
  wide.block_output_elements = [](const sm::ConfigNumber& number, int block) {
    return block == 0 ? number("config.model.hidden") * 2 : std::nan("");
  };
  sm::register_model(wide);
  sm::ModelConfig cfg;
  cfg.name = "test-registry-wide";
  CHECK(sm::estimate_training_memory(cfg).parameters == 1000);
  const auto number = [](const std::string& key) {
    return key == "config.model.hidden" ? 21.0 : std::nan("");
  };
  CHECK(sm::block_output_elements("test-registry-wide", number, 0) == 42);
  CHECK(std::isnan(sm::block_output_elements("test-registry-wide", number, 1)));
  CHECK(std::isnan(sm::block_output_elements("no-such-model", number, 0)));
}

TEST_CASE("loss and correct: cross-entropy and argmax hits") {
  auto logits = torch::tensor({{2.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 1.0f}});  // [2, 3]
  auto targets = torch::tensor({0, 1}, torch::kLong);
  const double l0 = -std::log(std::exp(2.0) / (std::exp(2.0) + 2.0));
  const double l1 = -std::log(1.0 / (2.0 + std::exp(1.0)));
  CHECK(sm::loss(sm::Task::kClassification, logits, targets).item<double>() ==
        Approx((l0 + l1) / 2).epsilon(1e-6));
  CHECK(sm::correct(sm::Task::kClassification, logits, targets) == 1);
  // LM: [B=1, T=2, V=3] behaves as 2 classification rows.
  CHECK(sm::loss(sm::Task::kLanguageModel, logits.unsqueeze(0), targets.unsqueeze(0))
            .item<double>() == Approx((l0 + l1) / 2).epsilon(1e-6));
}
