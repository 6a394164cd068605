// Channels without per-sample state: none is a pass-through, EF keeps
// e = x + e - C(x + e), EF21's two copies of g stay identical, the shared-mask
// backward applies the forward mask of the same micro-batch.
#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <set>

#include "compressors/codecs/codec.h"
#include "compressors/channels/factory.h"
#include "compressors/channels/internal/feedback.h"
#include "tests/common/parsed_spec.h"

namespace sc = slowpipe::compressors;

using slowpipe::test::parsed;

TEST_CASE("Channel none: a true pass-through charging 4 bytes per element") {
  auto ch = sc::make_channel(parsed("none"), sc::ChannelContext{});
  at::Tensor x = at::randn({4, 3, 10});
  sc::TransferStats stats;
  at::Tensor y = ch->transfer(x, at::Tensor(), &stats);
  REQUIRE(at::equal(x, y));
  REQUIRE(stats.bytes == 4 * 120);
  REQUIRE(stats.rel_error == 0.0);
  // Dtype is preserved.
  at::Tensor xd = at::randn({2, 5}, at::kDouble);
  REQUIRE(ch->transfer(xd, at::Tensor(), nullptr).scalar_type() == at::kDouble);
}

TEST_CASE("Channel direct: output equals decode(encode(x)); relative error reported") {
  auto ch = sc::make_channel(parsed("q4"), sc::ChannelContext{});
  auto codec = sc::make_codec("q4");
  at::Tensor x = at::randn({4, 8, 32});
  sc::TransferStats stats;
  at::Tensor y = ch->transfer(x, at::Tensor(), &stats);
  REQUIRE(at::equal(y, codec->decode(codec->encode(x), {4, 8, 32})));
  double rel = (x - y).norm().item<double>() / x.norm().item<double>();
  REQUIRE(stats.rel_error == Approx(rel).epsilon(1e-6));
  REQUIRE(stats.rel_error > 0.01);
  REQUIRE(stats.rel_error < 0.2);
}

TEST_CASE("EF: memory equals x + e - C(x + e) at every step") {
  for (const std::string inner : {"topk:0.1", "q2", "sign"}) {
    INFO(inner);
    auto ch = sc::make_channel(parsed("ef(" + inner + ")"), sc::ChannelContext{});
    auto* ef = dynamic_cast<sc::EfChannel*>(ch.get());
    REQUIRE(ef != nullptr);
    auto codec = sc::make_codec(inner);
    at::Tensor e = at::zeros({3, 50});
    for (int step = 0; step < 20; ++step) {
      at::Tensor x = at::randn({3, 50});
      at::Tensor y = ch->transfer(x, at::Tensor(), nullptr);
      at::Tensor p = x + e;
      at::Tensor c = codec->decode(codec->encode(p), {3, 50});
      REQUIRE(at::equal(y, c));
      e = p - c;
      at::Tensor got = at::from_blob(const_cast<float*>(ef->error().data()), {3, 50}, at::kFloat);
      REQUIRE(at::allclose(got, e, 1e-6, 1e-6));
    }
    REQUIRE(ch->state_bytes() == 4 * 150);
    // Summed over steps, what was received tracks what was sent (EF's point).
  }
}

TEST_CASE("EF21: sender and receiver copies identical after many steps; g tracks x") {
  for (const std::string inner : {"q2:stochastic", "topk:0.2", "q4:row"}) {
    INFO(inner);
    auto ch = sc::make_channel(parsed("ef21(" + inner + ")"), sc::ChannelContext{});
    auto* ef21 = dynamic_cast<sc::Ef21Channel*>(ch.get());
    REQUIRE(ef21 != nullptr);
    at::Tensor base = at::randn({4, 64});
    double first_err = -1, last_err = -1;
    for (int step = 0; step < 200; ++step) {
      at::Tensor x = base + 0.01 * at::randn({4, 64});  // a slowly varying signal
      sc::TransferStats stats;
      at::Tensor y = ch->transfer(x, at::Tensor(), &stats);
      REQUIRE(ef21->sender_state() == ef21->receiver_state());
      REQUIRE(std::equal(ef21->receiver_state().begin(), ef21->receiver_state().end(),
                         y.data_ptr<float>()));
      if (step == 0) first_err = stats.rel_error;
      last_err = stats.rel_error;
    }
    REQUIRE(last_err < first_err);
  }
}

TEST_CASE("Shared mask: the backward reuses the forward mask of the same micro-batch") {
  sc::Boundary b =
      sc::make_boundary(parsed("topk:0.1"), parsed("topk:shared"), sc::ChannelContext{});
  // Two micro-batches forward, then their backwards in reverse order (1F1B-like).
  at::Tensor ids0 = at::arange(0, 4, at::kLong), ids1 = at::arange(4, 8, at::kLong);
  at::Tensor a0 = at::randn({4, 100}), a1 = at::randn({4, 100});
  at::Tensor y0 = b.fw->transfer(a0, ids0, nullptr);
  at::Tensor y1 = b.fw->transfer(a1, ids1, nullptr);
  at::Tensor g1 = at::randn({4, 100}), g0 = at::randn({4, 100});
  at::Tensor h1 = b.bw->transfer(g1, ids1, nullptr);
  at::Tensor h0 = b.bw->transfer(g0, ids0, nullptr);
  REQUIRE(at::equal(h1, at::where(y1 != 0, g1, at::zeros_like(g1))));
  REQUIRE(at::equal(h0, at::where(y0 != 0, g0, at::zeros_like(g0))));
  REQUIRE(at::equal(h1 != 0, y1 != 0));
  // No mask left: another backward for the same ids is a logic error.
  REQUIRE_THROWS_AS(b.bw->transfer(g0, ids0, nullptr), std::logic_error);
  // Evaluation does not publish masks.
  b.fw->infer(a0, nullptr);
  REQUIRE_THROWS_AS(b.bw->transfer(g0, ids0, nullptr), std::logic_error);
}
