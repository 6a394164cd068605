// One inbound wire per host, billed per message (replay_inbound.h).
#include "netmodel/internal/replay_inbound.h"

#include <algorithm>

namespace slowpipe::netmodel {

void InboundWires::reset(int hosts) {
  free_s_.assign(static_cast<size_t>(hosts), 0.0);
  busy_s_.assign(static_cast<size_t>(hosts), 0.0);
  bits_.assign(static_cast<size_t>(hosts), 0.0);
}

WireBill InboundWires::bill(int host, double ready_s, double bits, double rate_bps,
                            double latency_s) {
  const auto h = static_cast<size_t>(host);
  WireBill b;
  b.start_s = std::max(ready_s, free_s_[h]);
  const double hold_s = bits / rate_bps + latency_s;
  b.arrival_s = b.start_s + hold_s;
  free_s_[h] = b.arrival_s;
  busy_s_[h] += hold_s;
  bits_[h] += bits;
  return b;
}

}  // namespace slowpipe::netmodel
