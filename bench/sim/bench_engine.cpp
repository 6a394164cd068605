// Overhead of the pipeline engine: one training step of the default GPT (4 layers,
// d_model 128, seq 64, batch 32, AdamW) unsplit vs cut into 4 stages, and with
// 8 micro-batches under GPipe and 1F1B, no compression. The engine adds detach /
// hand-off at each boundary, per-op timing and trace records; the goal is <= 5%
// over the unsplit step with the same micro-batching. Also: the cost of the
// clock reads that time every op. Single thread, as the trainer runs by default.
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>

#include "models/data_registry.h"
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

BENCHMARK_MAIN();
