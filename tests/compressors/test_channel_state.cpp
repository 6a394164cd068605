// Channel state for bitwise resume: for every scheme, N transfers, save, M more
// transfers recorded; a fresh channel loaded with the saved state repeats the M
// transfers bit for bit (outputs, bytes, errors, state bytes). load_state
// refuses missing keys and mismatched shapes with DataError.
#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "common/errors.h"
#include "compressors/channels/factory.h"
#include "tests/common/parsed_spec.h"

namespace sc = slowpipe::compressors;

using slowpipe::test::parsed;

namespace {

struct Step {
  at::Tensor out;
  sc::TransferStats stats;
};

// A deterministic stream of batches: transfer `t` of a run (epoch = t / 3 so AQ
// crosses its warm-up), 3 micro-batches of 2 samples out of 6.
at::Tensor batch(int t) {
  at::Tensor base = at::sin(at::arange(6 * 4 * 8, at::kFloat).reshape({6, 4, 8}) * 0.37);
  at::Tensor ids = at::arange(2, at::kLong) + 2 * (t % 3);
  return base.index_select(0, ids) +
         0.05 * static_cast<double>(t) * at::cos(base.index_select(0, ids) * (t + 1));
}
at::Tensor ids_of(int t) {
  return at::arange(2, at::kLong) + 2 * (t % 3);
}

sc::ChannelContext context(const std::string& store, const std::string& name) {
  sc::ChannelContext ctx;
  ctx.name = name;
  ctx.num_samples = 6;
  ctx.warmup_epochs = 1;
  ctx.aq_store = sc::parse_aq_store("store", store);
  ctx.aq_dir = (std::filesystem::temp_directory_path() / "slowpipe-state-test").string();
  ctx.seed = 99;
  return ctx;
}

// One channel or a (forward, backward) boundary.
struct Rig {
  sc::Boundary b;
  bool pair = false;
  Rig(const std::string& fw, const std::string& bw, const sc::ChannelContext& ctx) {
    if (bw.empty()) {
      b.fw = sc::make_channel(parsed(fw), ctx);
    } else {
      b = sc::make_boundary(parsed(fw), parsed(bw), ctx);
      pair = true;
    }
  }
  void run(int t, std::vector<Step>* record) {
    for (sc::Channel* ch : {b.fw.get(), b.bw.get()}) {
      if (!ch) continue;
      ch->set_epoch(t / 3);
      Step s;
      s.out = ch->transfer(batch(t) * (ch == b.bw.get() ? 0.5 : 1.0), ids_of(t), &s.stats);
      if (record) record->push_back(s);
    }
  }
  void save(sc::StateDict& out) const {
    b.fw->save_state("b0.fw.", out);
    if (b.bw) b.bw->save_state("b0.bw.", out);
  }
  void load(const sc::StateDict& in) {
    b.fw->load_state("b0.fw.", in);
    if (b.bw) b.bw->load_state("b0.bw.", in);
  }
};

void require_same(const std::vector<Step>& a, const std::vector<Step>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("transfer " << i);
    REQUIRE(at::equal(a[i].out, b[i].out));
    REQUIRE(a[i].stats.bytes == b[i].stats.bytes);
    REQUIRE(a[i].stats.rel_error == b[i].stats.rel_error);
    REQUIRE(a[i].stats.delta_norm == b[i].stats.delta_norm);
  }
}

}  // namespace

TEST_CASE("Channel state: save, load into a fresh channel, continue bit for bit") {
  struct Case {
    std::string fw, bw, store;
  };
  const std::vector<Case> cases = {
      {"none", "", "memory"},
      {"q4", "", "memory"},
      {"q2:stochastic", "", "memory"},
      {"randk:0.2", "", "memory"},
      {"randk:0.3+q4:stochastic", "", "memory"},
      {"ef(topk:0.1)", "", "memory"},
      {"ef(q2:stochastic)", "", "memory"},
      {"ef21(q4)", "", "memory"},
      {"ef21(randk:0.3)", "", "memory"},
      {"aq(q2)", "", "memory"},
      {"aq(q2:stochastic)", "", "disk"},
      {"aq(topk:0.3)", "topk:shared", "disk"},
      {"topk:0.3", "topk:shared+q4:stochastic", "memory"},
      {"ef(topk:0.2+q8)", "topk:shared", "memory"},
      {"ef(powersgd:3)", "ef21(powersgd:2:fp16)", "memory"},
      {"qsgd:s=4:bucket=16", "aq(powersgd:2)", "memory"},
  };
  for (const Case& c : cases)
    for (int n : {0, 2, 4}) {
      INFO(c.fw << " / " << c.bw << " (" << c.store << ") saved after " << n);
      Rig a(c.fw, c.bw, context(c.store, "a"));
      for (int t = 0; t < n; ++t) a.run(t, nullptr);
      sc::StateDict state;
      a.save(state);
      std::vector<Step> expected, got;
      for (int t = n; t < n + 5; ++t) a.run(t, &expected);
      Rig b(c.fw, c.bw, context(c.store, "b"));
      b.load(state);
      for (int t = n; t < n + 5; ++t) b.run(t, &got);
      require_same(expected, got);
      REQUIRE(a.b.fw->state_bytes() == b.b.fw->state_bytes());
    }
}

TEST_CASE("Channel state: pending TopK masks are saved with the backward channel") {
  Rig a("topk:0.25", "topk:shared", context("memory", "a"));
  a.run(0, nullptr);
  // Two forwards in flight (GPipe): their masks wait for the backwards.
  at::Tensor x1 = batch(1), x2 = batch(2);
  a.b.fw->transfer(x1, ids_of(1), nullptr);
  a.b.fw->transfer(x2, ids_of(2), nullptr);
  sc::StateDict state;
  a.save(state);
  Rig b("topk:0.25", "topk:shared", context("memory", "b"));
  b.load(state);
  for (int t : {2, 1}) {
    at::Tensor ga = a.b.bw->transfer(batch(t) * 0.5, ids_of(t), nullptr);
    at::Tensor gb = b.b.bw->transfer(batch(t) * 0.5, ids_of(t), nullptr);
    REQUIRE(at::equal(ga, gb));
  }
}

TEST_CASE("Channel state: load_state refuses missing keys and mismatched shapes") {
  auto ch = sc::make_channel(parsed("ef(q4:stochastic)"), context("memory", "a"));
  ch->transfer(batch(0), ids_of(0), nullptr);
  sc::StateDict state;
  ch->save_state("x.", state);
  REQUIRE(state.count("x.error") == 1);
  REQUIRE(state.count("x.codec.encodes") == 1);
  for (const std::string key : {"x.error", "x.codec.encodes", "x.active"}) {
    sc::StateDict cut = state;
    cut.erase(key);
    auto fresh = sc::make_channel(parsed("ef(q4:stochastic)"), context("memory", "b"));
    try {
      fresh->load_state("x.", cut);
      FAIL("loaded without " << key);
    } catch (const slowpipe::DataError& e) {
      REQUIRE(std::string(e.what()).find(key) != std::string::npos);
    }
  }
  sc::StateDict bad = state;
  bad["x.error"] = at::zeros({3}, at::kFloat);
  auto fresh = sc::make_channel(parsed("ef(q4:stochastic)"), context("memory", "b"));
  REQUIRE_THROWS_AS(fresh->load_state("x.", bad), slowpipe::DataError);
  bad = state;
  bad["x.error"] = at::zeros({64}, at::kDouble);
  REQUIRE_THROWS_AS(fresh->load_state("x.", bad), slowpipe::DataError);

  // AQ: a buffer of another per-sample size.
  auto aq = sc::make_channel(parsed("aq(q2)"), context("memory", "a"));
  aq->transfer(batch(0), ids_of(0), nullptr);
  sc::StateDict aq_state;
  aq->save_state("", aq_state);
  auto other = sc::make_channel(parsed("aq(q2)"), context("memory", "b"));
  other->transfer(at::zeros({2, 3}), ids_of(0), nullptr);
  REQUIRE_THROWS_AS(other->load_state("", aq_state), slowpipe::DataError);
}
