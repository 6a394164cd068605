// Speed of the network model. Goals (issue 5): the event engine runs >= 10 M
// events/s; replaying the GPT-2 XL preset (8 stages, 32 micro-batches) for
// 1,000 steps takes well under one second.
//
//   EventEngine/hold/N   the classic "hold" model: N pending events, each pop
//                        schedules one more at a random later time;
//   Replay/gpt2-xl/...   one step replayed (events/s of the whole replay, with
//                        flows and fair sharing), and 1,000 steps in a row;
//   Netsim/generated/... a random netsim scenario (scenario_gen.h: 16 hosts,
//                        18 links, 10,000 or 100,000 flows) through
//                        `netmodel::simulate`, the engine of `slowpipe netsim`
//                        (goals: <= 0.1 s and <= 1 s CPU); NetsimGeneratedJson
//                        adds reading the JSON and printing the table,
//                        NetsimReadJson is the reader alone;
//   Flows/{current,legacy}/... the same flows through the current FlowNetwork
//                        and the legacy copy (before path classes), driven
//                        alike (flow_driver.h): the before/after ratio;
//   Timing/replicas/N    `slowpipe timing --model gpt2-xl --replicas N` at one
//                        bandwidth (run_what_if: compact trace, folded replay;
//                        goals, issue 28: 1,000 replicas <= 1 s, 10,000 <= 10 s),
//                        with the ring all-reduce or the sharded exchange;
//   ReplayReplicas/{folded,full}/N  one step of N replicas from a full trace,
//                        folded and in full (the replay before the fold).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "bench/netmodel/flow_driver.h"
#include "bench/netmodel/legacy_flow_network.h"
#include "bench/netmodel/scenario_gen.h"
#include "netmodel/internal/event_engine.h"
#include "netmodel/internal/flow_network.h"
#include "netmodel/netsim.h"
#include "netmodel/replay.h"
#include "whatif/synthetic_trace.h"
#include "whatif/what_if.h"

namespace nm = slowpipe::netmodel;
namespace wi = slowpipe::whatif;
namespace md = slowpipe::models;
namespace sb = slowpipe::bench;

namespace {

uint64_t wire_bytes(const slowpipe::compressors::ChannelSpec& spec_,
                    const std::vector<int64_t>& shape) {
  const std::string& spec = spec_.text();
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  if (spec == "none") return 4 * n;
  if (spec == "fp16") return 2 * n;
  return n * std::stoul(spec.substr(1)) / 8;  // "qB"
}

nm::StepTrace gpt2_xl_trace(const std::string& schedule, int replicas, const std::string& fw,
                            const std::string& bw, int virtual_stages = 1) {
  const wi::CodecSpecs specs = wi::parse_specs({fw, bw, replicas > 1 ? "q8" : "none"});
  return wi::make_synthetic_trace(md::find_model_shape("bench", "gpt2-xl"), schedule, replicas,
                                  specs, wire_bytes, nm::find_device("bench", "A100"),
                                  virtual_stages);
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
  links.reserve(16);
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

void BM_ReplayStep(benchmark::State& state, const std::string& schedule, int replicas,
                   int virtual_stages = 1) {
  const nm::StepTrace trace = gpt2_xl_trace(schedule, replicas, "q4", "q8", virtual_stages);
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
BENCHMARK_CAPTURE(BM_ReplayStep, gpt2_xl_interleaved_v2, std::string("interleaved"), 1, 2)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ReplayStep, gpt2_xl_zb_h1, std::string("zb-h1"), 1)
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

// `slowpipe timing --model gpt2-xl --replicas N --bandwidth 1Gbps` (without the printout).
void BM_TimingReplicas(benchmark::State& state, bool sharded) {
  wi::WhatIfConfig what;
  what.model = "gpt2-xl";
  what.replicas = static_cast<int>(state.range(0));
  what.bandwidths_bps = {1e9};
  what.grad_sync = sharded ? slowpipe::compressors::GradSync::kMomentum
                           : slowpipe::compressors::GradSync::kAllReduce;
  const nm::NetConfig net;
  for (auto _ : state) {
    const wi::WhatIfResult r = wi::run_what_if(what, net, wire_bytes);
    benchmark::DoNotOptimize(r.rows.front().step_s);
  }
}
BENCHMARK_CAPTURE(BM_TimingReplicas, ring, false)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TimingReplicas, sharded, true)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond);

// One step of N replicas from a full trace: folded, and the full replay.
void BM_ReplayReplicas(benchmark::State& state, bool fold) {
  const nm::StepTrace trace =
      gpt2_xl_trace("gpipe", static_cast<int>(state.range(0)), "none", "none");
  nm::NetConfig config;
  config.preset = "1Gbps";
  nm::Simulator sim(config, fold);
  for (auto _ : state) benchmark::DoNotOptimize(sim.replay(trace).step_s);
}
BENCHMARK_CAPTURE(BM_ReplayReplicas, folded, true)
    ->Arg(10)
    ->Arg(100)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ReplayReplicas, full, false)->Arg(10)->Arg(100)->Unit(benchmark::kMillisecond);

const sb::GeneratedScenario& generated(int flows) {
  static std::map<int, sb::GeneratedScenario> cache;
  auto it = cache.find(flows);
  if (it == cache.end())
    it = cache.emplace(flows, sb::generate_scenario(sb::scale_case(flows))).first;
  return it->second;
}

void BM_NetsimGenerated(benchmark::State& state) {
  const sb::GeneratedScenario& g = generated(static_cast<int>(state.range(0)));
  std::vector<nm::FlowResult> results;
  for (auto _ : state) {
    results = nm::simulate(g.scenario);
    benchmark::DoNotOptimize(results.data());
  }
  std::vector<double> start_s, finish_s;
  for (const auto& r : results) {
    start_s.push_back(r.start_s);
    finish_s.push_back(r.finish_s);
  }
  state.counters["flows"] = static_cast<double>(results.size());
  state.counters["peak_in_flight"] = static_cast<double>(sb::peak_concurrency(start_s, finish_s));
  state.counters["hosts"] = static_cast<double>(g.scenario.hosts.size());
  state.counters["links"] = static_cast<double>(g.scenario.links.size());
}
BENCHMARK(BM_NetsimGenerated)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

// What `slowpipe netsim FILE` does after reading the file: parse the JSON,
// simulate, print the table (to a string).
void BM_NetsimGeneratedJson(benchmark::State& state) {
  const sb::GeneratedScenario& g = generated(static_cast<int>(state.range(0)));
  std::ostringstream json;
  sb::write_scenario_json(g.scenario, json);
  const std::string text = json.str();
  size_t table_bytes = 0;
  for (auto _ : state) {
    std::ostringstream table;
    nm::run_scenario(nm::parse_scenario(text, "generated.json"), table);
    table_bytes = table.str().size();
  }
  state.counters["flows"] = static_cast<double>(g.scenario.flows.size());
  state.counters["json_MB"] = static_cast<double>(text.size()) / 1e6;
  state.counters["table_MB"] = static_cast<double>(table_bytes) / 1e6;
}
BENCHMARK(BM_NetsimGeneratedJson)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

// The reader alone: JSON text -> checked Scenario (netsim_scenario.cpp).
void BM_NetsimReadJson(benchmark::State& state) {
  const sb::GeneratedScenario& g = generated(static_cast<int>(state.range(0)));
  std::ostringstream json;
  sb::write_scenario_json(g.scenario, json);
  const std::string text = json.str();
  for (auto _ : state) {
    const nm::Scenario sc = nm::parse_scenario(text, "generated.json");
    benchmark::DoNotOptimize(sc.flows.data());
  }
  state.counters["json_MB"] = static_cast<double>(text.size()) / 1e6;
}
BENCHMARK(BM_NetsimReadJson)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

double max_relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == b[i]) continue;
    worst = std::max(worst, std::abs(a[i] - b[i]) / std::max(std::abs(a[i]), std::abs(b[i])));
  }
  return worst;
}

template <class Network>
void BM_Flows(benchmark::State& state) {
  const sb::GeneratedScenario& g = generated(static_cast<int>(state.range(0)));
  std::vector<double> finish_s;
  for (auto _ : state) {
    finish_s = sb::drive_flows<Network>(g.flows);
    benchmark::DoNotOptimize(finish_s.data());
  }
  state.counters["flows"] = static_cast<double>(finish_s.size());
  state.counters["peak_in_flight"] =
      static_cast<double>(sb::peak_concurrency(g.flows.start_s, finish_s));
  // Outside the timed loop: how far the legacy results are from the current ones.
  if (!std::is_same_v<Network, nm::FlowNetwork>) {
    state.counters["max_rel_diff"] =
        max_relative_difference(finish_s, sb::drive_flows<nm::FlowNetwork>(g.flows));
  }
}
BENCHMARK_TEMPLATE(BM_Flows, nm::FlowNetwork)
    ->Name("Flows/current")
    ->Arg(10000)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_Flows, sb::LegacyFlowNetwork)
    ->Name("Flows/legacy")
    ->Arg(10000)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
