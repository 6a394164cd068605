// Benchmarks of the models library: one training step (forward + backward +
// SGD with momentum) of the default GPT and of the CNN, with 1 or 2 intra-op
// threads (at::set_num_threads), and the cost of loading the data sets.
//
// Run: build/bench/models/bench_models [--benchmark_filter=Gpt]
// OpenBLAS keeps its own thread pool: set OPENBLAS_NUM_THREADS to compare.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include "models/torch/data_registry.h"
#include "models/torch/model_registry.h"

namespace sm = slowpipe::models;

namespace {

void train_step_bench(benchmark::State& state, const sm::ModelConfig& cfg,
                      const sm::DataConfig& dcfg) {
  at::set_num_threads(static_cast<int>(state.range(0)));
  const int64_t batch_size = state.range(1);
  auto data = sm::make_dataset(dcfg, cfg.seq_len);
  sm::Model model = sm::build_model(cfg, data->info(), 1);
  std::vector<int64_t> idx(static_cast<size_t>(batch_size));
  for (int64_t i = 0; i < batch_size; ++i) idx[static_cast<size_t>(i)] = i;
  const sm::Batch batch = data->get(sm::Split::kTrain, idx);
  torch::optim::SGD opt(model.parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  for (auto _ : state) {
    opt.zero_grad();
    at::Tensor x = batch.inputs;
    for (auto& b : model.blocks) x = b->forward(x);
    at::Tensor loss = sm::loss(model.task, x, batch.targets);
    loss.backward();
    opt.step();
    benchmark::DoNotOptimize(loss.item<float>());
  }
  double flops = 0;
  for (auto& b : model.blocks) flops += b->forward_flops_per_sample();
  // Forward + backward taken as 3x forward.
  state.counters["GFLOP/s"] =
      benchmark::Counter(3.0 * flops * static_cast<double>(batch_size) * 1e-9,
                         benchmark::Counter::kIsIterationInvariantRate);
  state.counters["params"] = static_cast<double>(model.parameter_count(0, model.blocks.size()));
  state.counters["threads"] = static_cast<double>(state.range(0));
}

void BM_GptTrainStep(benchmark::State& state) {
  sm::DataConfig d;  // gcide
  d.limit = 4096;
  train_step_bench(state, sm::ModelConfig{}, d);
}
BENCHMARK(BM_GptTrainStep)
    ->ArgNames({"threads", "batch"})
    ->Args({1, 16})
    ->Args({2, 16})
    ->Args({1, 32})
    ->Args({2, 32})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_CnnTrainStep(benchmark::State& state) {
  sm::ModelConfig m;
  m.name = "cnn";
  sm::DataConfig d;
  d.name = "fashion-mnist";
  d.limit = 1024;
  d.val_limit = 1;
  train_step_bench(state, m, d);
}
BENCHMARK(BM_CnnTrainStep)
    ->ArgNames({"threads", "batch"})
    ->Args({1, 64})
    ->Args({2, 64})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_LoadGcide(benchmark::State& state) {
  for (auto _ : state) {
    auto ds = sm::make_dataset(sm::DataConfig{}, 64);
    benchmark::DoNotOptimize(ds->size(sm::Split::kTrain));
  }
}
BENCHMARK(BM_LoadGcide)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_LoadFashionMnist(benchmark::State& state) {
  sm::DataConfig d;
  d.name = "fashion-mnist";
  for (auto _ : state) {
    auto ds = sm::make_dataset(d, 0);
    benchmark::DoNotOptimize(ds->size(sm::Split::kTrain));
  }
}
BENCHMARK(BM_LoadFashionMnist)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
