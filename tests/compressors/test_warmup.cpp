// compress.warmup_epochs (WarmupChannel, warmup.h): every boundary channel sends
// fp32 during the warm-up epochs and its own codec afterwards; the wrapped
// feedback state is untouched in warm-up; AQ-SGD warms up for
// max(warmup_epochs, aq_warmup_epochs); topk:shared leaves no mask behind; the
// epoch is part of the saved state; infer() never changes a codec's random stream.
#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "compressors/channels/factory.h"
#include "compressors/channels/internal/warmup.h"
#include "tests/common/parsed_spec.h"

namespace sc = slowpipe::compressors;

using slowpipe::test::parsed;

namespace {

sc::ChannelContext context(int warmup, int aq_warmup = 1) {
  sc::ChannelContext ctx;
  ctx.num_samples = 8;
  ctx.plain_warmup_epochs = warmup;
  ctx.warmup_epochs = aq_warmup;
  ctx.seed = 7;
  return ctx;
}

at::Tensor ids(int64_t start) {
  return at::arange(start, start + 4, at::kLong);
}

}  // namespace

TEST_CASE("Warm-up: q2 / q4 send fp32 in epoch 0 and their codec from epoch 1") {
  const sc::Shape shape = {4, 6, 32};
  const uint64_t fp32 = 4 * 4 * 6 * 32;
  sc::Boundary b = sc::make_boundary(parsed("q2"), parsed("q4"), context(1));
  auto q2 = sc::make_codec("q2"), q4 = sc::make_codec("q4");
  REQUIRE(b.fw->spec() == "q2");  // the logged spec is the codec's, warm-up or not
  for (int epoch = 0; epoch < 3; ++epoch) {
    INFO("epoch " << epoch);
    b.fw->set_epoch(epoch);
    b.bw->set_epoch(epoch);
    for (int64_t start : {0, 4}) {
      at::Tensor a = at::randn(shape), g = at::randn(shape);
      sc::TransferStats fs, bs;
      at::Tensor ra = b.fw->transfer(a, ids(start), &fs);
      at::Tensor rg = b.bw->transfer(g, ids(start), &bs);
      if (epoch == 0) {
        REQUIRE(fs.bytes == fp32);
        REQUIRE(bs.bytes == fp32);
        REQUIRE(at::equal(ra, a));
        REQUIRE(at::equal(rg, g));
        REQUIRE(fs.rel_error == 0.0);
      } else {
        REQUIRE(fs.bytes == sc::wire_bytes(parsed("q2"), shape));
        REQUIRE(bs.bytes == sc::wire_bytes(parsed("q4"), shape));
        REQUIRE(fs.bytes * 10 < fp32);  // the control: really compressed now
        REQUIRE(at::equal(ra, q2->decode(q2->encode(a), shape)));
        REQUIRE(at::equal(rg, q4->decode(q4->encode(g), shape)));
      }
    }
  }
}

TEST_CASE("Warm-up: 0 epochs builds the bare channels; make_channel never wraps") {
  sc::Boundary b = sc::make_boundary(parsed("q2"), parsed("q4"), context(0));
  REQUIRE(dynamic_cast<sc::WarmupChannel*>(b.fw.get()) == nullptr);
  REQUIRE(dynamic_cast<sc::WarmupChannel*>(b.bw.get()) == nullptr);
  REQUIRE(dynamic_cast<sc::WarmupChannel*>(sc::make_channel(parsed("q4"), context(2)).get()) ==
          nullptr);
  sc::TransferStats st;
  b.fw->transfer(at::randn({4, 32}), ids(0), &st);
  REQUIRE(st.bytes == sc::wire_bytes(parsed("q2"), {4, 32}));
}

TEST_CASE("Warm-up: EF and EF21 state is untouched in warm-up") {
  // After W warm-up epochs the channel transfers exactly as a fresh one would.
  for (const std::string spec : {"ef(q2)", "ef21(q4)", "ef(topk:0.2)"}) {
    INFO(spec);
    sc::Boundary warm = sc::make_boundary(parsed(spec), parsed("none"), context(2));
    auto fresh = sc::make_channel(parsed(spec), context(0));
    const uint64_t state_before = warm.fw->state_bytes();
    for (int epoch = 0; epoch < 2; ++epoch) {
      warm.fw->set_epoch(epoch);
      warm.fw->transfer(at::randn({4, 40}) * 3.0, ids(0), nullptr);
    }
    REQUIRE(warm.fw->state_bytes() == state_before);  // no residual / g was created
    warm.fw->set_epoch(2);
    for (int t = 0; t < 5; ++t) {
      at::Tensor x = at::randn({4, 40});
      sc::TransferStats a, b;
      REQUIRE(at::equal(warm.fw->transfer(x, ids(0), &a), fresh->transfer(x, ids(0), &b)));
      REQUIRE(a.bytes == b.bytes);
    }
  }
}

TEST_CASE("Warm-up: AQ-SGD warms up for max(warmup_epochs, aq_warmup_epochs)") {
  const sc::Shape shape = {4, 50};
  const uint64_t fp32 = 4 * 200, q2 = sc::wire_bytes(parsed("q2"), shape);
  struct Case {
    int warmup, aq_warmup, expected;
  };
  for (const Case c : {Case{0, 1, 1}, Case{1, 1, 1}, Case{2, 1, 2}, Case{1, 3, 3}, Case{0, 0, 0}}) {
    INFO("warmup_epochs " << c.warmup << ", aq_warmup_epochs " << c.aq_warmup);
    // Direct q2 beside it: warms up for warmup_epochs exactly.
    sc::Boundary aq =
        sc::make_boundary(parsed("aq(q2)"), parsed("aq(q2)"), context(c.warmup, c.aq_warmup));
    sc::Boundary direct =
        sc::make_boundary(parsed("q2"), parsed("q2"), context(c.warmup, c.aq_warmup));
    for (int epoch = 0; epoch < 4; ++epoch) {
      for (sc::Channel* ch : {aq.fw.get(), aq.bw.get(), direct.fw.get(), direct.bw.get()}) {
        ch->set_epoch(epoch);
        sc::TransferStats st;
        ch->transfer(at::randn(shape), ids(0), &st);
        const bool is_aq = ch == aq.fw.get() || ch == aq.bw.get();
        const int w = is_aq ? c.expected : c.warmup;
        REQUIRE(st.bytes == (epoch < w ? fp32 : q2));
      }
    }
  }
}

TEST_CASE("Warm-up: topk:shared backward sends fp32 in warm-up and leaves no mask behind") {
  const sc::Shape shape = {4, 5, 20};
  const uint64_t fp32 = 4 * 400;
  for (const std::string fw : {"topk:0.3", "ef(topk:0.3)", "aq(topk:0.3)"}) {
    INFO(fw);
    sc::Boundary b = sc::make_boundary(parsed(fw), parsed("topk:shared"), context(1));
    const uint64_t shared = sc::wire_bytes(parsed("topk:0.3"), parsed("topk:shared"), shape);
    for (int epoch = 0; epoch < 3; ++epoch) {
      b.fw->set_epoch(epoch);
      b.bw->set_epoch(epoch);
      for (int64_t start : {0, 4}) {
        sc::TransferStats fs, bs;
        b.fw->transfer(at::randn(shape), ids(start), &fs);
        at::Tensor g = at::randn(shape) + 5.0;
        at::Tensor rg = b.bw->transfer(g, ids(start), &bs);
        REQUIRE(bs.bytes == (epoch == 0 ? fp32 : shared));
        if (epoch == 0) REQUIRE(at::equal(rg, g));
        sc::StateDict state;
        b.bw->save_state("b0.bw.", state);
        REQUIRE(sc::get_int(state, "b0.bw.masks.count") == 0);  // none pending
      }
    }
  }
}

TEST_CASE("Warm-up: the epoch is saved; a restored channel continues bit for bit") {
  for (int saved_at : {0, 1, 2}) {  // mid warm-up, on the boundary, after it
    INFO("saved at transfer " << saved_at);
    auto make = [] {
      return sc::make_boundary(parsed("ef(q2:stochastic)"), parsed("q4"), context(1));
    };
    sc::Boundary a = make();
    std::vector<at::Tensor> xs;
    xs.reserve(6);
    for (int t = 0; t < 6; ++t) xs.push_back(at::randn({4, 30}));
    auto run = [&xs](sc::Boundary& b, int t) {
      b.fw->set_epoch(t / 2);  // epoch 0 = transfers 0 and 1
      return b.fw->transfer(xs[t], ids(0), nullptr);
    };
    for (int t = 0; t < saved_at; ++t) run(a, t);
    if (saved_at > 0) a.fw->set_epoch((saved_at - 1) / 2);
    sc::StateDict state;
    a.fw->save_state("b0.fw.", state);
    REQUIRE(sc::get_int(state, "b0.fw.warmup.epoch") == (saved_at > 0 ? (saved_at - 1) / 2 : 0));
    sc::Boundary b = make();
    b.fw->load_state("b0.fw.", state);
    for (int t = saved_at; t < 6; ++t) REQUIRE(at::equal(run(a, t), run(b, t)));
  }
}

TEST_CASE("infer: the inner codec in warm-up too, and no codec random stream moves") {
  const sc::Shape shape = {4, 64};
  for (const std::string spec :
       {"q2:stochastic", "ef(q2:stochastic)", "ef21(randk:0.3)", "randk:0.2+q4:stochastic"}) {
    INFO(spec);
    sc::Boundary with = sc::make_boundary(parsed(spec), parsed("none"), context(1));
    sc::Boundary without = sc::make_boundary(parsed(spec), parsed("none"), context(1));
    at::Tensor probe = at::randn(shape);
    // In warm-up, inference still applies the codec (it is not fp32).
    sc::TransferStats is;
    at::Tensor inferred = with.fw->infer(probe, &is);
    REQUIRE_FALSE(at::equal(inferred, probe));
    REQUIRE(is.bytes < 4 * 256);
    for (int t = 0; t < 6; ++t) {
      at::Tensor x = at::randn(shape);
      with.fw->set_epoch(t / 2);
      without.fw->set_epoch(t / 2);
      at::Tensor e1 = with.fw->infer(probe, nullptr);
      REQUIRE(at::equal(e1, with.fw->infer(probe, nullptr)));  // a pure function of the state
      REQUIRE(at::equal(with.fw->transfer(x, ids(0), nullptr),
                        without.fw->transfer(x, ids(0), nullptr)));
    }
  }
}
