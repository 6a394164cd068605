// Like-for-like comparisons through the engine and the trainer:
// compress.warmup_epochs reaches every replica's boundary channels (fp32 bytes
// in warm-up, in the step results and in the trace the network model replays;
// the codec afterwards), gradient channels run compress.grad.resolved(), a
// run resumed across the warm-up boundary matches an uninterrupted one bit for
// bit, and eval.at_start logs one evaluation at step 0 (not repeated on resume).
#include <ATen/ATen.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "common/file_tree.h"
#include "compressors/channels/factory.h"
#include "engine_fixture.h"
#include "runlog/runlog.h"
#include "sim/trainer.h"
#include "tests/common/parsed_spec.h"

namespace sim = slowpipe::sim;
namespace cf = slowpipe::config;
namespace runlog = slowpipe::runlog;
namespace sc = slowpipe::compressors;

using slowpipe::test::parsed;

TEST_CASE("Engine warm-up: fp32 bytes in epoch 0 on every replica, the codec from epoch 1") {
  auto data = slowpipe::test::text_data(16);
  auto setup = slowpipe::test::gpt_setup(*data, 3);
  setup.pipeline.replicas = 2;
  setup.pipeline.microbatches = 2;
  setup.compress.fw = parsed("q2");
  setup.compress.bw = parsed("q4");
  setup.compress.grad = slowpipe::compressors::GradientSpec::parse("q4");
  setup.compress.warmup_epochs = 1;
  sim::PipelineEngine engine(setup);
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < 8; ++i) idx.push_back(i);
  const auto batch = data->get(slowpipe::models::Split::kTrain, idx);
  const sc::Shape act = {2, 16, 32};  // 8 samples / (2 replicas x 2 micro-batches)
  const uint64_t fp32 = 4 * 2 * 16 * 32, transfers = 2 * 2;
  for (int epoch = 0; epoch < 2; ++epoch) {
    INFO("epoch " << epoch);
    engine.set_epoch(epoch);
    const sim::StepResult r = engine.train_step(batch, epoch, 10);
    const uint64_t fw = epoch == 0 ? fp32 : sc::wire_bytes(parsed("q2"), act);
    const uint64_t bw = epoch == 0 ? fp32 : sc::wire_bytes(parsed("q4"), act);
    for (int b = 0; b < 2; ++b) {
      CHECK(r.fw[b].bytes == transfers * fw);
      CHECK(r.bw[b].bytes == transfers * bw);
    }
    for (int s = 0; s < 3; ++s) {  // gradients: no warm-up, grouped scales
      const sc::Shape flat = {
          1, engine.model().parameter_count(engine.cuts()[s], engine.cuts()[s + 1])};
      CHECK(r.grad[s].bytes == 2 * sc::wire_bytes(parsed("q4:group=128"), flat));
      CHECK(4.0 * flat[1] / sc::wire_bytes(parsed("q4:group=128"), flat) > 7.0);
    }
    // The trace the network model replays carries the same bytes.
    for (const auto& op : r.trace.ops) {
      if (op.kind == slowpipe::netmodel::OpKind::kSendActivation) CHECK(op.bytes == fw);
      if (op.kind == slowpipe::netmodel::OpKind::kSendGradient) CHECK(op.bytes == bw);
    }
  }
}

namespace {

// A tiny 2-stage GPT run on the test corpus (batch 8, 3 epochs, the first one
// a warm-up), logging to `out`.
std::pair<cf::TrainConfig, sim::ResolvedConfig> warmup_run(
    const std::string& out, const std::map<std::string, std::string>& extra) {
  cf::TrainConfig cfg;
  slowpipe::OptionSet opts;
  cf::describe_options(cfg, opts);
  std::map<std::string, std::string> keys = {
      {"data.name", "text"},
      {"data.path", std::filesystem::absolute(slowpipe::test::corpus_path()).string()},
      {"data.limit", "64"},
      {"model.layers", "2"},
      {"model.d_model", "32"},
      {"model.heads", "2"},
      {"model.seq_len", "16"},
      {"pipeline.stages", "2"},
      {"pipeline.batch_size", "8"},
      {"run.epochs", "3"},
      {"run.progress", "none"},
      {"run.flush_every", "1"},
      {"eval.every", "4"},
      {"eval.batches", "1"},
      {"compress.fw", "q2:stochastic"},
      {"compress.bw", "q4"},
      {"compress.warmup_epochs", "1"},
      {"net.compute", "fixed:0.01"},
      {"run.out", out}};
  for (const auto& [k, v] : extra) keys[k] = v;
  for (const auto& [k, v] : keys) opts.set(k, v);
  return {cfg, opts.resolved()};
}

struct TempDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("slowpipe_warmup_" + std::to_string(getpid()));
  TempDir() { std::filesystem::create_directories(path); }
  ~TempDir() {
    try {
      slowpipe::remove_tree(path.string());  // common/file_tree.h: not fs::remove_all
    } catch (...) {
    }
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

}  // namespace

TEST_CASE("Trainer warm-up: logged bytes, eval at step 0, resume across the warm-up boundary") {
  TempDir dir;
  const std::string ref = dir.file("ref.h5"), run = dir.file("run.h5"), late = dir.file("late.h5");
  {
    auto [cfg, resolved] = warmup_run(ref, {});
    sim::train(cfg, resolved);
  }
  const auto train = runlog::read_table(ref, "train");
  const auto& epoch = train.column("epoch");
  const auto& fw = train.column("fw0_bytes");
  const double fp32 = 4.0 * 8 * 16 * 32;
  const double q2 = static_cast<double>(sc::wire_bytes(parsed("q2:stochastic"), {8, 16, 32}));
  const double n = static_cast<double>(train.rows());
  REQUIRE(n > 12);  // 3 epochs, the warm-up one first
  REQUIRE(std::count(epoch.begin(), epoch.end(), 0.0) >= 4);
  for (size_t i = 0; i < train.rows(); ++i) CHECK(fw[i] == (epoch[i] == 0 ? fp32 : q2));
  CHECK(runlog::read_attributes(ref).at("compress.grad_spec") == "none");

  // Eval rows: step 0 first, then every 4 steps and the end.
  std::vector<double> steps = {0};
  for (double s = 4; s < n; s += 4) steps.push_back(s);
  steps.push_back(n);
  CHECK(runlog::read_table(ref, "eval").column("step") == steps);
  {
    auto [cfg, resolved] = warmup_run(late, {{"eval.at_start", "false"}});
    sim::train(cfg, resolved);
    CHECK(runlog::read_table(late, "eval").column("step") ==
          std::vector<double>(steps.begin() + 1, steps.end()));
    // Evaluating (compressed, with a stochastic codec) does not change training.
    CHECK(runlog::read_table(late, "train").column("loss") == train.column("loss"));
  }

  // Killed after step 8 (epoch 1), checkpoints after steps 3 and 6 (in the
  // warm-up epoch): the resumed run crosses the warm-up boundary again and
  // equals the uninterrupted one.
  {
    auto [cfg, resolved] = warmup_run(run, {{"run.checkpoint_every", "3"}});
    setenv("SLOWPIPE_FAULT", "error-step:8", 1);
    CHECK_THROWS(sim::train(cfg, resolved));
    unsetenv("SLOWPIPE_FAULT");
  }
  {
    auto [cfg, resolved] = warmup_run(run, {{"run.checkpoint_every", "3"}});
    const auto summary = sim::train(cfg, resolved, /*resume=*/true);
    CHECK(summary.resumed_from == 6);
  }
  for (const char* table : {"train", "eval"}) {
    const auto a = runlog::read_table(ref, table), b = runlog::read_table(run, table);
    REQUIRE(a.rows() == b.rows());
    for (const char* col : {"step", "loss", "fw0_bytes", "bw0_bytes", "loss_compressed"}) {
      if (!a.has_column(col)) continue;
      INFO(table << "." << col);
      CHECK(a.column(col) == b.column(col));  // bit for bit; one step-0 eval row
    }
  }
}
