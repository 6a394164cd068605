// Simulator: the replay of one step after another (replay.h). The phases of
// a step live in their own files: the op index (replay_ops.h), the messages
// on the flow network (replay_transport.h), the collectives
// (replay_collective.h) and the event loop over the devices (replay_loop.h);
// this file runs them in turn and sums up the step.
#include "netmodel/replay.h"

#include <algorithm>
#include <ostream>
#include <string>

#include "common/errors.h"
#include "common/units.h"
#include "netmodel/compute_model.h"
#include "netmodel/replay_loop.h"

namespace slowpipe::netmodel {
namespace {

// Step time, bubble and link usage of a replayed step.
void summarise(const StepLoop& loop, Timeline& out) {
  double step = 0;
  for (const OpTiming& t : out.timing)
    step = std::max({step, t.end_s, t.encode_end_s, t.decode_end_s});
  out.step_s = step;
  double total_busy = 0;
  for (double b : out.device_busy_s) total_busy += b;
  out.bubble_fraction =
      step > 0 ? 1.0 - total_busy / (step * static_cast<double>(loop.stages()) * loop.replicas())
               : 0.0;
  const FlowNetwork& network = loop.network();
  for (uint32_t r = 0; r < network.resource_count(); ++r) {
    out.links.push_back(
        {network.resource_name(r), network.busy_s(r), network.carried_bits(r) / 8.0});
  }
  out.events = loop.events();
}

}  // namespace

Simulator::Simulator(const NetConfig& config)
    : config_(config), compute_(make_compute_model(config.compute)) {
  find_net_preset(config.preset);
  parse_link_overrides("net.links", config.links);
  rng_state_ = static_cast<uint64_t>(config.seed) * 0x2545F4914F6CDD1Dull + 1;
}

Simulator::~Simulator() = default;

Simulator::Carry Simulator::carry() const {
  return {rng_state_, elapsed_s_, steps_, compute_->save_state()};
}

void Simulator::restore(const Carry& c) {
  compute_->load_state(c.compute_state);
  rng_state_ = c.rng_state;
  elapsed_s_ = c.elapsed_s;
  steps_ = c.steps;
}

std::string Simulator::compute_description() const {
  return compute_->describe_json();
}

Timeline Simulator::replay(const StepTrace& trace) {
  const int S = trace.stages, D = trace.replicas, M = trace.microbatches, C = trace.chunks;
  if (S < 1 || D < 1 || M < 1 || C < 1)
    throw DataError("op trace: stages, chunks, replicas, micro-batches must be >= 1");
  if (static_cast<double>(C) * D * M > 1e8 || static_cast<double>(S) * D > 1e8) {
    throw DataError("op trace: chunks x replicas x micro-batches is implausibly large");
  }
  if (!loop_ || loop_->stages() != S || loop_->replicas() != D) {
    loop_.reset();
    loop_ = std::make_unique<StepLoop>(config_, S, D);
  }
  const size_t devices = static_cast<size_t>(S) * static_cast<size_t>(D);
  Timeline out;
  out.stages = S;
  out.replicas = D;
  out.schedule = trace.schedule;
  out.ops = trace.ops;
  out.timing.assign(trace.ops.size(), OpTiming{});
  out.device_busy_s.assign(devices, 0.0);
  out.peak_activations.assign(devices, 0);
  loop_->prepare(trace, out, *compute_, config_, rng_state_);
  compute_->observe(trace);
  loop_->run();
  summarise(*loop_, out);
  elapsed_s_ += out.step_s;
  ++steps_;
  return out;
}

Timeline replay(const StepTrace& trace, const NetConfig& config) {
  Simulator sim(config);
  return sim.replay(trace);
}

void print_summary(const Timeline& t, std::ostream& os) {
  os << "step time " << format_duration(t.step_s) << ", bubble " << t.bubble_fraction * 100 << "%, "
     << t.stages << " stages x " << t.replicas << " replicas, schedule " << t.schedule << "\n";
  const LinkUsage* busiest = nullptr;
  for (const auto& l : t.links) {
    if (!busiest || l.busy_s > busiest->busy_s) busiest = &l;
  }
  if (busiest && busiest->busy_s > 0) {
    os << "busiest link " << busiest->name << ": busy " << format_duration(busiest->busy_s) << " ("
       << (t.step_s > 0 ? busiest->busy_s / t.step_s * 100 : 0) << "% of the step), "
       << format_bytes(busiest->bytes) << "\n";
  }
}

}  // namespace slowpipe::netmodel
