// Overhead of the pipeline engine: one training step of the default GPT (4 layers,
// d_model 128, seq 64, batch 32, AdamW) unsplit vs cut into 4 stages, and with
// 8 micro-batches under GPipe and 1F1B, no compression. The engine adds detach /
// hand-off at each boundary, per-op timing and trace records; the goal is <= 5%
// over the unsplit step with the same micro-batching. Also: the cost of the
// clock reads that time every op. Single thread, as the trainer runs by default.
//
// AQ-SGD's cost (issue 14): the demo's fine-tuning step
// (experiments/presets/demo-finetune.ini: 4 stages, 4 micro-batches of 4 under
// 1F1B, batch 16, AdamW; activations [4, 64, 128] fp32 at each of the 3
// boundaries) with compress.fw=aq(q2) against the fp32 step (none/none), memory
// and disk store, backward none or q4 (the demo's). The two engines step in
// turn over the same batches (a fixed permutation of the 1,024 demo windows),
// so load on a shared machine hits both alike; which one goes first
// alternates. Counters: `ratio` = median aq step / median fp32 step of the
// same run; `pair_ratio` = median of each aq step over the fp32 step next to
// it; `aq_codec_ms` = the aq engine's encode + decode seconds per step.
// Phases: `steady` (epoch 1, every sample seen: d = a - m, q2, m += D) and
// `warmup` (epoch 0: fp32 sent, m <- fp16(a)).
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <numeric>
#include <random>

#include "models/torch/data_registry.h"
#include "sim/engine.h"

namespace {

const slowpipe::models::Dataset& data() {
  static const auto d = [] {
    slowpipe::models::DataConfig c;
    c.name = "gcide";
    c.end = 0.05;
    return slowpipe::models::make_dataset(c, 64);
  }();
  return *d;
}

void engine_step(benchmark::State& state, int stages, int microbatches, const char* schedule) {
  at::set_num_threads(1);
  slowpipe::sim::EngineSetup s;
  s.data = data().info();
  s.pipeline.stages = stages;
  s.pipeline.microbatches = microbatches;
  s.pipeline.schedule = schedule;
  s.pipeline.batch_size = 32;
  s.train_samples = data().size(slowpipe::models::Split::kTrain);
  slowpipe::sim::PipelineEngine engine(s);
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < 32; ++i) idx.push_back(i * 7);
  const auto batch = data().get(slowpipe::models::Split::kTrain, idx);
  engine.warm_up(batch, 2);
  int64_t step = 0;
  for (auto _ : state) {
    auto r = engine.train_step(batch, step++, 1000);
    benchmark::DoNotOptimize(r.loss);
  }
  state.SetItemsProcessed(state.iterations() * 32);
}

void BM_Step_Unsplit(benchmark::State& st) {
  engine_step(st, 1, 1, "gpipe");
}
void BM_Step_S4(benchmark::State& st) {
  engine_step(st, 4, 1, "gpipe");
}
void BM_Step_Unsplit_M8(benchmark::State& st) {
  engine_step(st, 1, 8, "gpipe");
}
void BM_Step_S4_M8_GPipe(benchmark::State& st) {
  engine_step(st, 4, 8, "gpipe");
}
void BM_Step_S4_M8_1F1B(benchmark::State& st) {
  engine_step(st, 4, 8, "1f1b");
}

// ---- the demo's step, aq(q2) against fp32 ----

const slowpipe::models::Dataset& demo_data() {
  static const auto d = [] {
    slowpipe::models::DataConfig c;
    c.name = "gcide";
    c.begin = 0.9;
    c.end = 1.0;
    c.limit = 1024;
    return slowpipe::models::make_dataset(c, 64);
  }();
  return *d;
}

constexpr int64_t kDemoBatch = 16;

// One epoch of the demo data in batches of 16 (a fixed permutation of the ids).
const std::vector<slowpipe::models::Batch>& demo_batches() {
  static const auto batches = [] {
    const int64_t n = demo_data().size(slowpipe::models::Split::kTrain);
    std::vector<int64_t> perm(static_cast<size_t>(n));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), std::mt19937_64(1));
    std::vector<slowpipe::models::Batch> out;
    for (int64_t b = 0; b + kDemoBatch <= n; b += kDemoBatch)
      out.push_back(
          demo_data().get(slowpipe::models::Split::kTrain,
                          std::vector<int64_t>(perm.begin() + b, perm.begin() + b + kDemoBatch)));
    return out;
  }();
  return batches;
}

std::unique_ptr<slowpipe::sim::PipelineEngine> demo_engine(const char* fw, const char* bw,
                                                           const char* store) {
  slowpipe::sim::EngineSetup s;
  s.data = demo_data().info();
  s.pipeline.stages = 4;
  s.pipeline.microbatches = 4;
  s.pipeline.schedule = "1f1b";
  s.pipeline.batch_size = kDemoBatch;
  s.train_samples = demo_data().size(slowpipe::models::Split::kTrain);
  s.compress.fw = slowpipe::compressors::ChannelSpec::parse(fw, /*backward=*/false);
  s.compress.bw = slowpipe::compressors::ChannelSpec::parse(bw, /*backward=*/true);
  s.compress.aq_store = slowpipe::compressors::parse_aq_store("store", store);
  return std::make_unique<slowpipe::sim::PipelineEngine>(s);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.empty() ? 0 : v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

// Steps an fp32 engine and an aq(q2)/`bw` engine in turn. `steady`: one whole
// warm-up epoch of the aq engine first, then epoch 1 (samples seen); else
// epoch 0 throughout.
void demo_aq_vs_none(benchmark::State& state, const char* bw, const char* store, bool steady) {
  at::set_num_threads(1);
  const auto& batches = demo_batches();
  auto none = demo_engine("none", "none", "memory");
  auto aq = demo_engine("aq(q2)", bw, store);
  const int64_t total = 1000;
  int64_t step = 0;
  none->warm_up(batches[0], 2);
  aq->warm_up(batches[0], 2);
  if (steady) {  // untimed: the fp32 engine has no per-sample state to fill
    for (const auto& b : batches) aq->train_step(b, step++, total);
    none->set_epoch(1);
    aq->set_epoch(1);
  }
  std::vector<double> none_s, aq_s, codec_s;
  size_t next = 0;
  // One timed step of `e` on batch b.
  auto timed = [&](slowpipe::sim::PipelineEngine& e, const slowpipe::models::Batch& b,
                   std::vector<double>& seconds) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = e.train_step(b, step, total);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    benchmark::DoNotOptimize(r.loss);
    return r;
  };
  for (auto _ : state) {
    const auto& b = batches[next % batches.size()];
    // Which engine goes first alternates, so neither always follows the other.
    slowpipe::sim::StepResult r1;
    if (next++ % 2 == 0) {
      timed(*none, b, none_s);
      r1 = timed(*aq, b, aq_s);
    } else {
      r1 = timed(*aq, b, aq_s);
      timed(*none, b, none_s);
    }
    ++step;
    double c = 0;
    for (const auto* v : {&r1.fw, &r1.bw})
      for (const auto& ch : *v) c += ch.encode_s + ch.decode_s;  // sums over the transfers
    codec_s.push_back(c);
  }
  state.counters["none_ms"] = 1e3 * median(none_s);
  state.counters["aq_ms"] = 1e3 * median(aq_s);
  state.counters["aq_codec_ms"] = 1e3 * median(codec_s);  // encode + decode, all transfers
  state.counters["ratio"] = median(aq_s) / median(none_s);
  std::vector<double> pair(aq_s.size());  // each aq step against its neighbouring fp32 step
  for (size_t i = 0; i < pair.size(); ++i) pair[i] = aq_s[i] / none_s[i];
  state.counters["pair_ratio"] = median(pair);
}

void BM_DemoAq_Memory_Steady(benchmark::State& st) {
  demo_aq_vs_none(st, "none", "memory", true);
}
void BM_DemoAq_Disk_Steady(benchmark::State& st) {
  demo_aq_vs_none(st, "none", "disk", true);
}
void BM_DemoAq_Memory_Warmup(benchmark::State& st) {
  demo_aq_vs_none(st, "none", "memory", false);
}
void BM_DemoAq_Disk_Warmup(benchmark::State& st) {
  demo_aq_vs_none(st, "none", "disk", false);
}
void BM_DemoAqQ4_Memory_Steady(benchmark::State& st) {
  demo_aq_vs_none(st, "q4", "memory", true);
}
void BM_DemoAqQ4_Disk_Steady(benchmark::State& st) {
  demo_aq_vs_none(st, "q4", "disk", true);
}

void BM_OpTimerPair(benchmark::State& state) {
  // What timing one op costs: two clock reads and a subtraction.
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    benchmark::DoNotOptimize(s);
  }
}

}  // namespace

BENCHMARK(BM_Step_Unsplit)->Unit(benchmark::kMillisecond)->MinTime(3);
BENCHMARK(BM_Step_S4)->Unit(benchmark::kMillisecond)->MinTime(3);
BENCHMARK(BM_Step_Unsplit_M8)->Unit(benchmark::kMillisecond)->MinTime(3);
BENCHMARK(BM_Step_S4_M8_GPipe)->Unit(benchmark::kMillisecond)->MinTime(3);
BENCHMARK(BM_Step_S4_M8_1F1B)->Unit(benchmark::kMillisecond)->MinTime(3);
BENCHMARK(BM_OpTimerPair);
// 64 pairs of steps: one pass over the demo epoch.
BENCHMARK(BM_DemoAq_Memory_Steady)->Unit(benchmark::kMillisecond)->Iterations(64);
BENCHMARK(BM_DemoAq_Disk_Steady)->Unit(benchmark::kMillisecond)->Iterations(64);
BENCHMARK(BM_DemoAq_Memory_Warmup)->Unit(benchmark::kMillisecond)->Iterations(64);
BENCHMARK(BM_DemoAq_Disk_Warmup)->Unit(benchmark::kMillisecond)->Iterations(64);
BENCHMARK(BM_DemoAqQ4_Memory_Steady)->Unit(benchmark::kMillisecond)->Iterations(64);
BENCHMARK(BM_DemoAqQ4_Disk_Steady)->Unit(benchmark::kMillisecond)->Iterations(64);

BENCHMARK_MAIN();
