// Engine and trainer results that must never be silently wrong: AQ-SGD with
// data-parallel replicas (fixed shards), every forward scheme against every
// backward spec across the warm-up boundary, and non-finite values.
#include <ATen/ATen.h>
#include <torch/torch.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "common/errors.h"
#include "common/file_tree.h"
#include "compressors/channels/factory.h"
#include "engine_fixture.h"
#include "runlog/runlog.h"
#include "sim/internal/shard_sampler.h"
#include "sim/trainer.h"
#include "tests/common/parsed_spec.h"

using slowpipe::test::parsed;

namespace {

using slowpipe::sim::ChannelRole;
using slowpipe::sim::PipelineEngine;
using slowpipe::sim::ShardSampler;

// Forward transfers seen by one (replica, boundary) channel: the epoch and ids.
struct Seen {
  int replica;
  int epoch;
  std::vector<int64_t> ids;  // ids as the channel sees them (within the shard)
};

// Records every forward transfer and hands it on to a real AQ-SGD channel.
class AqRecorder : public slowpipe::compressors::Channel {
 public:
  AqRecorder(std::shared_ptr<std::vector<Seen>> log, int replica, int64_t num_samples)
      : log_(std::move(log)), replica_(replica) {
    slowpipe::compressors::ChannelContext ctx;
    ctx.num_samples = num_samples;
    ctx.warmup_epochs = 1;
    inner_ = slowpipe::compressors::make_channel(parsed("aq(q2)"), ctx);
  }
  // One record per transfer: the engine's transfer() calls send() once.
  void send(const at::Tensor& x, const at::Tensor& ids, slowpipe::compressors::Message& msg,
            slowpipe::compressors::TransferStats* stats) override {
    const at::Tensor c = ids.contiguous();
    log_->push_back(
        {replica_, epoch_,
         std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel())});
    inner_->send(x, ids, msg, stats);
  }
  at::Tensor receive(const slowpipe::compressors::Message& msg,
                     const slowpipe::compressors::Shape& shape, const at::Tensor& ids,
                     slowpipe::compressors::TransferStats* stats) override {
    return inner_->receive(msg, shape, ids, stats);
  }
  at::Tensor infer(const at::Tensor& x, slowpipe::compressors::TransferStats* s) override {
    return inner_->infer(x, s);
  }
  void set_epoch(int epoch) override {
    epoch_ = epoch;
    inner_->set_epoch(epoch);
  }
  uint64_t state_bytes() const override { return inner_->state_bytes(); }
  std::string spec() const override { return inner_->spec(); }

 private:
  std::shared_ptr<std::vector<Seen>> log_;
  std::unique_ptr<slowpipe::compressors::Channel> inner_;
  int replica_;
  int epoch_ = 0;
};

std::unique_ptr<slowpipe::models::Dataset> text_data_limited(int seq_len, int64_t limit) {
  slowpipe::models::DataConfig d;
  d.name = "text";
  d.path = slowpipe::test::corpus_path();
  d.limit = limit;
  return slowpipe::models::make_dataset(d, seq_len);
}

}  // namespace

TEST_CASE("ShardSampler: fixed shards per replica; one replica is the plain sampler") {
  SECTION("D = 1 draws exactly the batches of EpochSampler") {
    ShardSampler shards(100, 8, 1, 5);
    slowpipe::models::EpochSampler plain(100, 8, 5, true, true);
    for (int i = 0; i < 30; ++i) {
      const auto a = shards.next(), b = plain.next();
      REQUIRE(a.indices == b.indices);
      REQUIRE(a.epoch == b.epoch);
    }
  }
  for (int D : {2, 4}) {
    DYNAMIC_SECTION("D = " << D << ": replica r only ever draws from shard r, each epoch whole") {
      const int64_t N = 103, B = 8;  // 3 samples left over
      ShardSampler s(N, B, D, 5);
      const int64_t shard = N / D, per = B / D;
      REQUIRE(s.shard_size() == shard);
      for (int epoch = 0; epoch < 3; ++epoch) {
        std::vector<std::multiset<int64_t>> seen(D);
        for (int64_t b = 0; b < s.batches_per_epoch(); ++b) {
          const auto batch = s.next();
          REQUIRE(batch.epoch == epoch);
          REQUIRE(static_cast<int64_t>(batch.indices.size()) == B);
          for (int r = 0; r < D; ++r) {
            for (int64_t j = 0; j < per; ++j) {
              const int64_t id = batch.indices[static_cast<size_t>(r * per + j)];
              REQUIRE(id >= r * shard);
              REQUIRE(id < (r + 1) * shard);
              seen[r].insert(id);
            }
          }
        }
        for (int r = 0; r < D; ++r) {
          // drop_last: at most per-1 samples of a shard skipped, none twice.
          CHECK(static_cast<int64_t>(seen[r].size()) > shard - per);
          for (int64_t id : seen[r]) CHECK(seen[r].count(id) == 1);
        }
      }
    }
  }
  CHECK_THROWS_AS(ShardSampler(10, 9, 2, 1), slowpipe::UsageError);  // 9 not divisible by 2
  CHECK_THROWS_AS(ShardSampler(6, 8, 2, 1), slowpipe::UsageError);   // shard 3 < batch 4
}

TEST_CASE("Engine: with replicas, AQ-SGD never reads a buffer not written for the sample") {
  // 64 training windows: every shard is a whole number of batches for D = 1, 2, 4.
  auto data = text_data_limited(16, 64);
  REQUIRE(data->size(slowpipe::models::Split::kTrain) == 64);
  for (int D : {1, 2, 4}) {
    DYNAMIC_SECTION("D = " << D) {
      auto setup = slowpipe::test::gpt_setup(*data, 2);
      setup.pipeline.replicas = D;
      setup.pipeline.batch_size = 8;
      ShardSampler sampler(64, 8, D, setup.seed);
      setup.shard_samples = D > 1 ? sampler.shard_size() : 0;
      auto seen = std::make_shared<std::vector<Seen>>();
      const int64_t shard = sampler.shard_size();
      setup.channel_factory = [&](ChannelRole role, int,
                                  int replica) -> std::unique_ptr<slowpipe::compressors::Channel> {
        if (role == ChannelRole::kForward)
          return std::make_unique<AqRecorder>(seen, replica, shard);
        slowpipe::compressors::ChannelContext ctx;
        return slowpipe::compressors::make_channel(parsed("q8"), ctx);
      };
      PipelineEngine engine(setup);
      const int64_t steps = 3 * sampler.batches_per_epoch();  // warm-up epoch + 2
      int epoch = -1;
      for (int64_t i = 0; i < steps; ++i) {
        const auto b = sampler.next();
        if (b.epoch != epoch) engine.set_epoch(epoch = static_cast<int>(b.epoch));
        engine.train_step(data->get(slowpipe::models::Split::kTrain, b.indices), i, steps);
      }
      std::vector<std::set<int64_t>> written(D);
      int64_t after_warmup = 0;
      for (const Seen& s : *seen) {
        for (int64_t id : s.ids) {
          REQUIRE(id >= 0);
          REQUIRE(id < shard);  // keyed within the replica's shard
          if (s.epoch == 0) {
            written[s.replica].insert(id);
          } else {
            INFO("replica " << s.replica << ", epoch " << s.epoch << ", id " << id);
            REQUIRE(written[s.replica].count(id) == 1);
            ++after_warmup;
          }
        }
      }
      CHECK(after_warmup == 2 * 64);
      // State scales with the shard: the same total for every D.
      const uint64_t per_sample_bytes = 2 * 2 * 16 * 32;  // 2 copies x fp16 x [T, C]
      CHECK(engine.channel_state_bytes() == 64 * per_sample_bytes);
    }
  }
}

TEST_CASE("Trainer: AQ-SGD state bytes do not grow with the replicas") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("slowpipe_aq_rep_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::map<int, double> state_bytes, fw_error;
  for (int D : {1, 2}) {
    slowpipe::config::TrainConfig cfg;
    slowpipe::OptionSet opts;
    slowpipe::config::describe_options(cfg, opts);
    for (const auto& [k, v] : std::map<std::string, std::string>{
             {"data.name", "text"},
             {"data.path", fs::absolute(slowpipe::test::corpus_path()).string()},
             {"data.limit", "64"},
             {"model.name", "gpt"},
             {"model.layers", "2"},
             {"model.d_model", "32"},
             {"model.heads", "2"},
             {"model.seq_len", "16"},
             {"pipeline.stages", "2"},
             {"pipeline.batch_size", "8"},
             {"pipeline.replicas", std::to_string(D)},
             {"compress.fw", "aq(q2)"},
             {"run.epochs", "2"},
             {"run.progress", "none"},
             {"run.warmup_passes", "0"},
             {"eval.every", "0"},
             {"eval.batches", "1"},
             {"run.out", (dir / ("d" + std::to_string(D) + ".h5")).string()}}) {
      opts.set(k, v);
    }
    slowpipe::sim::train(cfg, opts.resolved());
    const auto t = slowpipe::runlog::read_table(cfg.run.out, "train");
    state_bytes[D] = t.column("channel_state_bytes").back();
    double err = 0;
    int n = 0;
    for (size_t i = t.rows() / 2; i < t.rows(); ++i, ++n) err += t.column("fw0_rel_error")[i];
    fw_error[D] = err / n;
  }
  slowpipe::remove_tree(dir.string());  // common/file_tree.h: not fs::remove_all
  CHECK(state_bytes[1] > 0);
  CHECK(state_bytes[2] == state_bytes[1]);
  // The buffers a sample meets are warm on both: the error is of the same size.
  CHECK(fw_error[2] < 1.25 * fw_error[1]);
}

TEST_CASE("Engine: every forward scheme with every backward spec, across the AQ warm-up") {
  auto data = text_data_limited(16, 16);  // 2 steps per epoch at batch 8
  const std::vector<std::string> forward = {"none",     "q4",     "randk:0.3",    "ef(topk:0.3)",
                                            "ef21(q4)", "aq(q2)", "aq(topk:0.3)", "topk:0.3+q8"};
  const std::vector<std::string> backward = {"none",     "q8",          "ef(q8)",
                                             "ef21(q8)", "topk:shared", "topk:shared+q8"};
  for (const auto& fw : forward) {
    for (const auto& bw : backward) {
      const bool sparse =
          fw.find("topk") != std::string::npos || fw.find("randk") != std::string::npos;
      if (bw.rfind("topk:shared", 0) == 0 && !sparse) continue;  // refused up front (preflight)
      DYNAMIC_SECTION(fw << " / " << bw) {
        auto setup = slowpipe::test::gpt_setup(*data, 2);
        setup.pipeline.microbatches = 2;
        setup.pipeline.schedule = "1f1b";
        setup.compress.fw = parsed(fw);
        setup.compress.bw = parsed(bw);
        PipelineEngine engine(setup);
        slowpipe::models::EpochSampler sampler(16, 8, setup.seed, true, true);
        int epoch = -1;
        for (int i = 0; i < 5; ++i) {  // epochs 0, 1, 2
          const auto b = sampler.next();
          if (b.epoch != epoch) engine.set_epoch(epoch = static_cast<int>(b.epoch));
          const auto r =
              engine.train_step(data->get(slowpipe::models::Split::kTrain, b.indices), i, 5);
          REQUIRE(std::isfinite(r.loss));
          REQUIRE(r.fw[0].bytes > 0);
          REQUIRE(r.bw[0].bytes > 0);
        }
      }
    }
  }
}

TEST_CASE("Engine: a non-finite activation or loss stops the step and names where") {
  auto data = slowpipe::test::text_data(16);
  slowpipe::models::EpochSampler sampler(data->size(slowpipe::models::Split::kTrain), 8, 7, true,
                                         true);
  const auto batch = data->get(slowpipe::models::Split::kTrain, sampler.next().indices);
  SECTION("NaN in a stage-0 weight: the activation across boundary 0") {
    PipelineEngine engine(slowpipe::test::gpt_setup(*data, 2));
    torch::NoGradGuard g;
    engine.model().blocks[0]->parameters()[0].fill_(NAN);
    try {
      engine.train_step(batch, 6, 10);
      FAIL("no error");
    } catch (const slowpipe::sim::NonFiniteError& e) {
      const std::string m = e.what();
      CHECK(m.find("step 7") != std::string::npos);
      CHECK(m.find("activation") != std::string::npos);
      CHECK(m.find("forward across boundary 0") != std::string::npos);
    }
  }
  SECTION("inf in the head: the loss") {
    PipelineEngine engine(slowpipe::test::gpt_setup(*data, 2));
    torch::NoGradGuard g;
    engine.model().blocks.back()->parameters()[0].fill_(INFINITY);
    CHECK_THROWS_WITH(engine.train_step(batch, 0, 10),
                      Catch::Contains("non-finite loss at step 1"));
  }
  SECTION("the same through a compressing channel (no codec error first)") {
    auto s = slowpipe::test::gpt_setup(*data, 2);
    s.compress.fw = parsed("q4");
    PipelineEngine engine(s);
    torch::NoGradGuard g;
    engine.model().blocks[0]->parameters()[0].fill_(NAN);
    CHECK_THROWS_AS(engine.train_step(batch, 0, 10), slowpipe::sim::NonFiniteError);
  }
}

namespace {

// A tiny GPT run on the test corpus, logging to `out`.
std::pair<slowpipe::config::TrainConfig, slowpipe::sim::ResolvedConfig> tiny_run(
    const std::string& out, const std::map<std::string, std::string>& extra) {
  slowpipe::config::TrainConfig cfg;
  slowpipe::OptionSet opts;
  slowpipe::config::describe_options(cfg, opts);
  std::map<std::string, std::string> keys = {
      {"data.name", "text"},
      {"data.path", std::filesystem::absolute(slowpipe::test::corpus_path()).string()},
      {"data.limit", "64"},
      {"model.layers", "2"},
      {"model.d_model", "32"},
      {"model.heads", "2"},
      {"model.seq_len", "16"},
      {"model.dropout", "0.1"},
      {"pipeline.stages", "2"},
      {"pipeline.batch_size", "8"},
      {"run.steps", "12"},
      {"run.progress", "none"},
      {"run.flush_every", "1"},
      {"eval.every", "4"},
      {"eval.batches", "1"},
      {"net.compute", "fixed:0.01"},
      {"run.out", out}};
  for (const auto& [k, v] : extra) keys[k] = v;
  for (const auto& [k, v] : keys) opts.set(k, v);
  return {cfg, opts.resolved()};
}

}  // namespace

TEST_CASE("Trainer: resume falls back to a checkpoint the log holds the rows for") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("slowpipe_resume_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string ref = (dir / "ref.h5").string(), run = (dir / "run.h5").string();
  {
    auto [cfg, resolved] = tiny_run(ref, {});
    slowpipe::sim::train(cfg, resolved);
  }
  {
    // Fails after step 11 (status failed), with checkpoints after steps 5 and 10.
    auto [cfg, resolved] = tiny_run(run, {{"run.checkpoint_every", "5"}});
    setenv("SLOWPIPE_FAULT", "error-step:11", 1);
    CHECK_THROWS_WITH(slowpipe::sim::train(cfg, resolved), Catch::Contains("injected failure"));
    unsetenv("SLOWPIPE_FAULT");
    CHECK(slowpipe::runlog::read_attributes(run).at("status") == "failed");
    CHECK(slowpipe::runlog::read_table(run, "train").rows() == 11);
  }
  // As after a power loss: the log lost rows the newest checkpoint counts on
  // (the checkpoint after step 5 counts eval rows at steps 0 and 4).
  slowpipe::runlog::RunLog::reopen(run, {{"train", 7}, {"eval", 2}});
  {
    auto [cfg, resolved] = tiny_run(run, {{"run.checkpoint_every", "5"}});
    const auto summary = slowpipe::sim::train(cfg, resolved, /*resume=*/true);
    CHECK(summary.resumed_from == 5);
    CHECK(summary.status == slowpipe::sim::RunStatus::kComplete);
  }
  CHECK(slowpipe::runlog::read_attributes(run).at("resumed_at_steps") == "5");
  for (const char* table : {"train", "eval"}) {
    const auto a = slowpipe::runlog::read_table(ref, table),
               b = slowpipe::runlog::read_table(run, table);
    REQUIRE(a.rows() == b.rows());
    for (const char* col : {"step", "loss", "lr", "grad_norm", "sim_time_s"}) {
      if (!a.has_column(col)) continue;
      INFO(table << "." << col);
      CHECK(a.column(col) == b.column(col));  // bit for bit
    }
  }
  CHECK_FALSE(fs::exists(run + ".ckpt"));  // removed once complete
  slowpipe::remove_tree(dir.string());     // common/file_tree.h: not fs::remove_all
}
