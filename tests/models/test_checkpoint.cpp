// Checkpoint tests: round trip, init_from in build_model (the fine-tuning path),
// and every mismatch named in the error (file and parameter).
#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "common/errors.h"
#include "matchers.h"
#include "model_fixtures.h"
#include "models/torch/checkpoint.h"
#include "models/torch/model_registry.h"
#include "temp_files.h"

namespace sm = slowpipe::models;
namespace st = slowpipe::models::testing;
using slowpipe::models::testing::WhatContains;

namespace {}  // namespace

TEST_CASE("Checkpoint: save then load restores every parameter") {
  st::TempFile file(".pt");
  for (const auto& cfg : {st::tiny_gpt(), st::tiny_cnn()}) {
    const auto info = cfg.name == "gpt" ? st::text_info(16) : st::image_info();
    sm::Model a = sm::build_model(cfg, info, 1);
    {
      torch::NoGradGuard g;  // make it differ from any fresh init
      for (auto& p : a.parameters()) p.add_(0.5);
    }
    sm::save_checkpoint(a, file.path());
    sm::Model b = sm::build_model(cfg, info, 2);
    REQUIRE_FALSE(st::same_params(a, b));
    sm::load_checkpoint(b, file.path());
    CHECK(st::same_params(a, b));
    // The fine-tuning path: build_model with init_from.
    auto cfg2 = cfg;
    cfg2.init_from = file.path();
    CHECK(st::same_params(a, sm::build_model(cfg2, info, 3)));
  }
}

TEST_CASE("Checkpoint: mismatches name the file and the parameter") {
  st::TempFile file(".pt");
  sm::Model gpt = sm::build_model(st::tiny_gpt(), st::text_info(16), 1);
  sm::save_checkpoint(gpt, file.path());

  SECTION("shape config mismatch: every differing key is named") {
    auto cfg = st::tiny_gpt();
    cfg.d_model = 48;
    cfg.layers = 3;
    sm::Model wide = sm::build_model(cfg, st::text_info(16), 5);
    const auto before = wide.parameters()[0].clone();
    CHECK_THROWS_MATCHES(sm::load_checkpoint(wide, file.path()), slowpipe::UsageError,
                         WhatContains(file.path()) &&
                             WhatContains("written for model.layers=2 and model.d_model=32") &&
                             WhatContains("this run has model.layers=3 and model.d_model=48"));
    CHECK(torch::equal(before, wide.parameters()[0]));  // untouched
  }
  SECTION("shape mismatch of a hand-built model (no shape config): the parameter is named") {
    auto cfg = st::tiny_gpt();
    cfg.d_model = 48;
    sm::Model wide = sm::build_model(cfg, st::text_info(16), 5);
    wide.shape_config.clear();
    const auto before = wide.parameters()[0].clone();
    CHECK_THROWS_MATCHES(sm::load_checkpoint(wide, file.path()), slowpipe::UsageError,
                         WhatContains(file.path()) &&
                             WhatContains("block 0 (Embedding) tok.weight") &&
                             WhatContains("[256, 32]"));
    CHECK(torch::equal(before, wide.parameters()[0]));  // untouched
  }
  SECTION("block count mismatch of a hand-built model") {
    auto cfg = st::tiny_gpt();
    cfg.layers = 3;
    sm::Model deep = sm::build_model(cfg, st::text_info(16), 5);
    deep.shape_config.clear();
    CHECK_THROWS_MATCHES(sm::load_checkpoint(deep, file.path()), slowpipe::UsageError,
                         WhatContains(file.path()) && WhatContains("blocks"));
  }
  SECTION("another model") {
    sm::Model cnn = sm::build_model(st::tiny_cnn(), st::image_info(), 5);
    CHECK_THROWS_MATCHES(sm::load_checkpoint(cnn, file.path()), slowpipe::UsageError,
                         WhatContains(file.path()) && WhatContains("'gpt'"));
  }
  SECTION("a parameter missing from the file") {
    sm::Model cnn = sm::build_model(st::tiny_cnn(), st::image_info(), 5);
    st::TempFile cnn_file(".pt");
    sm::save_checkpoint(cnn, cnn_file.path());
    auto cfg = st::tiny_cnn();
    cfg.layers = 2;
    cfg.channels = 6;  // groups change, shapes too: caught as a shape mismatch
    sm::Model other = sm::build_model(cfg, st::image_info(), 5);
    CHECK_THROWS_MATCHES(sm::load_checkpoint(other, cnn_file.path()), slowpipe::UsageError,
                         WhatContains(cnn_file.path()) && WhatContains("model.channels=8"));
    other.shape_config.clear();  // hand-built: the parameters are compared one by one
    CHECK_THROWS_MATCHES(sm::load_checkpoint(other, cnn_file.path()), slowpipe::UsageError,
                         WhatContains(cnn_file.path()) && WhatContains("Stem"));
    // An MLP renamed as a CNN-shaped model would lack parameters: fake the name.
    sm::Model mlp = sm::build_model(st::tiny_mlp(), st::image_info(), 5);
    mlp.name = "cnn";
    mlp.shape_config.clear();
    mlp.blocks.push_back(mlp.blocks.back());  // 4 blocks, as the saved CNN
    CHECK_THROWS_MATCHES(
        sm::load_checkpoint(mlp, cnn_file.path()), slowpipe::UsageError,
        WhatContains(cnn_file.path()) && WhatContains("lacks parameter block 0 (Dense) fc.weight"));
  }
  SECTION("missing and unreadable files") {
    CHECK_THROWS_MATCHES(sm::load_checkpoint(gpt, "/nonexistent/ckpt.pt"), slowpipe::UsageError,
                         WhatContains("/nonexistent/ckpt.pt"));
    st::TempFile junk(".pt");
    junk.write("this is not an archive");
    CHECK_THROWS_MATCHES(sm::load_checkpoint(gpt, junk.path()), slowpipe::DataError,
                         WhatContains(junk.path()));
    CHECK_THROWS_MATCHES(sm::save_checkpoint(gpt, "/nonexistent/dir/ckpt.pt"), slowpipe::UsageError,
                         WhatContains("/nonexistent/dir/ckpt.pt"));
  }
}
