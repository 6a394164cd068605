// Model sizes from the config alone: the parameter counts match the built
// models exactly (differential test), and configs too large for memory are
// refused before anything is allocated, naming the key to reduce, while real
// sizes (GPT-2 small) pass.
#include <catch2/catch.hpp>

#include "common/errors.h"
#include "matchers.h"
#include "model_fixtures.h"
#include "models/torch/model_limits.h"
#include "models/torch/model_registry.h"

namespace sm = slowpipe::models;
namespace st = slowpipe::models::testing;
using st::WhatContains;

namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

double built_parameters(const sm::ModelConfig& cfg, const sm::DatasetInfo& data) {
  const sm::Model m = sm::build_model(cfg, data, 1);
  return static_cast<double>(m.parameter_count(0, m.blocks.size()));
}

}  // namespace

TEST_CASE("Model limits: parameter counts from the config equal the built models'") {
  for (int layers : {1, 2, 3}) {
    auto gpt = st::tiny_gpt();
    gpt.layers = layers;
    auto cnn = st::tiny_cnn();
    cnn.layers = layers;
    cnn.channels = 6;
    auto mlp = st::tiny_mlp();
    mlp.layers = layers;
    const auto text = st::text_info(16);
    const auto image = st::image_info();
    sm::MemoryBudget budget;
    budget.data = &text;
    CHECK(sm::estimate_training_memory(gpt, budget).parameters == built_parameters(gpt, text));
    budget.data = &image;
    CHECK(sm::estimate_training_memory(cnn, budget).parameters == built_parameters(cnn, image));
    CHECK(sm::estimate_training_memory(mlp, budget).parameters == built_parameters(mlp, image));
  }
  // The default GPT: 867 k parameters (docs/models.md).
  const sm::ModelConfig def;
  CHECK(sm::estimate_training_memory(def).parameters == Approx(867e3).epsilon(0.01));
}

TEST_CASE("Model limits: sizes that cannot be allocated name the key, before building") {
  auto refused = [](const sm::ModelConfig& cfg, const std::string& key) {
    CHECK_THROWS_MATCHES(
        sm::validate_model_config(cfg), slowpipe::UsageError,
        WhatContains(key + "=") && WhatContains("too large") && WhatContains("reduce " + key));
    // build_model refuses it too, before allocating a parameter.
    const auto data = cfg.name == "gpt" ? st::text_info(16) : st::image_info();
    CHECK_THROWS_MATCHES(sm::build_model(cfg, data, 1), slowpipe::UsageError,
                         WhatContains("reduce " + key));
  };
  sm::ModelConfig gpt;
  gpt.d_model = 65536;
  refused(gpt, "model.d_model");
  gpt = sm::ModelConfig{};
  gpt.seq_len = 1 << 20;
  refused(gpt, "model.seq_len");
  gpt = sm::ModelConfig{};
  gpt.d_model = 8192;
  gpt.layers = 256;
  refused(gpt, "model.d_model");
  auto mlp = st::tiny_mlp();
  mlp.hidden = 1 << 20;
  mlp.layers = 8;
  refused(mlp, "model.hidden");
  auto cnn = st::tiny_cnn();
  cnn.channels = 4096;
  cnn.layers = 64;
  refused(cnn, "model.channels");
}

TEST_CASE("Model limits: the budget counts replicas and the samples of a batch") {
  sm::ModelConfig gpt2_small;  // GPT-2 small's shape: 12 x 768, 12 heads, 1024 context
  gpt2_small.layers = 12;
  gpt2_small.d_model = 768;
  gpt2_small.heads = 12;
  gpt2_small.seq_len = 1024;
  sm::MemoryBudget budget;
  budget.memory_bytes = 16 * kGiB;
  CHECK_NOTHROW(sm::validate_model_config(gpt2_small, budget));
  budget.batch_samples = 8;
  CHECK_NOTHROW(sm::validate_model_config(gpt2_small, budget));
  const auto one = sm::estimate_training_memory(gpt2_small);
  CHECK(one.parameters == Approx(86e6).epsilon(0.02));
  budget.batch_samples = 64;  // ~1 GiB of activations per sample at T = 1024
  CHECK_THROWS_MATCHES(sm::validate_model_config(gpt2_small, budget), slowpipe::UsageError,
                       WhatContains("64 samples"));
  budget.batch_samples = 1;
  budget.replicas = 64;  // 64 copies of 86 M parameters and their gradients: 41 GiB
  CHECK_THROWS_AS(sm::validate_model_config(gpt2_small, budget), slowpipe::UsageError);
  // This machine holds the default model and GPT-2 small at batch 1.
  CHECK_NOTHROW(sm::validate_model_config(sm::ModelConfig{}));
  CHECK_NOTHROW(sm::validate_model_config(gpt2_small));
}

TEST_CASE("Model limits: shape config lists the model's own keys") {
  const auto gpt = sm::shape_config(st::tiny_gpt(), st::text_info(16));
  REQUIRE(gpt.size() == 4);
  CHECK((gpt[1] == std::pair<std::string, std::string>{"model.d_model", "32"}));
  const auto cnn = sm::shape_config(st::tiny_cnn(), st::image_info());
  CHECK((cnn.back() == std::pair<std::string, std::string>{"data.sample_shape", "1x28x28"}));
  CHECK(sm::build_model(st::tiny_mlp(), st::image_info(), 1).shape_config ==
        sm::shape_config(st::tiny_mlp(), st::image_info()));
  CHECK_THROWS_AS(sm::validate_model_config([] {
                    sm::ModelConfig c;
                    c.name = "nope";
                    return c;
                  }()),
                  slowpipe::UsageError);
}
