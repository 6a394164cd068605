// Speed of the network model. Goals (issue 5): the event engine runs >= 10 M
// events/s; replaying the GPT-2 XL preset (8 stages, 32 micro-batches) for
// 1,000 steps takes well under one second.
//
//   EventEngine/hold/N   the classic "hold" model: N pending events, each pop
//                        schedules one more at a random later time;
//   Replay/gpt2-xl/...   one step replayed (events/s of the whole replay, with
//                        flows and fair sharing), and 1,000 steps in a row.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "netmodel/event_engine.h"
#include "netmodel/flow_network.h"
#include "netmodel/replay.h"
#include "netmodel/synthetic_trace.h"

namespace nm = slowpipe::netmodel;

namespace {

uint64_t wire_bytes(const std::string& spec, const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  if (spec == "none") return 4 * n;
  return n * std::stoul(spec.substr(1)) / 8;  // "qB"
}

nm::StepTrace gpt2_xl_trace(const std::string& schedule, int replicas, const std::string& fw,
                            const std::string& bw) {
  nm::CodecSpecs specs;
  specs.forward = fw;
  specs.backward = bw;
  specs.gradient = replicas > 1 ? "q8" : "none";
  return nm::make_synthetic_trace(nm::find_model_shape("bench", "gpt2-xl"), schedule, replicas,
                                  specs, wire_bytes, nm::find_device("bench", "A100"));
}

void BM_EventEngineHold(benchmark::State& state) {
  const auto pending = static_cast<size_t>(state.range(0));
  nm::EventEngine engine;
  uint64_t x = 88172645463325252ull;  // xorshift64
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return static_cast<double>(x >> 11) * 0x1.0p-53;
  };
  for (size_t i = 0; i < pending; ++i) engine.schedule(next(), 0, static_cast<uint32_t>(i));
  for (auto _ : state) {
    const nm::Event ev = engine.pop();
    engine.schedule(ev.time_s + next(), ev.type, ev.target);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["events/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EventEngineHold)->Arg(16)->Arg(1024)->Arg(65536);

void BM_FlowNetworkChurn(benchmark::State& state) {
  // F flows on a chain of links; each finishing flow is replaced by a new one.
  const int flows = static_cast<int>(state.range(0));
  nm::FlowNetwork net;
  std::vector<uint32_t> links;
  for (int i = 0; i < 16; ++i) links.push_back(net.add_resource("l" + std::to_string(i), 1e9));
  double now = 0;
  for (int f = 0; f < flows; ++f) net.start_flow(now, &links[f % 15], 2, 1e6 * (1 + f));
  std::vector<uint32_t> done;
  int k = flows;
  for (auto _ : state) {
    now = net.next_finish_s();
    done.clear();
    net.collect_finished(now, done);
    for (size_t i = 0; i < done.size(); ++i, ++k)
      net.start_flow(now, &links[k % 15], 2, 1e6 * (1 + k % 7));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FlowNetworkChurn)->Arg(4)->Arg(16)->Arg(64);

void BM_ReplayStep(benchmark::State& state, const std::string& schedule, int replicas) {
  const nm::StepTrace trace = gpt2_xl_trace(schedule, replicas, "q4", "q8");
  nm::NetConfig config;
  config.preset = "500Mbps";
  config.jitter_s = 1e-4;
  nm::Simulator sim(config);
  uint64_t events = 0;
  for (auto _ : state) {
    const nm::Timeline t = sim.replay(trace);
    events += t.events;
    benchmark::DoNotOptimize(t.step_s);
  }
  state.counters["events/s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["ops"] = static_cast<double>(trace.ops.size());
}
BENCHMARK_CAPTURE(BM_ReplayStep, gpt2_xl_gpipe, std::string("gpipe"), 1)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ReplayStep, gpt2_xl_1f1b, std::string("1f1b"), 1)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ReplayStep, gpt2_xl_gpipe_4_replicas, std::string("gpipe"), 4)
    ->Unit(benchmark::kMicrosecond);

// The goal: 1,000 steps of the GPT-2 XL preset, well under one second.
void BM_Replay1000Steps(benchmark::State& state) {
  const nm::StepTrace trace = gpt2_xl_trace("gpipe", 1, "q4", "q8");
  nm::NetConfig config;
  config.preset = "500Mbps";
  for (auto _ : state) {
    nm::Simulator sim(config);
    double total_s = 0;
    for (int step = 0; step < 1000; ++step) total_s += sim.replay(trace).step_s;
    benchmark::DoNotOptimize(total_s);
  }
}
BENCHMARK(BM_Replay1000Steps)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
