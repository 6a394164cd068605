// compress.grad_sync = momentum: the sharded momentum exchange of data-parallel
// replicas (docs/grad-sync.md). With `none` it is uncompressed data
// parallelism; replicas stay identical after every step, compressed or not;
// its state resumes bit for bit; its bytes are the exchanged shards.
#include <torch/serialize.h>
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "engine_fixture.h"
#include "netmodel/replay.h"

namespace {

using slowpipe::sim::EngineSetup;
using slowpipe::sim::PipelineEngine;

EngineSetup momentum_setup(const slowpipe::models::Dataset& data, const char* optim,
                           const char* grad) {
  auto s = slowpipe::test::gpt_setup(data, 2);
  s.pipeline.replicas = 2;
  s.pipeline.microbatches = 2;
  s.optim.name = optim;
  s.optim.lr = std::string(optim) == "sgd" ? 0.05 : 3e-3;
  s.optim.clip = 0;  // clipping is per replica in the exchange (docs/grad-sync.md)
  s.compress.grad = slowpipe::compressors::GradientSpec::parse(grad);
  s.compress.grad_sync = slowpipe::compressors::GradSync::kMomentum;
  s.compress.momentum_warmup_steps = 2;
  return s;
}

// Every parameter of replica 1 equals replica 0's, bit for bit.
bool replicas_identical(const PipelineEngine& e) {
  const auto a = e.model(0).parameters(), b = e.model(1).parameters();
  for (size_t i = 0; i < a.size(); ++i) {
    if (!torch::equal(a[i], b[i])) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("Momentum exchange: with none it is uncompressed data parallelism (SGD)") {
  auto data = slowpipe::test::text_data(16);
  auto exchange = momentum_setup(*data, "sgd", "none");
  auto plain = exchange;
  plain.compress.grad_sync = slowpipe::compressors::GradSync::kAllReduce;
  const auto a = slowpipe::test::run_steps(exchange, *data, 10);
  const auto b = slowpipe::test::run_steps(plain, *data, 10);
  REQUIRE(a.losses.size() == b.losses.size());
  for (size_t i = 0; i < a.losses.size(); ++i) {
    INFO("step " << i);
    CHECK(a.losses[i] == Approx(b.losses[i]).epsilon(1e-5));
  }
  CHECK(a.losses.back() < a.losses.front());
}

TEST_CASE("Momentum exchange: replicas identical after every step; bytes; the trace") {
  auto data = slowpipe::test::text_data(16);
  for (const char* optim : {"sgd", "adamw"}) {
    for (const char* grad : {"none", "ef(q8)", "q4"}) {
      INFO(optim << " " << grad);
      const auto setup = momentum_setup(*data, optim, grad);
      PipelineEngine engine(setup);
      slowpipe::models::EpochSampler sampler(data->size(slowpipe::models::Split::kTrain), 8, 7,
                                             true, true);
      for (int step = 0; step < 6; ++step) {
        const auto r = engine.train_step(
            data->get(slowpipe::models::Split::kTrain, sampler.next().indices), step, 6);
        REQUIRE(std::isfinite(r.loss));
        REQUIRE(replicas_identical(engine));
        CHECK(r.trace.sharded_exchange == (step >= 2));
        if (step < 2) continue;
        // Two replicas, two shards per chunk: each replica sends the other its
        // shard, and each server sends its average back: 4 messages per chunk.
        for (size_t c = 0; c < r.grad.size(); ++c) {
          CHECK(r.grad[c].transfers == 4);
          uint64_t n = 0;
          for (size_t b = engine.cuts()[c]; b < engine.cuts()[c + 1]; ++b) {
            for (const auto& p : engine.model(0).blocks[b]->parameters())
              n += static_cast<uint64_t>(p.numel());
          }
          if (std::string(grad) == "none") CHECK(r.grad[c].bytes == 4u * 4 * ((n + 1) / 2));
          if (std::string(grad) != "none") CHECK(r.grad[c].bytes < 4u * 4 * ((n + 1) / 2) / 3);
        }
        slowpipe::netmodel::NetConfig net;
        net.preset = "1Gbps";
        CHECK(slowpipe::netmodel::replay(r.trace, net).step_s > 0);
      }
    }
  }
}

TEST_CASE("Momentum exchange: the error-feedback state resumes bit for bit") {
  auto data = slowpipe::test::text_data(16);
  const auto setup = momentum_setup(*data, "adamw", "ef(q4)");
  const auto batches = [&] {
    slowpipe::models::EpochSampler sampler(data->size(slowpipe::models::Split::kTrain), 8, 7, true,
                                           true);
    std::vector<slowpipe::models::Batch> v;
    v.reserve(8);
    for (int i = 0; i < 8; ++i) {
      v.push_back(data->get(slowpipe::models::Split::kTrain, sampler.next().indices));
    }
    return v;
  }();
  PipelineEngine whole(setup);
  std::vector<double> expect;
  expect.reserve(8);
  for (int i = 0; i < 8; ++i) expect.push_back(whole.train_step(batches[i], i, 8).loss);
  PipelineEngine first(setup);
  for (int i = 0; i < 4; ++i) first.train_step(batches[i], i, 8);
  PipelineEngine second(setup);
  slowpipe::test::resume_from(first, second);
  for (int i = 4; i < 8; ++i) CHECK(second.train_step(batches[i], i, 8).loss == expect[i]);
}

TEST_CASE("Momentum exchange: SGD without momentum has nothing to exchange") {
  auto data = slowpipe::test::text_data(16);
  auto s = momentum_setup(*data, "sgd", "q8");
  s.optim.momentum = 0;
  CHECK_THROWS_WITH(PipelineEngine(s), Catch::Contains("optim.momentum = 0"));
}
