// The Protocol NanoGPT meter as a link model (`net.link_model =
// shared-inbound`; docs/netmodel.md, "Two network views"): every host has ONE
// inbound wire that all its incoming pipeline messages share, activations
// from the previous stage and gradients from the next alike. A message holds
// the wire for bits / bandwidth + latency (the latency is charged on the wire,
// serialized, not pipelined), starting when the data is ready at the sender
// (its send posted) and the wire is free. Messages are billed in the order the
// receiving device consumes them, as the meter bills each message when the
// receiving stage retrieves it; compute overlaps the wire. No efficiency
// factor: the meter bills payload bits at the nominal rate.
// Leaves out: fair sharing, outbound limits, collectives (the replay refuses
// all-reduce ops under this model), anything the meter does not bill.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace slowpipe::netmodel {

struct WireBill {
  double start_s = 0;    // first bit on the wire
  double arrival_s = 0;  // start + bits / rate + latency: the wire is free again
};

class InboundWires {
 public:
  // Starts a step: `hosts` idle wires.
  void reset(int hosts);
  // Bills `bits` to `host`'s wire: starts at max(ready_s, the wire's free
  // time), holds it for bits / rate_bps + latency_s.
  WireBill bill(int host, double ready_s, double bits, double rate_bps, double latency_s);
  int hosts() const { return static_cast<int>(free_s_.size()); }
  double busy_s(int host) const { return busy_s_[static_cast<size_t>(host)]; }
  double bytes(int host) const { return bits_[static_cast<size_t>(host)] / 8.0; }

 private:
  std::vector<double> free_s_, busy_s_, bits_;  // [host]
};

}  // namespace slowpipe::netmodel
