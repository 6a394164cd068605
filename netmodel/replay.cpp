// Simulator: the replay of one step after another (replay.h). The phases of
// a step live in their own files: the op index (replay_ops.h), the messages
// on the flow network (replay_transport.h), the collectives
// (replay_collective.h) and the event loop over the devices (replay_loop.h);
// this file decides whether the replicas fold (replica_symmetry.h), runs the
// phases in turn and sums up the step.
#include "netmodel/replay.h"

#include <algorithm>
#include <ostream>
#include <string>

#include "common/errors.h"
#include "common/units.h"
#include "netmodel/compute_model.h"
#include "netmodel/internal/replay_loop.h"
#include "netmodel/replica_symmetry.h"

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
  out.bubble_fraction = step > 0 ? 1.0 - total_busy / (step * static_cast<double>(loop.stages()) *
                                                       loop.followed_replicas())
                                 : 0.0;
  const FlowNetwork& network = loop.network();
  const Topology& topology = loop.topology();
  for (uint32_t r = 0; r < network.resource_count(); ++r) {
    if (!loop.folded()) {
      out.links.push_back(
          {network.resource_name(r), network.busy_s(r), network.carried_bits(r) / 8.0});
      continue;
    }
    const int copies = topology.copies(r);  // a pool: each of its links carries its share
    for (int k = 0; k < copies; ++k) {
      out.links.push_back({topology.resource_name(r, 0, k), network.busy_s(r),
                           network.carried_bits(r) / 8.0 / copies});
    }
  }
  if (const InboundWires* wires = loop.wires()) {  // shared-inbound: one wire per host
    for (int h = 0; h < wires->hosts(); ++h) {
      out.links.push_back({"wire->" + std::to_string(h), wires->busy_s(h), wires->bytes(h)});
    }
  }
  out.events = loop.events();
}

// The full timeline of `full` from the compact one of its replica 0 (every
// replica's copy of an op, a device or a resource is replica 0's).
Timeline spread(Timeline compact, const StepTrace& full, const std::vector<int32_t>& op_of,
                const Topology& topology) {
  Timeline out = std::move(compact);
  const int S = full.stages, D = full.replicas;
  out.replicated = false;
  out.ops = full.ops;
  std::vector<OpTiming> timing(full.ops.size());
  for (size_t i = 0; i < full.ops.size(); ++i) timing[i] = out.timing[op_of[i]];
  out.timing = std::move(timing);
  out.device_busy_s.resize(static_cast<size_t>(S) * D);
  out.peak_activations.resize(static_cast<size_t>(S) * D);
  for (size_t d = static_cast<size_t>(S); d < out.device_busy_s.size(); ++d) {
    out.device_busy_s[d] = out.device_busy_s[d % S];
    out.peak_activations[d] = out.peak_activations[d % S];
  }
  // Replica 0's links, in the order summarise lists them: each resource's copies.
  const std::vector<LinkUsage> links = std::move(out.links);
  out.links.clear();
  out.links.reserve(links.size() * static_cast<size_t>(D));
  for (int shift = 0; shift < D; ++shift) {
    size_t i = 0;
    for (uint32_t r = 0; i < links.size(); ++r) {
      for (int k = 0; k < topology.copies(r); ++k, ++i) {
        out.links.push_back({topology.resource_name(r, shift, k), links[i].busy_s, links[i].bytes});
      }
    }
  }
  return out;
}

}  // namespace

Simulator::Simulator(const NetConfig& config, bool fold_replicas)
    : config_(config), compute_(make_compute_model(config.compute)), fold_replicas_(fold_replicas) {
  find_net_preset(config.preset);
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
  if (symmetry_stages_ != S || symmetry_replicas_ != D) {
    symmetry_stages_ = S;
    symmetry_replicas_ = D;
    asymmetry_ = net_asymmetry(config_, S, D);
  }
  // The shared-inbound wires are not folded: its replicas replay in full.
  folded_ = fold_replicas_ && D > 1 && asymmetry_.empty() && !shared_inbound(config_) &&
            (trace.replicated || replicas_alike(trace));
  Timeline out;
  if (trace.replicated && !folded_) {
    const StepTrace full = expand_trace(trace);
    out = run_step(full, full);
  } else if (trace.replicated || !folded_) {
    out = run_step(trace, trace);
  } else {  // alike replicas in a full trace: follow replica 0, then spread its timeline
    std::vector<int32_t> op_of;
    const StepTrace compact = compact_trace(trace, &op_of);
    try {
      Timeline replica0 = run_step(compact, trace);  // (re)makes loop_: before its topology
      out = spread(std::move(replica0), trace, op_of, loop_->topology());
    } catch (const DataError&) {  // name the op by its index in `trace`: the full replay
      folded_ = false;
      out = run_step(trace, trace);
    }
  }
  elapsed_s_ += out.step_s;
  ++steps_;
  return out;
}

Timeline Simulator::run_step(const StepTrace& trace, const StepTrace& observed) {
  const int S = trace.stages, D = trace.replicas;
  const bool fold = folded_ && trace.replicated;
  // The exchange's links to the other replicas pool where they are all alike.
  const Folding folding = !fold                                             ? Folding::kNone
                          : trace.sharded_exchange && config_.links.empty() ? Folding::kPooled
                                                                            : Folding::kReplicas;
  if (!loop_ || loop_->stages() != S || loop_->replicas() != D || loop_->folding() != folding) {
    loop_.reset();
    loop_ = std::make_unique<StepLoop>(config_, S, D, folding);
  }
  const size_t devices = static_cast<size_t>(S) * static_cast<size_t>(loop_->followed_replicas());
  Timeline out;
  out.stages = S;
  out.replicas = D;
  out.schedule = trace.schedule;
  out.replicated = fold;
  out.ops = trace.ops;
  out.timing.assign(trace.ops.size(), OpTiming{});
  out.device_busy_s.assign(devices, 0.0);
  out.peak_activations.assign(devices, 0);
  loop_->prepare(trace, out, *compute_, config_, rng_state_);
  compute_->observe(observed);
  loop_->run();
  summarise(*loop_, out);
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
