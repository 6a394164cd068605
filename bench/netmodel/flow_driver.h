// Drives a flow network through a FlowSet the way `netmodel::simulate` does
// (start events, wake-ups stamped with the network's version, delivery after
// the route's latency), for any class with FlowNetwork's interface: the
// current one and the legacy copy run the same events, so their timings and
// results compare directly.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "bench/netmodel/scenario_gen.h"
#include "netmodel/internal/event_engine.h"

namespace slowpipe::bench {

// Returns every flow's delivery time (infinity if it never finishes).
template <class Network>
std::vector<double> drive_flows(const FlowSet& fs) {
  Network net;
  for (double cap : fs.capacity_bps) net.add_resource("r", cap);
  enum : uint32_t { kStart, kWake, kDeliver };
  netmodel::EventEngine engine;
  std::vector<double> finish_s(fs.bits.size(), INFINITY);
  for (size_t i = 0; i < fs.bits.size(); ++i)
    engine.schedule(fs.start_s[i], kStart, static_cast<uint32_t>(i));
  std::vector<uint32_t> flow_of_id, done;
  uint64_t wake_version = ~0ull;
  auto schedule_wake = [&] {
    if (!std::isinf(net.next_finish_s()) && wake_version != net.version()) {
      wake_version = net.version();
      engine.schedule(net.next_finish_s(), kWake, 0, wake_version);
    }
  };
  engine.run([&](const netmodel::Event& ev) {
    if (ev.type == kStart) {
      const auto& p = fs.paths[ev.target];
      const uint32_t id = net.start_flow(engine.now(), p.data(), p.size(), fs.bits[ev.target]);
      if (flow_of_id.size() <= id) flow_of_id.resize(id + 1);
      flow_of_id[id] = ev.target;
      schedule_wake();
    } else if (ev.type == kWake) {
      if (ev.aux != net.version()) return;
      done.clear();
      net.collect_finished(engine.now(), done);
      for (uint32_t id : done) {
        const uint32_t f = flow_of_id[id];
        engine.schedule(engine.now() + fs.latency_s[f], kDeliver, f);
      }
      schedule_wake();
    } else {
      finish_s[ev.target] = engine.now();
    }
  });
  return finish_s;
}

}  // namespace slowpipe::bench
