// Channel::send / Channel::receive, the two halves a distributed run calls in two
// processes: on two channels built alike (one only sends, one only receives)
// they give bit for bit what transfer() gives on one channel, with the same
// bytes, for every feedback scheme, through warm-up, with `topk:shared`
// backwards (each side keeps its own mask store) and across epochs. Also: the
// sender's state really lives in the sender (a fresh receiver alone cannot
// decode an EF21 stream correctly).
#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "compressors/channels/factory.h"
#include "tests/common/parsed_spec.h"

namespace sc = slowpipe::compressors;

using slowpipe::test::parsed;

namespace {

sc::ChannelContext context(int plain_warmup, int aq_warmup) {
  sc::ChannelContext ctx;
  ctx.name = "split";
  ctx.num_samples = 16;
  ctx.plain_warmup_epochs = plain_warmup;
  ctx.warmup_epochs = aq_warmup;
  ctx.seed = 11;
  return ctx;
}

at::Tensor ids(int64_t start, int64_t n) {
  return at::arange(start, start + n, at::kLong);
}

// One boundary three times: `one` runs transfer(); `up` (the upstream stage)
// sends forward and receives backward; `down` receives forward and sends backward.
void check_boundary(const std::string& fw, const std::string& bw, int plain_warmup, int aq_warmup) {
  INFO("fw " << fw << ", bw " << bw << ", warm-up " << plain_warmup << "/" << aq_warmup);
  const sc::ChannelContext ctx = context(plain_warmup, aq_warmup);
  sc::Boundary one = sc::make_boundary(parsed(fw), parsed(bw), ctx);
  sc::Boundary up = sc::make_boundary(parsed(fw), parsed(bw), ctx);
  sc::Boundary down = sc::make_boundary(parsed(fw), parsed(bw), ctx);
  at::manual_seed(5);
  const sc::Shape shape = {4, 3, 40};
  for (int epoch = 0; epoch < 3; ++epoch) {
    for (sc::Boundary* b : {&one, &up, &down}) {
      b->fw->set_epoch(epoch);
      b->bw->set_epoch(epoch);
    }
    for (int step = 0; step < 2; ++step) {
      // Two micro-batches in flight (GPipe order): both forwards, then both backwards.
      std::vector<at::Tensor> acts, grads;
      for (int m = 0; m < 2; ++m) {
        acts.push_back(at::randn(shape));
        grads.push_back(at::randn(shape));
      }
      for (int m = 0; m < 2; ++m) {
        INFO("epoch " << epoch << ", step " << step << ", forward micro-batch " << m);
        const at::Tensor id = ids(4 * m + 8 * (step % 2), 4);
        sc::TransferStats a, b, c;
        const at::Tensor want = one.fw->transfer(acts[m], id, &a);
        sc::Message msg;
        up.fw->send(acts[m], id, msg, &b);
        const at::Tensor got = down.fw->receive(msg, shape, id, &c);
        REQUIRE(msg.size() == a.bytes);
        REQUIRE(b.bytes == a.bytes);
        REQUIRE(b.delta_norm == a.delta_norm);
        REQUIRE(at::equal(got, want));
      }
      for (int m = 1; m >= 0; --m) {
        INFO("epoch " << epoch << ", step " << step << ", backward micro-batch " << m);
        const at::Tensor id = ids(4 * m + 8 * (step % 2), 4);
        sc::TransferStats a, b;
        const at::Tensor want = one.bw->transfer(grads[m], id, &a);
        sc::Message msg;
        down.bw->send(grads[m], id, msg, &b);
        const at::Tensor got = up.bw->receive(msg, shape, id, nullptr);
        REQUIRE(msg.size() == a.bytes);
        REQUIRE(at::equal(got, want));
      }
    }
  }
}

}  // namespace

TEST_CASE("send + receive on two channels equals transfer on one, every scheme") {
  check_boundary("none", "none", 0, 1);
  check_boundary("q2", "q4:stochastic", 0, 1);
  check_boundary("ef(q2)", "ef(topk:0.2)", 0, 1);
  check_boundary("ef21(q3)", "ef21(randk:0.3+q8)", 0, 1);
  check_boundary("aq(q2)", "q8", 0, 1);
  check_boundary("aq(q2)", "aq(q4)", 1, 2);
  check_boundary("q4", "ef(q2)", 1, 1);  // plain warm-up in epoch 0
  check_boundary("ef(powersgd:2)", "ef21(powersgd:1:fp16)", 0, 1);
  check_boundary("qsgd:s=4", "aq(powersgd:2)", 1, 2);
  check_boundary("tah:bits=3:tile=8", "ef(tah:bits=3.5:tile=16)", 0, 1);
  check_boundary("aq(tah:bits=2:tile=4:fixed)", "topk:0.3+tah:bits=4:tile=2", 1, 2);
}

TEST_CASE("send + receive equals transfer with topk:shared backwards (a mask store per side)") {
  check_boundary("topk:0.1", "topk:shared", 0, 1);
  check_boundary("topk:0.2+q8", "topk:shared+q4", 1, 1);
  check_boundary("randk:0.2", "topk:shared", 0, 1);
  check_boundary("ef(topk:0.3)", "topk:shared+q8", 0, 1);
  // AQ-SGD's warm-up masks: each side computes TopK(a - m) from its own buffer,
  // and RandK draws them from each side's own generator.
  check_boundary("aq(topk:0.3)", "topk:shared", 0, 1);
  check_boundary("aq(randk:0.3)", "topk:shared+q8", 0, 2);
}

TEST_CASE("Gradient channels split alike, and the sender's state stays in the sender") {
  const sc::ChannelContext ctx = context(0, 1);
  for (const std::string spec : {"q4:group=128", "ef(q2:group=128)", "ef21(topk:0.1)",
                                 "ef(powersgd:2:square)", "qsgd:s=8:bucket=64", "ef(tah:bits=3)"}) {
    INFO(spec);
    auto one = sc::make_channel(parsed(spec), ctx), up = sc::make_channel(parsed(spec), ctx),
         down = sc::make_channel(parsed(spec), ctx);
    const sc::Shape shape = {1, 1000};
    for (int step = 0; step < 4; ++step) {
      const at::Tensor g = at::randn(shape);
      const at::Tensor want = one->transfer(g, at::Tensor(), nullptr);
      sc::Message msg;
      up->send(g, at::Tensor(), msg, nullptr);
      REQUIRE(at::equal(down->receive(msg, shape, at::Tensor(), nullptr), want));
    }
  }
  // A receiver that joins late has no g: EF21's reconstruction then differs, as
  // it would on a real machine that lost its state (the control for the above).
  auto up = sc::make_channel(parsed("ef21(q2)"), ctx),
       down = sc::make_channel(parsed("ef21(q2)"), ctx),
       late = sc::make_channel(parsed("ef21(q2)"), ctx);
  const sc::Shape shape = {2, 64};
  at::Tensor last_down, last_late;
  for (int step = 0; step < 3; ++step) {
    sc::Message msg;
    up->send(at::randn(shape), at::Tensor(), msg, nullptr);
    last_down = down->receive(msg, shape, at::Tensor(), nullptr);
    if (step == 2) last_late = late->receive(msg, shape, at::Tensor(), nullptr);
  }
  REQUIRE_FALSE(at::equal(last_down, last_late));
}
