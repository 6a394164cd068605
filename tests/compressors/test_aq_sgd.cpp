// AQ-SGD: follows the update rule of docs/codec-spec.md (feedback schemes) step for step
// (checked against a reference written here with at:: ops and fp16 buffers),
// warm-up sends uncompressed, sender and receiver buffers stay identical, the
// disk store behaves like the memory store.
#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <map>

#include "common/errors.h"
#include "compressors/channels/internal/aq_sgd.h"
#include "compressors/codecs/codec.h"
#include "compressors/channels/factory.h"
#include "tests/common/parsed_spec.h"

namespace sc = slowpipe::compressors;

using slowpipe::test::parsed;

namespace {
bool same_buffers(const sc::AqChannel& aq, int64_t num_samples) {
  const auto& s = aq.sender_buffer();
  const auto& r = aq.receiver_buffer();
  for (int64_t id = 0; id < num_samples; ++id) {
    if (s.seen(id) != r.seen(id)) return false;
    if (!s.seen(id)) continue;
    if (std::memcmp(s.row(id), r.row(id), 2 * s.per_sample()) != 0) return false;
  }
  return true;
}
}  // namespace

TEST_CASE("AQ-SGD: follows the update rule step for step, warm-up included") {
  for (const std::string inner : {"q2", "topk:0.3", "q4:row"}) {
    INFO(inner);
    const int64_t num_samples = 12, batch = 4;
    sc::ChannelContext ctx;
    ctx.num_samples = num_samples;
    ctx.warmup_epochs = 1;
    auto ch = sc::make_channel(parsed("aq(" + inner + ")"), ctx);
    auto codec = sc::make_codec(inner);
    std::map<int64_t, at::Tensor> m;  // reference buffers, fp16 [5, 6]
    at::Tensor base = at::randn({num_samples, 5, 6});
    for (int epoch = 0; epoch < 4; ++epoch) {
      ch->set_epoch(epoch);
      // Epoch 0 sees samples 0..7 only: 8..11 are first seen after warm-up.
      int64_t seen_upto = epoch == 0 ? 8 : num_samples;
      for (int64_t start = 0; start < seen_upto; start += batch) {
        at::Tensor ids = at::arange(start, start + batch, at::kLong);
        at::Tensor a = base.index_select(0, ids) + 0.1 * (epoch + 1) * at::randn({batch, 5, 6});
        sc::TransferStats stats;
        at::Tensor x = ch->transfer(a, ids, &stats);
        at::Tensor expected = at::empty_like(a);
        if (epoch == 0) {
          expected = a;
          for (int64_t r = 0; r < batch; ++r) m[start + r] = a[r].to(at::kHalf);
          REQUIRE(stats.bytes == 4 * static_cast<uint64_t>(a.numel()));
        } else {
          at::Tensor prev = at::zeros_like(a);
          for (int64_t r = 0; r < batch; ++r)
            if (m.count(start + r)) prev[r] = m[start + r].to(at::kFloat);
          at::Tensor d = a - prev;
          sc::Message msg = codec->encode(d);
          expected = prev + codec->decode(msg, {batch, 5, 6});
          for (int64_t r = 0; r < batch; ++r) m[start + r] = expected[r].to(at::kHalf);
          REQUIRE(stats.bytes == msg.size());
          REQUIRE(stats.delta_norm == Approx(d.norm().item<double>()).epsilon(1e-5));
        }
        REQUIRE(at::equal(x, expected));
      }
    }
    auto& aq = dynamic_cast<sc::AqChannel&>(*ch);
    REQUIRE(same_buffers(aq, num_samples));
    for (int64_t id = 0; id < num_samples; ++id) {
      at::Tensor got =
          at::from_blob(const_cast<uint16_t*>(aq.sender_buffer().row(id)), {5, 6}, at::kShort);
      at::Tensor want = m[id].view(at::kShort);
      REQUIRE(at::equal(got, want));
    }
    REQUIRE(ch->state_bytes() == 2 * num_samples * 30 * 2);
  }
}

TEST_CASE("AQ-SGD: sender and receiver buffers identical after many steps, memory and disk") {
  for (const std::string store : {"memory", "disk"}) {
    INFO(store);
    sc::ChannelContext ctx;
    ctx.num_samples = 40;
    ctx.warmup_epochs = 1;
    ctx.aq_store = sc::parse_aq_store("store", store);
    ctx.name = "test.aq";
    auto ch = sc::make_channel(parsed("aq(q2:stochastic)"), ctx);
    auto& aq = dynamic_cast<sc::AqChannel&>(*ch);
    at::Tensor base = at::randn({40, 3, 16});
    auto direct = sc::make_channel(parsed("q2:stochastic"), sc::ChannelContext{});
    double direct_err = 0, late_err = 0;
    for (int epoch = 0; epoch < 8; ++epoch) {
      ch->set_epoch(epoch);
      at::Tensor perm = at::randperm(40, at::kLong);
      for (int64_t s = 0; s < 40; s += 5) {
        at::Tensor ids = perm.slice(0, s, s + 5);
        at::Tensor a = base.index_select(0, ids) + 0.02 * at::randn({5, 3, 16});
        sc::TransferStats stats;
        ch->transfer(a, ids, &stats);
        if (epoch == 7) {
          late_err += stats.rel_error;
          sc::TransferStats d;
          direct->transfer(a, ids, &d);
          direct_err += d.rel_error;
        }
      }
      REQUIRE(same_buffers(aq, 40));
    }
    // Compressing the change beats compressing the activation (AQ-SGD's point).
    REQUIRE(late_err < 0.5 * direct_err);
    if (store == std::string("disk"))
      REQUIRE(aq.sender_buffer().path().find("test.aq") != std::string::npos);
  }
}

TEST_CASE("AQ-SGD: needs sample ids and ids in range; infer changes no state") {
  sc::ChannelContext ctx;
  ctx.num_samples = 4;
  auto ch = sc::make_channel(parsed("aq(q4)"), ctx);
  REQUIRE_THROWS_AS(ch->transfer(at::randn({2, 8}), at::Tensor(), nullptr), slowpipe::UsageError);
  REQUIRE_THROWS_AS(ch->transfer(at::randn({2, 8}), at::arange(3, 5, at::kLong), nullptr),
                    slowpipe::UsageError);
  ch->set_epoch(1);
  at::Tensor x = at::randn({2, 8});
  auto codec = sc::make_codec("q4");
  REQUIRE(at::equal(ch->infer(x, nullptr), codec->decode(codec->encode(x), {2, 8})));
  auto& aq = dynamic_cast<sc::AqChannel&>(*ch);
  REQUIRE_FALSE(aq.sender_buffer().seen(0));
}

TEST_CASE("AQ-SGD: aq(topk) forward with a topk:shared backward across the warm-up boundary") {
  // During warm-up the forward sends `none`; the backward must still find a mask:
  // TopK(a - m(xi)) of what the steady state would send (m = 0 when unseen).
  const int64_t num_samples = 6, batch = 2;
  const sc::Shape shape = {batch, 4, 10};
  for (const std::string fw : {"aq(topk:0.3)", "aq(topk:0.2+q8)"}) {
    INFO(fw);
    sc::ChannelContext ctx;
    ctx.num_samples = num_samples;
    ctx.warmup_epochs = 1;
    sc::Boundary b = sc::make_boundary(parsed(fw), parsed("topk:shared"), ctx);
    at::Tensor base = at::randn({num_samples, 4, 10});
    const uint64_t bw_bytes =
        sc::wire_bytes(parsed(fw.substr(3, fw.size() - 4)), parsed("topk:shared"), shape);
    for (int epoch = 0; epoch < 3; ++epoch) {
      b.fw->set_epoch(epoch);
      b.bw->set_epoch(epoch);
      for (int64_t start = 0; start < num_samples; start += batch) {
        at::Tensor ids = at::arange(start, start + batch, at::kLong);
        at::Tensor a = base.index_select(0, ids) * (1.0 + 0.3 * epoch);
        b.fw->transfer(a, ids, nullptr);
        at::Tensor g = at::randn(shape) + 5.0;  // no zeros: the kept positions show
        sc::TransferStats stats;
        at::Tensor gx = b.bw->transfer(g, ids, &stats);
        REQUIRE(stats.bytes == bw_bytes);
        if (epoch == 0) {
          // First sight: the mask is TopK of a itself, per sample.
          auto topk = sc::make_codec(fw.substr(3, fw.find_first_of("+)") - 3));  // fp32 values
          at::Tensor kept = topk->decode(topk->encode(a), shape) != 0;
          REQUIRE(at::equal(gx != 0, kept));
        }
      }
    }
  }
}
