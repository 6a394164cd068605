// Model shapes from keys (timing.layers, timing.d_model, timing.vocab,
// timing.seq, timing.mlp_width over the chosen shape): the resolved shape,
// its FLOPs and parameters against the closed forms of models/facts/model_shape.h, an
// explicit MLP width equal to ratio x d giving the ratio's numbers, and the
// errors.
#include <catch2/catch.hpp>

#include "common/errors.h"
#include "common/options.h"
#include "models/facts/model_shape.h"
#include "whatif/what_if.h"

namespace nm = slowpipe::netmodel;
namespace wi = slowpipe::whatif;
namespace md = slowpipe::models;

TEST_CASE("What-if shape keys: any GPT-like shape from its dimensions") {
  wi::WhatIfConfig w;
  slowpipe::OptionSet o;
  wi::describe_options(w, o);
  o.set("timing.model", "gpt2-small");
  o.set("timing.layers", "8");
  o.set("timing.d_model", "1024");
  o.set("timing.vocab", "50304");
  o.set("timing.seq", "512");
  o.set("timing.mlp_width", "3000");
  o.set("timing.stages", "8");
  o.set("timing.batch", "16");
  o.set("timing.microbatch", "2");
  const md::ModelShape m = wi::resolve_what_if(w).shape;
  CHECK(m.layers == 8);
  CHECK(m.hidden == 1024);
  CHECK(m.vocab == 50304);
  CHECK(m.seq == 512);
  CHECK(md::mlp_width(m) == 3000);
  CHECK(m.stages == 8);
  CHECK(m.batch / m.microbatch_size == 8);
  const double d = 1024, t = 512, f = 3000;
  const double per_token = 2 * (4 * d * d + 2 * d * f) + 2 * t * d * 2;
  CHECK(md::forward_flops(m, 3) == Approx(per_token * t * 2));
  CHECK(md::forward_flops(m, 7) == Approx((per_token + 2 * d * 50304) * t * 2));
  CHECK(md::stage_parameters(m, 3) == Approx(4 * d * d + 2 * d * f));
}

TEST_CASE("What-if shape keys: an MLP width of ratio x d is the ratio's shape") {
  md::ModelShape ratio = md::find_model_shape("test", "gpt2-xl");
  md::ModelShape width = ratio;
  width.mlp_width = 4 * ratio.hidden;
  for (int s = 0; s < ratio.stages; ++s) {
    CHECK(md::forward_flops(width, s) == Approx(md::forward_flops(ratio, s)).epsilon(1e-12));
    CHECK(md::stage_parameters(width, s) == Approx(md::stage_parameters(ratio, s)).epsilon(1e-12));
  }
  width.mlp_width = 2 * ratio.hidden;  // control: a narrower MLP is cheaper
  CHECK(md::forward_flops(width, 0) < md::forward_flops(ratio, 0));
}

TEST_CASE("What-if shape keys: fewer layers than stages, a width below the subspace") {
  wi::WhatIfConfig w;
  w.layers = 4;  // gpt2-xl's 8 stages
  CHECK_THROWS_AS(wi::resolve_what_if(w), slowpipe::UsageError);
  w.layers = 0;
  w.d_model = 128;
  w.subspace = 160;
  CHECK_THROWS_AS(wi::resolve_what_if(w), slowpipe::UsageError);
  w.subspace = 0;
  w.token_id_bytes = 2;  // token ids need a subspace
  CHECK_THROWS_AS(wi::resolve_what_if(w), slowpipe::UsageError);
}
